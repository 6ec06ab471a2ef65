// The ground-control editor's API under a task: GET and PUT .../gcp/ (the task's gcp_list.txt, read as the task
// is; replaced with "change", then given to the node by the next restart) and POST .../gcp/sightings (where
// surveyed points appear in the photographs: a job to poll with /api/workers/check/{id}, its result JSON).
import { Type } from '@sinclair/typebox';
import { ANONYMOUS, OPTIONAL_SECURITY, currentUser, optionalUser } from '../auth.ts';
import { notFound } from '../errors.ts';
import type { ExportJobs } from '../exports/jobs.ts';
import { TaskParams } from '../tasks/schema.ts';
import type { TaskRules } from '../tasks/tasks.ts';
import type { App } from '../typed-app.ts';
import { readGcpList, saveGcpList, startSightings } from './control.ts';
import { GcpListBody, SightingsBody } from './list.ts';

const tags = ['tasks'];
// 413: a body over the service's limit (1 MB by default).
const errors = { 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error'), 413: Type.Ref('Error') };
const GcpList = Type.Object({ filename: Type.String(), gcp_list: Type.String() });

export interface GcpDeps {
  rules: TaskRules;
  jobs: ExportJobs;
}

export async function gcpRoutes(app: App, { rules, jobs }: GcpDeps): Promise<void> {
  const base = '/api/projects/:project_id/tasks/:task_id/gcp';

  app.get(
    `${base}/`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: "The task's ground control points",
        description: "Its gcp_list.txt (ODM's format), whatever name it was uploaded under; a 404 where it has none.",
        params: TaskParams,
        response: { 200: GcpList, ...errors },
      },
    },
    async (request) => {
      const { task } = await rules.readable(optionalUser(request), request.params.project_id, request.params.task_id);
      const list = await readGcpList(rules.folder(task));
      if (!list) throw notFound('This task has no ground control points.');
      return { filename: list.filename, gcp_list: list.text };
    },
  );

  app.put(
    `${base}/`,
    {
      schema: {
        tags,
        summary: "Replace the task's ground control points",
        description:
          'Writes gcp_list.txt (ODM\'s format: a CRS line, then "x y z pixel_x pixel_y image [name] [check]" per mark; `check` after the name makes the point a checkpoint) beside the photographs, each line checked. The next restart uses it: with rerun-from opensfm on a node that can take new points (an Aeromap node), else from a new upload. Needs "change"; not while the task is processing.',
        params: TaskParams,
        body: GcpListBody,
        response: { 200: Type.Object({ points: Type.Integer(), marks: Type.Integer(), checkpoints: Type.Integer() }), ...errors },
      },
    },
    async (request) => {
      const task = await rules.task(currentUser(request), request.params.project_id, request.params.task_id, 'change');
      return saveGcpList(rules.folder(task), task, request.body.gcp_list);
    },
  );

  app.post(
    `${base}/sightings`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: 'Where surveyed points appear in the photographs',
        description:
          "For each point, the photographs that see it and the pixel where it should be (ODM's convention), nearest the photograph's centre first: from the task's model (cameras.json, shots.geojson) where it has one, else from the photographs' GPS and gimbal angles. A point's marks, where given, place it (two or more meet where it is). The job's result is JSON: source (model or gps), points [{name, sightings [{image, x, y, width, height}]}].",
        params: TaskParams,
        body: SightingsBody,
        response: { 200: Type.Object({ celery_task_id: Type.String(), filename: Type.String() }), ...errors },
      },
    },
    async (request) => {
      const { task } = await rules.readable(optionalUser(request), request.params.project_id, request.params.task_id);
      return startSightings(jobs, rules.folder(task), task, request.body);
    },
  );
}
