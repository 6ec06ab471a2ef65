// The imports under /api/projects/{project_id}/tasks/import: an all.zip or a task's backup (import.ts), and products
// made elsewhere in three calls (external.ts). Each creates a task of the project; all need change on it.
import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { currentUser } from '../auth.ts';
import { HttpError } from '../errors.ts';
import { ref } from '../schemas.ts';
import type { App } from '../typed-app.ts';
import { commitExternal, initExternal, multipartFields, uploadExternal } from './external.ts';
import { type ImportSettings, importFromUrl, importMultipart, importZipBody } from './import.ts';
import { TASK_ERRORS, TASK_STORING_ERRORS, TASK_TAGS } from './replies.ts';
import { ProjectParams, TaskSchema } from './schema.ts';
import type { TaskRules } from './tasks.ts';

const tags = TASK_TAGS;
const errors = TASK_ERRORS;
const storingErrors = TASK_STORING_ERRORS;
const Item = ref(TaskSchema);

const ImportBody = Type.Object({
  url: Type.Optional(Type.String({ maxLength: 4096 })),
  name: Type.Optional(Type.String({ maxLength: 255 })),
});

const ExternalCommitBody = Type.Object({
  uuid: Type.Optional(Type.String({ maxLength: 64 })),
  name: Type.Optional(Type.String({ maxLength: 255 })),
});

export async function importRoutes(app: App, rules: TaskRules, db: Kysely<Database>, imports: ImportSettings): Promise<void> {
  const base = '/api/projects/:project_id/tasks';

  app.post(
    `${base}/import`,
    {
      schema: {
        tags,
        summary: 'Import the results of a task processed elsewhere',
        description:
          'An all.zip of Aeromap, ODM or WebODM: as an application/zip body, as one multipart file (Dropzone chunks too), ' +
          'or by url (form or JSON). Optional name. The task ends COMPLETED with the assets found, or FAILED with the reason.',
        params: ProjectParams,
        querystring: Type.Object({ name: Type.Optional(Type.String({ maxLength: 255 })) }),
        body: { content: { 'application/json': { schema: ImportBody }, 'application/x-www-form-urlencoded': { schema: ImportBody } } },
        response: { 201: Item, 200: Type.Object({ uploaded: Type.Boolean() }), ...storingErrors },
      },
    },
    async (request, reply) => {
      const { project_id: projectId } = request.params;
      await rules.project(currentUser(request), projectId, 'change');
      let id: number | null;
      if (request.isMultipart()) id = await importMultipart(db, imports, projectId, request);
      else if (request.headers['content-type']?.startsWith('application/zip')) {
        id = await importZipBody(db, imports, projectId, request.raw, request.query.name);
      } else {
        const body = (request.body ?? {}) as { url?: string; name?: string };
        if (!body.url) throw new HttpError(400, { detail: 'Send a zip file (application/zip or multipart) or a url to import.' });
        id = await importFromUrl(db, imports, projectId, body.url, body.name ?? request.query.name);
      }
      if (id === null) return reply.code(200).send({ uploaded: true });
      return reply.code(201).send(await rules.present(id));
    },
  );

  app.post(
    `${base}/import/external/init`,
    {
      schema: {
        tags,
        summary: 'Begin importing products made elsewhere',
        description: 'Answers the upload id that tasks/import/external/upload and commit take.',
        params: ProjectParams,
        response: { 200: Type.Object({ uuid: Type.String() }), ...errors },
      },
    },
    async (request) => {
      const { project_id: projectId } = request.params;
      await rules.project(currentUser(request), projectId, 'change');
      return { uuid: await initExternal(imports, projectId) };
    },
  );

  app.post(
    `${base}/import/external/upload`,
    {
      schema: {
        tags,
        summary: 'Upload one product made elsewhere',
        description:
          'Multipart: the field uuid first, then one file whose field names the product: orthophoto, dsm, dtm (GeoTIFF), ' +
          'pointcloud (LAS/LAZ) or texturedmodel (GLB). Dropzone chunks too; done is false until the last.',
        params: ProjectParams,
        response: { 200: Type.Object({ uploaded: Type.Boolean(), done: Type.Boolean(), asset: Type.String() }), ...storingErrors },
      },
    },
    async (request) => {
      const { project_id: projectId } = request.params;
      await rules.project(currentUser(request), projectId, 'change');
      if (!request.isMultipart()) throw new HttpError(400, { detail: 'Send the product as multipart/form-data.' });
      return { uploaded: true, ...(await uploadExternal(db, imports, projectId, request)) };
    },
  );

  app.post(
    `${base}/import/external/commit`,
    {
      schema: {
        tags,
        summary: 'Import the uploaded products as a new task',
        description:
          'The products are checked (a CRS on every raster, at most two bands in an elevation model, LAS and glTF files ' +
          'what they say): 400 with what is wrong. The task ends COMPLETED with tiles, COPC and extent, or FAILED.',
        params: ProjectParams,
        body: { content: { 'application/json': { schema: ExternalCommitBody }, 'application/x-www-form-urlencoded': { schema: ExternalCommitBody } } },
        response: { 201: Item, ...errors },
      },
    },
    async (request, reply) => {
      const { project_id: projectId } = request.params;
      await rules.project(currentUser(request), projectId, 'change');
      const body = request.isMultipart() ? await multipartFields(request) : ((request.body ?? {}) as { uuid?: string; name?: string });
      const id = await commitExternal(db, imports, projectId, body.uuid, body.name);
      return reply.code(201).send(await rules.present(id));
    },
  );
}
