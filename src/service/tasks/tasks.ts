// The rules of the task API: who may do what to a task, what a new or changed task must satisfy, and the
// actions (cancel, remove, restart) that the scheduler then carries out. Routes call these; the scheduler does
// the work with the nodes.
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { findNode, allNodes } from '../../db/processingnodes.ts';
import type { Database, ProcessingNode, Project, ProjectPermission, Task } from '../../db/schema.ts';
import { type Flag, flag } from '../../db/schema.ts';
import { PendingAction, TaskStatus } from '../../protocol/status.ts';
import {
  deleteTask,
  findProjectTask,
  findTaskAndProject,
  readableShownTask,
  insertTask,
  requestAction,
  tasksWithNode,
  updateTask,
  visibleTasksOf,
} from '../../db/tasks.ts';
import { makeDue } from '../../db/task-leases.ts';
import type { Principal } from '../auth.ts';
import { fieldError, notAuthenticated, notFound } from '../errors.ts';
import { isOpen, isOpenToEdit, requireProjectPermission } from '../permissions.ts';
import { isOnline } from '../refresher.ts';
import { visibleProjects } from '../../db/projects.ts';
import {
  admit,
  badRequest,
  dropzoneChunk,
  type MultipartLimits,
  receiveMultipart,
  uploadName,
  writeChunk,
} from './intake.ts';
import { photographCount } from '../../protocol/files.ts';
import { taskFolder } from '../layout.ts';
import type { Scene } from './scene.ts';
import { checkDuplicable, copyName, duplicateTask } from './duplicate.ts';
import { type StorageSettings, admitUpload } from './storage.ts';
import { checkOptions, type OptionPair, parseOptions } from './options.ts';
import { type Crop, type TaskFields, type TaskItem, parseBoolean, parseCrop, parseResizeTo, presentTask, rerunStages } from './schema.ts';
import { matchesTask, parseSearch, storedTags } from '../tags.ts';

export const MIN_IMAGES = 2;

/** A new task's fields, checked. */
interface Settled {
  auto: boolean;
  nodeId: number | null;
  options: OptionPair[];
  tags: string;
  resizeTo: number;
  crop: Crop | null;
}
const FINISHED: number[] = [TaskStatus.FAILED, TaskStatus.COMPLETED, TaskStatus.CANCELED];

export interface TaskRulesSettings extends StorageSettings {
  upload: MultipartLimits;
  /** Called when a task has new work, so that the scheduler looks at once rather than at its next tick. */
  wake(): void;
}

