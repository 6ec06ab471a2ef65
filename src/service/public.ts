// WebODM's public pages of a task, the targets of its share links: /public/task/{id}/map/ and /3d/, their
// /iframe/ variants for embedding in other sites, and /json/ (the task as the API shows it). Each answers only for
// a task that is public (or of a public project), and 404 for any other, whoever asks: the page itself is the web
// application, which then reads the task through the API's routes open to anyone.
import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import type { Kysely } from 'kysely';
import { findOpenTask } from '../db/tasks.ts';
import type { Database } from '../db/schema.ts';
import { notFound } from './errors.ts';
import { FRAMEABLE_APP_POLICY } from './security-headers.ts';
import { Id } from './schemas.ts';
import type { TaskRules } from './tasks/tasks.ts';
import type { App } from './typed-app.ts';
import { sendPage } from './web.ts';

const Params = Type.Object({ task_id: Id });
const PAGES = ['map', '3d'] as const;

export async function publicRoutes(app: App, { db, rules, pages }: { db: Kysely<Database>; rules: TaskRules; pages: boolean }) {
  const openTask = async (taskId: number) => {
    const task = await findOpenTask(db, taskId);
    if (!task) throw notFound();
    return task;
  };
  const page = async (reply: FastifyReply, taskId: number) => {
    await openTask(taskId);
    if (!pages) throw notFound('The web application is not built.');
    return sendPage(reply);
  };

  app.get(
    '/public/task/:task_id/json/',
    {
      schema: {
        tags: ['public'],
        summary: 'A public task as the API shows it',
        security: [],
        params: Params,
        response: { 200: Type.Ref('Task'), 404: Type.Ref('Error') },
      },
    },
    async (request) => rules.present((await openTask(request.params.task_id)).id),
  );

  for (const name of PAGES) {
    const hide = { hide: true, params: Params };
    app.get(`/public/task/:task_id/${name}/`, { schema: hide }, async (request, reply) => page(reply, request.params.task_id));
    app.get(`/public/task/:task_id/iframe/${name}/`, { schema: hide }, async (request, reply) => {
      reply.header('content-security-policy', FRAMEABLE_APP_POLICY);
      return page(reply, request.params.task_id);
    });
  }
}
