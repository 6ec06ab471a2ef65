// The node's tasks: submission (one-shot and chunked), the actions clients take on them, recovery after a
// restart of the node and the removal of old tasks. HTTP-free: routes.ts maps requests onto these methods.
import { randomUUID } from 'node:crypto';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConsoleLog } from './console-log.ts';
import { stopLeftoverEngine, type EngineDescription } from '../protocol/engine.ts';
import { parseTaskFields } from './task-fields.ts';
import type { DataLayout } from './layout.ts';
import { TaskStatus, isFinished } from '../protocol/status.ts';
import { taskInfo, type TaskInfo, type TaskRecord } from './model.ts';
import { ignoredOptionsLine, validateOptions, withPostProcessing } from '../protocol/options.ts';
import { TaskProcessor } from './processing.ts';
import { TaskQueue } from './queue.ts';
import type { TaskStore } from './store.ts';
import { GCP_FILE, UploadArea } from './uploads.ts';
import { sendWebhooks } from './webhook.ts';

export interface TaskSettings {
  /** Most images a task may have; null: no limit. */
  maxImages: number | null;
  parallelTasks: number;
  /** Finished tasks and abandoned uploads are removed after this many minutes; 0 keeps them. */
  cleanupAfterMinutes: number;
  /** Called, besides each task's own webhook, when any task ends. */
  webhook: string | null;
  /** zipurl and webhooks may reach loopback and private networks. */
  allowPrivateUrls: boolean;
  /** Space kept free on the data folder's disk. */
  minFreeBytes: number;
  /** An engine run that lasts longer is stopped and its task failed; null: no limit. */
  maxRuntimeMs: number | null;
  maxMemoryBytes: number | null;
}

export interface NodeError {
  error: string;
  noRetry?: boolean;
}

export type ActionResult = { success: true } | { success: false; error: string } | NodeError;

// Versions 1 to 7, as NodeODM accepts in set-uuid; also what keeps a client's uuid safe as a folder name.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-7][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

function notFound(uuid: string): ActionResult {
  return { success: false, error: `${uuid} not found` };
}