export class TaskRules {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: TaskRulesSettings,
  ) {}

  folder(task: Pick<Task, 'project_id' | 'id'>) {
    return taskFolder(this.settings.dataDir, task.project_id, task.id);
  }

  /** The project when the user sees it and holds the permission: a 404 if unseen, a 403 if seen but not held. */
  async project(user: Principal, projectId: number, permission: ProjectPermission): Promise<Project> {
    const project = await visibleProjects(this.db, user).where('projects.id', '=', projectId).executeTakeFirst();
    if (!project) throw notFound();
    // Seeing a project is holding "view": only other permissions need a look at the grants.
    if (permission !== 'view') await requireProjectPermission(this.db, user, project, permission);
    return project;
  }

  /** The task of that project under the same rule; a task of another project is a 404. */
  async task(user: Principal, projectId: number, taskId: number, permission: ProjectPermission): Promise<Task> {
    await this.project(user, projectId, permission);
    const task = await findProjectTask(this.db, projectId, taskId);
    if (!task) throw notFound();
    return task;
  }

  /**
   * A task read under WebODM's public rule: anyone, signed in or not, reads a task that is public or whose project
   * is; otherwise as task(user, ..., 'view'). A task the caller may not read is a 404, whoever asks.
   */
  async readable(user: Principal | null, projectId: number, taskId: number): Promise<{ task: Task; project: Project }> {
    const found = await findTaskAndProject(this.db, projectId, taskId);
    if (found && isOpen(found.task, found.project)) return found;
    if (!user) throw notFound();
    await this.project(user, projectId, 'view');
    if (!found) throw notFound();
    return found;
  }

  /** A task whose 3D scene the caller may save: public with public_edit, or "change" on its project (else a 403). */
  async sceneEditable(user: Principal | null, projectId: number, taskId: number): Promise<Task> {
    const { task, project } = await this.readable(user, projectId, taskId);
    if (isOpenToEdit(task, project)) return task;
    if (!user) throw notAuthenticated();
    await requireProjectPermission(this.db, user, project, 'change');
    return task;
  }

  /** The task as the API shows it, to a caller who may read it (as readable decides), in one query. */
  async item(user: Principal | null, projectId: number, taskId: number): Promise<TaskItem> {
    const row = await readableShownTask(this.db, user, projectId, taskId);
    if (!row) throw notFound();
    return presentTask(row);
  }

  async present(taskId: number): Promise<TaskItem> {
    const row = await tasksWithNode(this.db).where('tasks.id', '=', taskId).executeTakeFirst();
    if (!row) throw notFound();
    return presentTask(row);
  }

  /**
   * A project's tasks (of one status, if given; matching a search: words in the name, #tags among the tags), to a
   * user who sees the project: who sees it may view them.
   */
  async list(user: Principal, projectId: number, status: number | undefined, search?: string): Promise<TaskItem[]> {
    const rows = await visibleTasksOf(this.db, user, projectId, status);
    if (!rows) throw notFound();
    const terms = search === undefined ? undefined : parseSearch(search);
    return (terms ? rows.filter((row) => matchesTask(terms, row)) : rows).map(presentTask);
  }

  /** The node a client named: it must exist; a 400 on the field otherwise. */
  private async namedNode(id: number): Promise<ProcessingNode> {
    const node = await findNode(this.db, id);
    if (!node) throw fieldError('processing_node', `Invalid pk "${id}" - object does not exist.`);
    return node;
  }

  /** The nodes whose options a task's options are checked against. */
  private async candidateNodes(nodeId: number | null): Promise<ProcessingNode[]> {
    if (nodeId !== null) return [await this.namedNode(nodeId)];
    const at = Date.now();
    return (await allNodes(this.db).orderBy('id').execute()).filter((node) => isOnline(node, at));
  }

  /** The settings of a new task from its fields, checked; the node's room is checked once the images are in. */
  private async settle(fields: TaskFields): Promise<Settled> {
    const auto = parseBoolean(fields.auto_processing_node) ?? true;
    const nodeId = fields.processing_node ?? null;
    if (nodeId === null && !auto) {
      throw fieldError('processing_node', 'Choose a processing node, or set auto_processing_node to true.');
    }
    const options = parseOptions(fields.options ?? []);
    checkOptions(options, await this.candidateNodes(nodeId));
    return {
      auto,
      nodeId,
      options,
      tags: storedTags(fields.tags ?? []),
      resizeTo: parseResizeTo(fields.resize_to) ?? -1,
      crop: parseCrop(fields.crop) ?? null,
    };
  }

  /** A fixed node must be online and take that many images. */
  private async checkRoom(nodeId: number | null, images: number): Promise<void> {
    if (nodeId === null) return;
    const node = await this.namedNode(nodeId);
    const name = `${node.hostname}:${node.port}`;
    if (!isOnline(node)) throw fieldError('processing_node', `Processing node ${name} is offline.`);
    if (node.max_images !== null && images > node.max_images) {
      throw fieldError('processing_node', `Processing node ${name} takes at most ${node.max_images} images; this task has ${images}.`);
    }
  }

  private async insert(projectId: number, fields: TaskFields, settled: Settled) {
    return insertTask(this.db, { project_id: projectId, ...this.rowChanges(fields, settled), partial: 1 });
  }

  /** An empty task that waits for upload/ and commit/ (WebODM's chunked flow). */
  async createPartial(projectId: number, fields: TaskFields): Promise<number> {
    return this.insert(projectId, fields, await this.settle(fields));
  }

  /**
   * A task from a multipart request: its files are stored as they arrive, then the whole is checked. Anything
   * wrong removes the task and its files, so a failed create leaves nothing behind.
   */
  async createFromUpload(projectId: number, request: FastifyRequest): Promise<number> {
    const probe = await this.settle({});
    const budget = await admitUpload(this.db, this.settings, projectId);
    const id = await this.insert(projectId, {}, probe);
    const folder = taskFolder(this.settings.dataDir, projectId, id);
    try {
      const { fields } = await receiveMultipart(request, folder.images, this.settings.upload, budget);
      const typed = textFieldsToTaskFields(fields);
      const settled = await this.settle(typed);
      if (parseBoolean(typed.partial)) {
        await updateTask(this.db, id, this.rowChanges(typed, settled));
        return id;
      }
      const images = await this.imageCount(folder.images);
      if (images < MIN_IMAGES) throw badRequest(`Cannot create task, you need at least ${MIN_IMAGES} images.`);
      await this.checkRoom(settled.nodeId, images);
      await updateTask(this.db, id, { ...this.rowChanges(typed, settled), images_count: images, partial: 0 });
      this.settings.wake();
      return id;
    } catch (error) {
      await deleteTask(this.db, id);
      await rm(folder.root, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * A new task's columns from its fields. Photographs to resize wait for the RESIZE action (WebODM's), which the
   * scheduler runs once the task is committed, before the upload to a node.
   */
  private rowChanges(fields: TaskFields, settled: Settled) {
    return {
      name: fields.name ?? '',
      processing_node_id: settled.nodeId,
      auto_processing_node: flag(settled.auto),
      options: JSON.stringify(settled.options),
      ...sharing(fields),
      tags: settled.tags,
      resize_to: settled.resizeTo,
      crop: settled.crop === null ? null : JSON.stringify(settled.crop),
      pending_action: settled.resizeTo > 0 ? PendingAction.RESIZE : null,
    };
  }

  async imageCount(imagesDir: string): Promise<number> {
    try {
      return photographCount(await readdir(imagesDir));
    } catch {
      return 0;
    }
  }

  /** More files for a partial task; Dropzone's chunk fields (dzuuid, dzchunkbyteoffset...) resume big files. */
  async upload(task: Task, request: FastifyRequest): Promise<Record<string, number>> {
    if (task.partial !== 1) throw badRequest('This task is not waiting for files: its upload was committed.');
    const folder = this.folder(task);
    const uploaded: Record<string, number> = {};
    const budget = await admitUpload(this.db, this.settings, task.project_id);
    const { stored } = await receiveMultipart(request, folder.images, this.settings.upload, budget, async (part, dir, fields) => {
      const chunk = dropzoneChunk(fields);
      if (!chunk) return null;
      const name = uploadName(part.filename);
      const partFile = path.join(folder.chunks, chunk.id);
      await writeChunk(part, partFile, chunk.offset, budget);
      if (!chunk.last) return `${name}#chunk`;
      return admit(partFile, dir, name);
    });
    if (stored.length === 0) throw badRequest('No files uploaded.');
    for (const name of stored.filter((entry) => !entry.endsWith('#chunk'))) {
      uploaded[name] = (await stat(path.join(folder.images, name))).size;
    }
    return uploaded;
  }

  /** Ends the upload of a partial task: it needs its images, then it is processed. */
  async commit(task: Task): Promise<void> {
    if (task.partial !== 1) throw badRequest('This task was already committed.');
    const images = await this.imageCount(this.folder(task).images);
    if (images < MIN_IMAGES) throw badRequest(`Cannot commit the task, you need at least ${MIN_IMAGES} images (it has ${images}).`);
    await this.checkRoom(task.processing_node_id, images);
    await updateTask(this.db, task.id, { partial: 0, images_count: images });
    await makeDue(this.db, task.id);
    this.settings.wake();
  }

  async update(task: Task, fields: TaskFields): Promise<void> {
    const nodeId = fields.processing_node === undefined ? task.processing_node_id : fields.processing_node;
    const auto = parseBoolean(fields.auto_processing_node) ?? task.auto_processing_node === 1;
    // Only a change of node is checked: an imported task, which has none and needs none, takes other changes.
    const choosesNode = fields.processing_node !== undefined || fields.auto_processing_node !== undefined;
    if (choosesNode && nodeId === null && !auto) {
      throw fieldError('processing_node', 'Choose a processing node, or set auto_processing_node to true.');
    }
    const nodeChanged = nodeId !== task.processing_node_id;
    if (nodeChanged && task.uuid !== '' && !FINISHED.includes(task.status ?? -1)) {
      throw fieldError('processing_node', 'The node of a task cannot change while the task is processing; cancel it first.');
    }
    let options: string | undefined;
    if (fields.options !== undefined) {
      const parsed = parseOptions(fields.options);
      checkOptions(parsed, await this.candidateNodes(nodeId));
      options = JSON.stringify(parsed);
    }
    const crop = parseCrop(fields.crop);
    await updateTask(this.db, task.id, {
      name: fields.name,
      options,
      tags: fields.tags === undefined ? undefined : storedTags(fields.tags),
      crop: crop === undefined ? undefined : crop && JSON.stringify(crop),
      processing_node_id: nodeId,
      auto_processing_node: flag(auto),
      ...sharing(fields),
      // A task on another node starts over there: the old node's results are not reachable from the new one.
      ...(nodeChanged ? { uuid: '' } : {}),
    });
  }

  /** Saves the task's 3D scene as `change` makes it from the stored one. */
  async saveScene(task: Task, change: (stored: Scene) => Scene): Promise<void> {
    const stored = JSON.parse(task.potree_scene) as unknown;
    const scene = change(stored && typeof stored === 'object' && !Array.isArray(stored) ? (stored as Scene) : {});
    await updateTask(this.db, task.id, { potree_scene: JSON.stringify(scene) });
  }

  async cancel(task: Task): Promise<void> {
    if (task.partial === 1 || FINISHED.includes(task.status ?? -1)) {
      throw badRequest('Only a task that is waiting or processing can be canceled.');
    }
    await requestAction(this.db, task.id, PendingAction.CANCEL);
    this.settings.wake();
  }

  /** A copy of a finished task in its project, named "Copy of ..." as in WebODM. */
  async duplicate(task: Task): Promise<number> {
    checkDuplicable(task);
    await admitUpload(this.db, this.settings, task.project_id);
    return duplicateTask(this.db, this.settings.dataDir, task, { projectId: task.project_id, name: copyName(task.name) });
  }

  /**
   * Removes a finished task's photographs to save space (WebODM's compact): its results stay. The scheduler does
   * it, as WebODM's worker does.
   */
  async compact(task: Task): Promise<void> {
    if (task.partial === 1 || !FINISHED.includes(task.status ?? -1) || task.pending_action !== null) {
      throw badRequest('Only a task that has completed, failed or been canceled can be compacted.');
    }
    await requestAction(this.db, task.id, PendingAction.COMPACT);
    this.settings.wake();
  }

  async remove(task: Task): Promise<void> {
    await requestAction(this.db, task.id, PendingAction.REMOVE, { partial: 0 });
    this.settings.wake();
  }

  /** Restarts a finished task, with new options if given; rerun-from must be a stage the node can restart from. */
  async restart(task: Task, given: unknown): Promise<void> {
    if (task.partial === 1 || !FINISHED.includes(task.status ?? -1) || task.pending_action !== null) {
      throw badRequest('Only a task that has completed, failed or been canceled can be restarted.');
    }
    let options: string | undefined;
    if (given !== undefined) {
      const parsed = parseOptions(given);
      checkOptions(parsed, await this.candidateNodes(task.processing_node_id));
      options = JSON.stringify(parsed);
    }
    const chosen = parseOptions(options ?? task.options);
    const rerun = chosen.find((option) => option.name === 'rerun-from');
    if (task.compacted === 1 && (!rerun || task.uuid === '')) {
      throw badRequest(
        'This task was compacted: its photographs are gone, so it can only restart from a later stage (rerun-from) on the node that processed it.',
      );
    }
    if (rerun && task.processing_node_id !== null) {
      const node = await this.namedNode(task.processing_node_id);
      if (!rerunStages(node.available_options).includes(String(rerun.value))) {
        throw fieldError('options', `rerun-from: "${rerun.value}" is not a stage this task can restart from.`);
      }
    }
    await requestAction(this.db, task.id, PendingAction.RESTART, { options, last_error: null });
    this.settings.wake();
  }
}

/** The public and public_edit flags a client gave (undefined: keep them). */
function sharing(fields: TaskFields): { public?: Flag; public_edit?: Flag } {
  const given = (value: TaskFields['public']) => (value === undefined ? undefined : flag(parseBoolean(value) === true));
  return { public: given(fields.public), public_edit: given(fields.public_edit) };
}

/** Multipart text fields as the task fields' types (options stay JSON text; parseOptions reads it). */
function textFieldsToTaskFields(fields: Record<string, string>): TaskFields {
  const nodeText = fields.processing_node;
  let processing_node: number | null | undefined;
  if (nodeText === undefined) processing_node = undefined;
  else if (nodeText === '' || nodeText === 'null') processing_node = null;
  else if (/^\d{1,10}$/.test(nodeText)) processing_node = Number(nodeText);
  else throw fieldError('processing_node', 'A valid integer is required.');
  if (fields.name !== undefined && fields.name.length > 255) throw fieldError('name', 'Ensure this field has no more than 255 characters.');
  return {
    name: fields.name,
    processing_node,
    auto_processing_node: fields.auto_processing_node,
    options: fields.options,
    partial: fields.partial,
    public: fields.public as TaskFields['public'],
    public_edit: fields.public_edit as TaskFields['public_edit'],
    tags: fields.tags,
    resize_to: fields.resize_to,
    crop: fields.crop,
  };
}
