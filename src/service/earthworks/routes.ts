// Earthworks on a task's elevation models, measured where the models are (by the engine, as export jobs): POST
// .../volume (a polygon's cut, fill and net volume over the DSM or DTM against a base), POST
// .../{dsm|dtm}/contours (contour lines in a format and CRS) and POST .../{dsm|dtm}/difference (the change since
// an earlier task's model, and its cut and fill). Each answers a job id to poll with
// /api/workers/check/{id} and fetch with /api/workers/get/{id}. Read as the task's downloads: "view", or anyone on
// a public task.
import { Type } from '@sinclair/typebox';
import { ANONYMOUS, OPTIONAL_SECURITY, optionalUser } from '../auth.ts';
import { HttpError } from '../errors.ts';
import type { ExportJobs } from '../exports/jobs.ts';
import { resolveAssetPath } from '../tasks/assets.ts';
import { TaskParams } from '../tasks/schema.ts';
import type { TaskRules } from '../tasks/tasks.ts';
import type { Task } from '../../db/schema.ts';
import type { App } from '../typed-app.ts';
import { ASSETS } from '../../protocol/files.ts';
import {
  CONTOUR_FORMATS,
  ContoursBody,
  DifferenceBody,
  SURFACES,
  type Surface,
  SurfaceSchema,
  VolumeBody,
  contoursArguments,
  contoursFilename,
  differenceArguments,
  differenceExtension,
  differenceFilename,
  volumeArguments,
  volumeFilename,
  volumePlan,
} from './request.ts';

const Started = Type.Object({ celery_task_id: Type.String({ description: 'Poll it with /api/workers/check/{id}' }), filename: Type.String() });
const replies = { 200: Started, 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') };

export interface EarthworksDeps {
  rules: TaskRules;
  jobs: ExportJobs;
}

/** The task's DSM or DTM file; a 400 naming how to make it where the task has none. */
async function surfaceFile(rules: TaskRules, task: Task, surface: Surface): Promise<string> {
  const asset = SURFACES[surface];
  const source = ASSETS[asset];
  const available = JSON.parse(task.available_assets) as string[];
  const file = available.includes(asset) && 'file' in source ? await resolveAssetPath(rules.folder(task).assets, source.file) : null;
  if (!file) {
    throw new HttpError(400, { detail: `No ${surface.toUpperCase()} available: restart the task with the ${surface} option (from the DEM stage).` });
  }
  return file;
}

export async function earthworksRoutes(app: App, { rules, jobs }: EarthworksDeps): Promise<void> {
  app.post(
    '/api/projects/:project_id/tasks/:task_id/volume',
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags: ['tasks'],
        summary: 'Measure a volume over a polygon',
        description:
          "The cut (above the base), fill (below it) and net volume of the DSM (or the DTM) over a polygon, against a base made from the heights along its boundary (WebODM's bases). The job's result is JSON: volume (net, as WebODM), cut, fill, net, area, cells, nodata_cells, base_mean, base.",
        params: TaskParams,
        body: VolumeBody,
        response: replies,
      },
    },
    async (request) => {
      const { task } = await rules.readable(optionalUser(request), request.params.project_id, request.params.task_id);
      const plan = volumePlan(request.body);
      const dem = await surfaceFile(rules, task, plan.surface);
      const filename = volumeFilename(task.name, plan.surface);
      return { celery_task_id: await jobs.start((output) => volumeArguments(plan, dem, output), filename, 'json'), filename };
    },
  );

  app.post(
    '/api/projects/:project_id/tasks/:task_id/:layer/contours',
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags: ['tasks'],
        summary: 'Contour lines of an elevation model',
        description: `Contours of the DSM or DTM at an interval, simplified within a tolerance, in a CRS, as ${Object.keys(CONTOUR_FORMATS).join(', ')} (each line at its height, with the field level).`,
        params: Type.Object({ ...TaskParams.properties, layer: SurfaceSchema }),
        body: ContoursBody,
        response: replies,
      },
    },
    async (request) => {
      const { task } = await rules.readable(optionalUser(request), request.params.project_id, request.params.task_id);
      const surface = request.params.layer;
      const dem = await surfaceFile(rules, task, surface);
      const filename = contoursFilename(task.name, surface, request.body);
      const id = await jobs.start((output) => contoursArguments(request.body, dem, output), filename, CONTOUR_FORMATS[request.body.format ?? 'GPKG']);
      return { celery_task_id: id, filename };
    },
  );
  app.post(
    '/api/projects/:project_id/tasks/:task_id/:layer/difference',
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags: ['tasks'],
        summary: "The change since an earlier task's elevation model",
        description:
          "This task's DSM or DTM less an earlier task's (both readable by the caller), on the earlier model's grid: a GeoTIFF of the change in metres (its cut, fill and net in its metadata), or with format json the figures alone: cut (m³ the ground went down by), fill, net, area, changed_area.",
        params: Type.Object({ ...TaskParams.properties, layer: SurfaceSchema }),
        body: DifferenceBody,
        response: replies,
      },
    },
    async (request) => {
      const user = optionalUser(request);
      const { task } = await rules.readable(user, request.params.project_id, request.params.task_id);
      const { task: reference } = await rules.readable(user, request.body.reference_project, request.body.reference_task);
      const surface = request.params.layer;
      const later = await surfaceFile(rules, task, surface);
      const earlier = await surfaceFile(rules, reference, surface);
      const filename = differenceFilename(task.name, surface, request.body);
      const id = await jobs.start((output) => differenceArguments(request.body, earlier, later, output), filename, differenceExtension(request.body));
      return { celery_task_id: id, filename };
    },
  );
}
