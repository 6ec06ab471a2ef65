// The task routes of the spec under /api/projects/{project_id}/tasks/: thin handlers over TaskRules (rules and
// actions) and the downloads; the photographs and the 3D scene are in view-routes.ts, the imports in import-routes.ts. Multipart bodies (images, zips) are
// streamed to disk. The reads WebODM opens to anyone on a public task are ANONYMOUS routes that TaskRules.readable
// guards.
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import yazl from 'yazl';
import type { Database, Task } from '../../db/schema.ts';
import { ANONYMOUS, OPTIONAL_SECURITY, currentUser, optionalUser } from '../auth.ts';
import { HttpError, notFound } from '../errors.ts';
import { INT32, Success, ref } from '../schemas.ts';
import { resultHeaders } from '../security-headers.ts';
import type { App } from '../typed-app.ts';
import { ASSETS } from '../../protocol/files.ts';
import { downloadName, filesUnder, resolveAssetPath } from './assets.ts';
import { readConsole } from './console.ts';
import { TASK_ERRORS, TASK_STORING_ERRORS, TASK_TAGS, type TaskIds, readableTask, sendFile } from './replies.ts';
import { taskViewRoutes } from './view-routes.ts';
import { type BackupEntry, backupEntries } from './backup.ts';
import type { ImportSettings } from './import.ts';
import { importRoutes } from './import-routes.ts';
import { OutputQuery, ProjectParams, TaskFieldsBody, type TaskFields, TaskParams, TaskSchema } from './schema.ts';
import type { TaskRules } from './tasks.ts';
import { tileRoutes } from '../tiles/routes.ts';
import type { TileService } from '../tiles/service.ts';

const tags = TASK_TAGS;
const errors = TASK_ERRORS;
const storingErrors = TASK_STORING_ERRORS;
const Item = ref(TaskSchema);
const fieldsBody = { schema: TaskFieldsBody };

/** Bodies of create and update: JSON or a form (multipart is read by the handler, as a stream). */
const taskBody = {
  content: { 'application/json': fieldsBody, 'application/x-www-form-urlencoded': fieldsBody },
};


export interface TaskRouteDeps {
  db: Kysely<Database>;
  rules: TaskRules;
  imports: ImportSettings;
  uploadLimits: { fileBytes: number };
  tiles: TileService;
}

/** Files as a zip built while it is sent, stored (the outputs are compressed already), with its length. */
async function sendZip(reply: FastifyReply, entries: BackupEntry[], filename: string) {
  const zip = new yazl.ZipFile();
  for (const entry of entries) {
    if ('file' in entry) zip.addFile(entry.file, entry.name, { compress: false });
    else zip.addBuffer(entry.data, entry.name, { compress: false });
  }
  // yazl passes the total size to this callback (its type declaration omits the argument).
  const size = await new Promise<number>((resolve) =>
    zip.end({ forceZip64Format: false, comment: '' }, resolve as unknown as () => void),
  );
  if (size >= 0) reply.header('content-length', size);
  return resultHeaders(reply.header('content-type', 'application/zip'), filename, false).send(zip.outputStream);
}

async function sendFolderZip(reply: FastifyReply, folder: string, filename: string, exclude?: RegExp) {
  const files = (await filesUnder(folder)).filter((file) => !exclude?.test(file.relative));
  return sendZip(reply, files.map((file) => ({ name: file.relative, file: `${folder}/${file.relative}` })), filename);
}