export class TaskManager {
  private readonly consoles = new Map<string, ConsoleLog>();
  private readonly commits = new Map<string, Promise<{ uuid: string } | NodeError>>();
  private readonly uploads: UploadArea;
  private readonly queue: TaskQueue;
  private cleanupTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly layout: DataLayout,
    private readonly store: TaskStore,
    private readonly engine: EngineDescription,
    private readonly settings: TaskSettings,
    private readonly log: (message: string) => void,
  ) {
    this.uploads = new UploadArea(layout, { allowPrivate: settings.allowPrivateUrls }, {
      minFreeBytes: settings.minFreeBytes,
      maxImages: settings.maxImages,
      // Images and their companions: room for every image a node takes, and for no flood of tiny entries.
      maxZipEntries: settings.maxImages === null ? 1_000_000 : 4 * settings.maxImages + 1000,
    });
    const processor = new TaskProcessor({
      store,
      layout,
      enginePath: engine.path,
      allowPrivateUrls: settings.allowPrivateUrls,
      consoleOf: (uuid) => this.consoleOf(uuid),
      onEnded: (task) => this.notify(task),
      maxRuntimeMs: settings.maxRuntimeMs,
      maxMemoryBytes: settings.maxMemoryBytes,
    });
    this.queue = new TaskQueue(store, settings.parallelTasks, (uuid, signal) => processor.run(uuid, signal));
  }

  private warnIgnored(uuid: string, names: string[] | undefined): void {
    if (names && names.length > 0) this.consoleOf(uuid).append(ignoredOptionsLine('This processing node', names));
  }

  private consoleOf(uuid: string): ConsoleLog {
    let log = this.consoles.get(uuid);
    if (!log) {
      log = new ConsoleLog(this.layout.consoleFile(uuid));
      this.consoles.set(uuid, log);
    }
    return log;
  }

  /** Brings the node back to where it was: drops what a crash left half-made, stops engines a dead node left
   * running and queues their tasks again (first in line), then starts the queue and the cleanup. */
  async open(): Promise<void> {
    await this.sweep();
    for (const task of this.store.listTasks().filter((t) => t.status === TaskStatus.RUNNING)) {
      if (task.enginePid !== null) await stopLeftoverEngine(task.enginePid, this.layout.taskDir(task.uuid));
      this.consoleOf(task.uuid).append('[INFO] The processing node restarted: resuming the task');
      this.store.updateTask(task.uuid, { status: TaskStatus.QUEUED, enginePid: null });
    }
    this.queue.pump();
    this.scheduleCleanup();
  }

  /** Removes task and upload folders that no record owns: the remains of a removal, or of a submission, that a
   * crash interrupted. */
  private async sweep(): Promise<void> {
    const tasks = new Set(this.store.listTasks().map((t) => t.uuid));
    const uploads = new Set(this.store.listUploads().map((u) => u.uuid));
    const clear = async (dir: string, keep: Set<string>): Promise<void> => {
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names.filter((n) => !keep.has(n))) await rm(path.join(dir, name), { recursive: true, force: true });
    };
    await clear(this.layout.tasksDir, tasks);
    await clear(this.layout.uploadsDir, uploads);
  }

  private scheduleCleanup(): void {
    const ageMs = this.settings.cleanupAfterMinutes * 60_000;
    if (ageMs <= 0) return;
    const everyMs = Math.min(60_000, Math.max(1_000, ageMs / 4));
    this.cleanupTimer = setInterval(() => void this.cleanup(Date.now() - ageMs), everyMs);
    this.cleanupTimer.unref();
  }

  private async cleanup(before: number): Promise<void> {
    for (const task of this.store.listTasks()) {
      if (isFinished(task.status) && task.finishedAt !== null && task.finishedAt < before) await this.remove(task.uuid);
    }
    for (const upload of this.store.listUploads()) {
      if (upload.createdAt < before && !this.commits.has(upload.uuid)) {
        this.store.deleteUpload(upload.uuid);
        await this.uploads.discard(upload.uuid);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.cleanupTimer);
    await this.queue.close();
  }

  private notify(task: TaskRecord): void {
    const urls = [task.webhook, this.settings.webhook].filter((u): u is string => !!u);
    if (urls.length === 0) return;
    void readFile(path.join(this.layout.taskDir(task.uuid), 'images.json'), 'utf8')
      .then((text) => JSON.parse(text) as unknown)
      .catch(() => undefined)
      .then((images) => sendWebhooks(urls, { ...taskInfo(task, Date.now()), images }, { allowPrivate: this.settings.allowPrivateUrls }, this.log));
  }

  // ---- reading

  info(uuid: string, withOutput?: unknown): TaskInfo | undefined {
    const task = this.store.getTask(uuid);
    if (!task) return undefined;
    const info = taskInfo(task, Date.now());
    if (withOutput !== undefined) info.output = this.consoleOf(uuid).read(withOutput);
    return info;
  }

  output(uuid: string, line: unknown): string[] | undefined {
    return this.store.getTask(uuid) ? this.consoleOf(uuid).read(line) : undefined;
  }

  list(): { uuid: string }[] {
    return this.store.listTasks().map((t) => ({ uuid: t.uuid }));
  }

  pendingCount(): number {
    return this.store.countPending();
  }

  /** The folder that holds the task's all.zip, when the task exists. */
  taskDir(uuid: string): string | undefined {
    return this.store.getTask(uuid) ? this.layout.taskDir(uuid) : undefined;
  }

  // ---- submission

  /** Takes the uuid a client asked for (header set-uuid) or a new one, and creates its upload folder. */
  async claimUuid(requested: string | undefined): Promise<{ uuid: string } | NodeError> {
    const uuid = requested || randomUUID();
    const invalid = { error: `Invalid set-uuid: ${requested}` };
    if (!UUID.test(uuid) || this.store.getTask(uuid) || this.store.getUpload(uuid)) return invalid;
    try {
      await this.uploads.create(uuid);
    } catch {
      return invalid;
    }
    return { uuid };
  }

  /** Checks the fields of a submission and records the upload (chunked: until its commit). */
  register(uuid: string, raw: Record<string, unknown>): NodeError | null {
    const parsed = parseTaskFields(raw, this.engine.options, Date.now());
    if (!parsed.ok) return { error: parsed.error };
    this.store.addUpload({ uuid, fields: parsed.fields, createdAt: Date.now() });
    return null;
  }

  hasUpload(uuid: string): boolean {
    return this.store.getUpload(uuid) !== undefined;
  }

  receive(uuid: string, fileName: string, content: NodeJS.ReadableStream): Promise<void> {
    return this.uploads.receive(uuid, fileName, content);
  }

  download(uuid: string, url: string): Promise<void> {
    return this.uploads.download(uuid, url);
  }

  async discard(uuid: string): Promise<void> {
    this.store.deleteUpload(uuid);
    await this.uploads.discard(uuid);
  }

  /** Turns an upload into a queued task. Idempotent: a client that retries a commit whose answer it lost gets the
   * same uuid back, and two commits of one upload share one result. */
  commit(uuid: string): Promise<{ uuid: string } | NodeError> {
    if (this.store.getTask(uuid)) return Promise.resolve({ uuid });
    let pending = this.commits.get(uuid);
    if (!pending) {
      pending = this.assemble(uuid).finally(() => this.commits.delete(uuid));
      this.commits.set(uuid, pending);
    }
    return pending;
  }

  private async assemble(uuid: string): Promise<{ uuid: string } | NodeError> {
    const upload = this.store.getUpload(uuid);
    if (!upload) return { error: 'Invalid uuid (not found)' };
    const refuse = async (error: string): Promise<NodeError> => {
      await this.discard(uuid);
      return { error };
    };
    let assembled;
    try {
      assembled = await this.uploads.assemble(uuid);
    } catch (err) {
      return refuse((err as Error).message);
    }
    const { maxImages } = this.settings;
    if (maxImages !== null && assembled.imagesCount > maxImages) {
      return refuse(`${assembled.imagesCount} images uploaded, but this node can only process up to ${maxImages}.`);
    }
    await this.uploads.install(assembled, this.layout.taskDir(uuid));
    const now = Date.now();
    this.store.commitUpload({
      ...upload.fields,
      uuid,
      status: TaskStatus.QUEUED,
      errorMessage: null,
      imagesCount: assembled.imagesCount,
      progress: 0,
      queuedAt: now,
      startedAt: null,
      finishedAt: null,
      enginePid: null,
      engineStarted: false,
    });
    await this.uploads.discard(uuid);
    this.warnIgnored(uuid, upload.fields.ignoredOptions);
    this.queue.pump();
    return { uuid };
  }

  // ---- actions

  async cancel(uuid: string): Promise<ActionResult> {
    const task = this.store.getTask(uuid);
    if (!task) return notFound(uuid);
    if (task.status === TaskStatus.CANCELED) return { success: true };
    const canceled = this.store.updateTask(uuid, {
      status: TaskStatus.CANCELED,
      finishedAt: task.finishedAt ?? Date.now(),
    })!;
    await this.queue.stop(uuid, 'cancel');
    if (!isFinished(task.status)) {
      this.consoleOf(uuid).append('[INFO] Task canceled');
      this.notify(canceled);
    }
    return { success: true };
  }

  async remove(uuid: string): Promise<ActionResult> {
    if (!this.store.getTask(uuid)) return notFound(uuid);
    // The record goes first: a crash from here on leaves only a folder, which the next start sweeps away.
    this.store.deleteTask(uuid);
    await this.queue.stop(uuid, 'remove');
    this.consoles.delete(uuid);
    await rm(this.layout.taskDir(uuid), { recursive: true, force: true });
    return { success: true };
  }

  /** Queues a finished task again, with new options when given. The task folder stays, so the engine resumes
   * from what it already has (or from `rerun-from`). */
  /**
   * Replaces a finished task's ground control points (an Aeromap extension of NodeODM's API, which has no way to
   * change a task's files): a restart from the structure-from-motion stage then solves with them.
   */
  async replaceGcp(uuid: string, text: unknown): Promise<ActionResult> {
    const task = this.store.getTask(uuid);
    if (!task) return notFound(uuid);
    if (!isFinished(task.status)) return { success: false, error: 'Task is still processing: cancel it first' };
    if (typeof text !== 'string' || text.trim() === '') return { success: false, error: 'gcp param missing.' };
    const file = path.join(this.layout.taskDir(uuid), GCP_FILE);
    await writeFile(`${file}.part`, text);
    await rename(`${file}.part`, file);
    return { success: true };
  }

  async restart(uuid: string, options: unknown): Promise<ActionResult> {
    const task = this.store.getTask(uuid);
    if (!task) return notFound(uuid);
    if (!isFinished(task.status)) return { success: false, error: 'Task cannot be restarted' };
    // A canceled run may still be ending; its last lines must not land in the new console.
    await this.queue.stop(uuid, 'cancel');
    let newOptions = task.options;
    let ignoredOptions = task.ignoredOptions;
    if (options !== undefined && options !== '') {
      const checked = validateOptions(this.engine.options, options);
      if (!checked.ok) return { error: checked.error };
      newOptions = withPostProcessing(this.engine.options, checked.options, task.skipPostProcessing);
      ignoredOptions = checked.ignored;
    }
    this.consoleOf(uuid).clear();
    this.warnIgnored(uuid, ignoredOptions);
    await rm(this.layout.archive(uuid), { force: true });
    const now = Date.now();
    this.store.updateTask(uuid, {
      status: TaskStatus.QUEUED,
      options: newOptions,
      ignoredOptions,
      errorMessage: null,
      progress: 0,
      dateCreated: now,
      queuedAt: now,
      startedAt: null,
      finishedAt: null,
      engineStarted: false,
    });
    this.queue.pump();
    return { success: true };
  }
}
