// The views of a task under /api/projects/{project_id}/tasks/{task_id}/: its photographs (download, thumbnail
// with WebODM's zoom and points) and its saved 3D scene. Reads are open to anyone on a public task
// (TaskRules.readable); the scene is saved by editors, or by anyone on a public task with public_edit.
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { ANONYMOUS, OPTIONAL_SECURITY, optionalUser } from '../auth.ts';
import { Success } from '../schemas.ts';
import type { App } from '../typed-app.ts';
import { PhotoThumbnailQuery, photoFile, photoThumbnail, photoViewOf } from './photos.ts';
import { TASK_ERRORS as errors, TASK_TAGS as tags, type TaskIds, readableTask, sendFile } from './replies.ts';
import { mergeScene, withCameraView } from './scene.ts';
import { TaskParams } from './schema.ts';
import type { TaskRules } from './tasks.ts';

export async function taskViewRoutes(app: App, rules: TaskRules): Promise<void> {
  const base = '/api/projects/:project_id/tasks';
  const readableOf = (request: FastifyRequest) => readableTask(rules, request);

  const PhotoParams = Type.Object({ ...TaskParams.properties, filename: Type.String({ maxLength: 255 }) });
  app.get(
    `${base}/:task_id/images/download/:filename`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: 'Download one of the photographs the task was made from',
        description: 'By its uploaded name. A compacted task has none left (404).',
        params: PhotoParams,
        response: { 404: Type.Ref('Error'), 403: Type.Ref('Error') },
      },
    },
    async (request, reply) => {
      const task = await readableOf(request);
      const file = await photoFile(rules.folder(task).images, request.params.filename);
      return sendFile(request, reply, file, request.params.filename, false);
    },
  );

  app.get(
    `${base}/:task_id/images/thumbnail/:filename`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: 'A JPEG thumbnail of one of the photographs the task was made from',
        params: PhotoParams,
        querystring: PhotoThumbnailQuery,
        response: { 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request, reply) => {
      const task = await readableOf(request);
      const file = await photoFile(rules.folder(task).images, request.params.filename);
      const data = await photoThumbnail(file, request.query.size, request.query.quality, photoViewOf(request.query));
      return reply.type('image/jpeg').header('content-disposition', 'inline').header('cache-control', 'private, max-age=3600').send(data);
    },
  );

  const SceneBody = Type.Record(Type.String(), Type.Unknown());
  const sceneOf = (request: FastifyRequest) => {
    const { project_id: projectId, task_id: taskId } = request.params as TaskIds;
    return rules.sceneEditable(optionalUser(request), projectId, taskId);
  };
  app.get(
    `${base}/:task_id/3d/scene`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: "The task's saved 3D scene (WebODM's Potree scene); {} when none",
        params: TaskParams,
        response: { 200: SceneBody, ...errors },
      },
    },
    async (request) => JSON.parse((await readableOf(request)).potree_scene) as Record<string, unknown>,
  );
  app.post(
    `${base}/:task_id/3d/scene`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: "Save the task's 3D scene",
        description:
          'A Potree scene ({"type": "Potree", ...}); its fields replace the stored ones, but for view, pointclouds and settings. ' +
          'Needs "change", or a public task with public_edit.',
        params: TaskParams,
        body: SceneBody,
        response: { 200: Success, ...errors },
      },
    },
    async (request) => {
      await rules.saveScene(await sceneOf(request), (stored) => mergeScene(stored, request.body));
      return { success: true };
    },
  );
  app.post(
    `${base}/:task_id/3d/cameraview`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: "Save the initial camera view of the task's 3D scene",
        description: 'The view as a JSON object. Needs "change", or a public task with public_edit.',
        params: TaskParams,
        body: SceneBody,
        response: { 200: Success, ...errors },
      },
    },
    async (request) => {
      await rules.saveScene(await sceneOf(request), (stored) => withCameraView(stored, request.body));
      return { success: true };
    },
  );
}