export async function taskRoutes(app: App, deps: TaskRouteDeps): Promise<void> {
  const { rules } = deps;

  /** One of the task's assets under its WebODM name, if the task has it. */
  const sendAsset = async (request: FastifyRequest, reply: FastifyReply, task: Task, asset: string, inline: boolean) => {
    const source = ASSETS[asset];
    const available = JSON.parse(task.available_assets) as string[];
    if (!source || !available.includes(asset)) throw notFound('Asset does not exist');
    const assetsDir = rules.folder(task).assets;
    const filename = downloadName(task.name, asset);
    if ('folder' in source) return sendFolderZip(reply, `${assetsDir}/${source.folder}`.replace(/\/\.$/, ''), filename, source.exclude);
    const file = await resolveAssetPath(assetsDir, source.file);
    if (!file) throw notFound('Asset does not exist');
    return sendFile(request, reply, file, filename, inline);
  };

  await app.register(multipart, { limits: { fileSize: deps.uploadLimits.fileBytes } });
  // A zip body is left unread here: the import streams it from the raw request to disk.
  app.addContentTypeParser('application/zip', (_request, _payload, done) => done(null, undefined));

  const base = '/api/projects/:project_id/tasks';
  const taskOf = (request: FastifyRequest, permission: 'view' | 'change' | 'delete') => {
    const { project_id: projectId, task_id: taskId } = request.params as TaskIds;
    return rules.task(currentUser(request), projectId, taskId, permission);
  };
  const readableOf = (request: FastifyRequest) => readableTask(rules, request);

  app.get(
    `${base}/`,
    {
      schema: {
        tags,
        summary: "List a project's tasks",
        params: ProjectParams,
        querystring: Type.Object({
          status: Type.Optional(Type.Integer(INT32)),
          search: Type.Optional(
            Type.String({ maxLength: 1000, description: 'Words in the task name; #tag (or :tag) a tag of the task' }),
          ),
        }),
        response: { 200: Type.Array(Item), ...errors },
      },
    },
    async (request) => rules.list(currentUser(request), request.params.project_id, request.query.status, request.query.search),
  );

  app.post(
    `${base}/`,
    {
      schema: {
        tags,
        summary: 'Create a task',
        description:
          'multipart/form-data: the images (field `images` or `images[]`, at least 2; GCP and geo.txt files beside them) with ' +
          'the text fields name, processing_node, auto_processing_node, options (JSON text). Or JSON/form with partial=true ' +
          'for an empty task that upload/ and commit/ fill. Needs "change" on the project.',
        params: ProjectParams,
        body: taskBody,
        response: { 201: Item, ...storingErrors },
      },
    },
    async (request, reply) => {
      const { project_id: projectId } = request.params;
      await rules.project(currentUser(request), projectId, 'change');
      let id: number;
      if (request.isMultipart()) id = await rules.createFromUpload(projectId, request);
      else {
        const fields = (request.body ?? {}) as TaskFields;
        if (!['true', 'True', '1', true].includes(fields.partial as never)) {
          throw new HttpError(400, { detail: 'Cannot create task, you need at least 2 images (send them as multipart/form-data, or create with partial=true and upload them).' });
        }
        id = await rules.createPartial(projectId, fields);
      }
      return reply.code(201).send(await rules.present(id));
    },
  );

  app.get(
    `${base}/:task_id/`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: 'Get a task',
        description: 'Anyone reads a public task (or a task of a public project); other tasks need "view".',
        params: TaskParams,
        response: { 200: Item, ...errors },
      },
    },
    async (request) => {
      const { project_id: projectId, task_id: taskId } = request.params;
      return rules.item(optionalUser(request), projectId, taskId);
    },
  );

  const update = async (request: FastifyRequest) => {
    const task = await taskOf(request, 'change');
    await rules.update(task, (request.body ?? {}) as TaskFields);
    return rules.present(task.id);
  };
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: `${base}/:task_id/`,
      schema: {
        tags,
        summary: 'Change a task',
        description: 'name, processing_node, auto_processing_node, options, public, public_edit. Needs "change".',
        params: TaskParams,
        body: taskBody,
        response: { 200: Item, ...errors },
      },
      handler: update,
    });
  }

  app.post(
    `${base}/:task_id/upload/`,
    {
      schema: {
        tags,
        summary: 'Add files to a partial task',
        description: 'multipart/form-data; Dropzone chunk fields (dzuuid, dzchunkindex, dztotalchunkcount, dzchunkbyteoffset) resume big files.',
        params: TaskParams,
        response: { 200: Type.Object({ success: Type.Boolean(), uploaded: Type.Record(Type.String(), Type.Integer()) }), ...storingErrors },
      },
    },
    async (request) => {
      const task = await taskOf(request, 'change');
      if (!request.isMultipart()) throw new HttpError(400, { detail: 'Send the files as multipart/form-data.' });
      return { success: true, uploaded: await rules.upload(task, request) };
    },
  );

  app.post(
    `${base}/:task_id/commit/`,
    { schema: { tags, summary: 'End the upload of a partial task', params: TaskParams, response: { 200: Item, ...errors } } },
    async (request) => {
      const task = await taskOf(request, 'change');
      await rules.commit(task);
      return rules.present(task.id);
    },
  );

  const action = (name: string, permission: 'change' | 'delete', run: (task: Task, request: FastifyRequest) => Promise<void>, description: string) =>
    app.post(
      `${base}/:task_id/${name}/`,
      { schema: { tags, summary: `${name[0].toUpperCase()}${name.slice(1)} a task`, description, params: TaskParams, response: { 200: Success, ...errors } } },
      async (request) => {
        await run(await taskOf(request, permission), request);
        return { success: true };
      },
    );
  action(
    'compact',
    'delete',
    (task) => rules.compact(task),
    'Removes the photographs of a finished task to save space; its results (every download) stay, and it can no longer be processed again from the start. Needs "delete".',
  );
  action('cancel', 'change', (task) => rules.cancel(task), 'Stops processing; the task ends CANCELED. Needs "change".');
  action('remove', 'delete', (task) => rules.remove(task), "Removes the task, the node's copy and all its files. Needs \"delete\".");
  action(
    'restart',
    'change',
    (task, request) => rules.restart(task, (request.body as { options?: unknown } | undefined)?.options),
    'Processes a finished task again, with new options if the body has them (rerun-from among can_rerun_from). Needs "change".',
  );

  app.post(
    `${base}/:task_id/duplicate/`,
    {
      schema: {
        tags,
        summary: 'Duplicate a task',
        description:
          'A copy of a finished task in the same project, named "Copy of ...", with its photographs and results. Needs "change".',
        params: TaskParams,
        response: { 200: Type.Object({ success: Type.Boolean(), task: Item }), ...storingErrors },
      },
    },
    async (request) => {
      const copy = await rules.duplicate(await taskOf(request, 'change'));
      return { success: true, task: await rules.present(copy) };
    },
  );

  app.get(
    `${base}/:task_id/backup`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: "A task's backup",
        description:
          'A zip, in WebODM\'s layout: the photographs, the results under assets/, the console (data/console_output.txt) and the ' +
          "task's fields (data/backup.json). tasks/import restores it.",
        params: TaskParams,
        response: { 404: Type.Ref('Error'), 403: Type.Ref('Error') },
      },
    },
    async (request, reply) => {
      const task = await readableOf(request);
      const entries = await backupEntries(task, rules.folder(task));
      return sendZip(reply, entries, downloadName(task.name, 'backup.zip'));
    },
  );

  app.get(
    `${base}/:task_id/output/`,
    {
      schema: {
        tags,
        summary: "A task's console output",
        description: 'The lines from `line` on, as one JSON string ("" before processing starts), as WebODM answers.',
        params: TaskParams,
        querystring: OutputQuery,
        response: { 200: Type.String(), ...errors },
      },
    },
    async (request, reply) => {
      const task = await taskOf(request, 'view');
      // A string payload would go out as text/plain; WebODM's clients parse the answer as JSON.
      const text = await readConsole(rules.folder(task).console, request.query.line ?? 0);
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(text));
    },
  );

  app.get(
    `${base}/:task_id/download/:asset`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: 'Download an asset',
        description: `One of: ${Object.keys(ASSETS).join(', ')}. Files take Range requests.`,
        params: Type.Object({ ...TaskParams.properties, asset: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({ inline: Type.Optional(Type.String()) }),
        response: { 404: Type.Ref('Error'), 403: Type.Ref('Error') },
      },
    },
    async (request, reply) => sendAsset(request, reply, await readableOf(request), request.params.asset, Boolean(request.query.inline)),
  );

  app.get(
    `${base}/:task_id/textured_model/`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: 'The textured model as glTF binary',
        description: "Where WebODM's 3D view reads the model; `platform` (WebODM's size class) is accepted, and the model is served whole.",
        params: TaskParams,
        querystring: Type.Object({ platform: Type.Optional(Type.String({ maxLength: 16 })) }),
        response: { 404: Type.Ref('Error'), 403: Type.Ref('Error') },
      },
    },
    async (request, reply) => sendAsset(request, reply, await readableOf(request), 'textured_model.glb', false),
  );

  app.get(
    `${base}/:task_id/assets/*`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: "A file of the task's assets folder",
        description: 'Any file under the assets folder by its path (no folders, nothing outside it).',
        params: Type.Object({ ...TaskParams.properties, '*': Type.String() }),
        response: { 404: Type.Ref('Error'), 403: Type.Ref('Error') },
      },
    },
    async (request, reply) => {
      const task = await readableOf(request);
      const relative = request.params['*'];
      const file = await resolveAssetPath(rules.folder(task).assets, relative);
      if (!file) throw notFound();
      return sendFile(request, reply, file, relative.split('/').at(-1) ?? 'file', true);
    },
  );

  await taskViewRoutes(app, rules);
  await tileRoutes(app, rules, deps.tiles);

  await importRoutes(app, rules, deps.db, deps.imports);
}
