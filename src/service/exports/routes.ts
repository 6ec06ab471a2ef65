// WebODM's export routes: POST .../{orthophoto|dsm|dtm|georeferenced_model}/export (read as the task's downloads:
// "view", or anyone on a public task) answers the asset's download URL when nothing needs doing, else the id of a job to poll with
// GET /api/workers/check/{id} and fetch with GET /api/workers/get/{id}.
import { Type } from '@sinclair/typebox';
import { ANONYMOUS, OPTIONAL_SECURITY, type TokenService, optionalUser } from '../auth.ts';
import { notFound } from '../errors.ts';
import type { App } from '../typed-app.ts';
import { resolveAssetPath } from '../tasks/assets.ts';
import { sendFile } from '../tasks/replies.ts';
import { ASSETS } from '../../protocol/files.ts';
import { TaskParams } from '../tasks/schema.ts';
import type { TaskRules } from '../tasks/tasks.ts';
import type { TileService } from '../tiles/service.ts';
import type { ExportJobs } from './jobs.ts';
import { EXPORT_LAYERS, ExportBody, type ExportLayer, engineArguments, exportExtension, exportFilename, exportPlan, needsNoWork } from './request.ts';

const Layer = Type.Union(Object.keys(EXPORT_LAYERS).map((layer) => Type.Literal(layer)));
const Started = Type.Union([
  Type.Object({ celery_task_id: Type.String({ description: 'Poll it with /api/workers/check/{id}' }), filename: Type.String() }),
  Type.Object({ url: Type.String({ description: "The asset's download: nothing needed doing" }), filename: Type.String() }),
]);
const JobParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const JobState = Type.Object({ ready: Type.Boolean(), error: Type.Optional(Type.String()) });

export interface ExportRouteDeps {
  rules: TaskRules;
  tiles: TileService;
  jobs: ExportJobs;
}

export async function exportRoutes(app: App, { rules, tiles, jobs }: ExportRouteDeps): Promise<void> {
  const body = { schema: ExportBody };
  app.post(
    '/api/projects/:project_id/tasks/:task_id/:layer/export',
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags: ['tasks'],
        summary: 'Export a layer in another format or CRS',
        description:
          'Rasters as GeoTIFF (gtiff), coloured GeoTIFF (gtiff-rgb), JPEG, PNG or KMZ; the point cloud as LAZ, LAS, PLY or CSV; in the task\'s CRS, an EPSG code or a PROJ string. Answers the asset\'s download URL where nothing needs doing, else a job id for /api/workers/check/{id}.',
        params: Type.Object({ ...TaskParams.properties, layer: Layer }),
        body: { content: { 'application/json': body, 'application/x-www-form-urlencoded': body } },
        response: { 200: Started, 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request) => {
      const { project_id: projectId, task_id: taskId } = request.params;
      const layer = request.params.layer as ExportLayer;
      const { task } = await rules.readable(optionalUser(request), projectId, taskId);
      const { asset, product } = EXPORT_LAYERS[layer];
      const plan = exportPlan(layer, request.body ?? {});
      const source = ASSETS[asset];
      const available = JSON.parse(task.available_assets) as string[];
      const file = available.includes(asset) && 'file' in source ? await resolveAssetPath(rules.folder(task).assets, source.file) : null;
      if (!file) throw notFound();
      const filename = exportFilename(task.name, plan);
      const own = await tiles.checkExport({ source: file, product, epsg: plan.epsg, proj: plan.proj, color_map: plan.colorMap, formula: plan.formula, bands: plan.bands });
      if (needsNoWork(plan, own.epsg)) return { url: `/api/projects/${task.project_id}/tasks/${task.id}/download/${asset}`, filename };
      const id = await jobs.start((output) => engineArguments(plan, file, output), filename, exportExtension(plan));
      return { celery_task_id: id, filename };
    },
  );
}

/**
 * The job routes, open to anyone as WebODM's (AllowAny: the job's id is what gives access); credentials that are
 * sent are still checked, so a bad token is a 403 as everywhere.
 */
export async function workerRoutes(app: App, { tokens, jobs }: { tokens: TokenService; jobs: ExportJobs }): Promise<void> {
  app.addHook('onRequest', async (request) => {
    await tokens.authenticate(request);
  });

  app.get(
    '/api/workers/check/:id',
    {
      schema: {
        tags: ['workers'],
        summary: 'Whether a job is done',
        description: 'ready false while it runs (and for an id no job has), ready true when done, with error when it failed.',
        params: JobParams,
        response: { 200: JobState, 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error', { description: 'An id no job could have' }) },
      },
    },
    async (request) => jobs.state(request.params.id),
  );

  app.get(
    '/api/workers/get/:id',
    {
      schema: {
        tags: ['workers'],
        summary: "A job's result",
        description: 'The file, as an attachment named `filename`; {"error": "Task not ready"} until it is, or the reason it failed.',
        params: JobParams,
        querystring: Type.Object({ filename: Type.Optional(Type.String({ maxLength: 255 })) }),
        response: {
          200: Type.Object({ error: Type.String() }, { description: 'The file; as JSON, why there is none (yet)' }),
          400: Type.Ref('Error'),
          403: Type.Ref('Error'),
          404: Type.Ref('Error', { description: 'An id no job could have' }),
        },
      },
    },
    async (request, reply) => {
      const result = await jobs.result(request.params.id);
      if (result === null) return { error: 'Task not ready' };
      if ('error' in result) return { error: result.error };
      return sendFile(request, reply, result.file, (request.query.filename ?? result.filename).replace(/[/\\]/g, '-'), false);
    },
  );
}
