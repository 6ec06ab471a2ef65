// The NodeODM API 2.x over HTTP. As NodeODM does, failures answer HTTP 200 with {"error": ...}, actions answer
// {"success": ...}, and the token travels as the `token` query parameter.
import send from '@fastify/send';
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EngineDescription } from '../protocol/engine.ts';
import { readForm, type FormFields } from './multipart.ts';
import type { ActionResult, NodeError, TaskManager } from './tasks.ts';
import { UploadRefused } from './uploads.ts';

/** The NodeODM API level this node speaks; clients take their modern paths (chunked uploads, with_output) from
 * 1.4 and 1.5.1 on. */
const API_VERSION = '2.2.4';

export interface RouteSettings {
  token: string | null;
  maxImages: number | null;
  parallelTasks: number;
}

type UuidParams = { Params: { uuid: string } };
type Query = Record<string, string | undefined>;

function sameSecret(a: string, b: string): boolean {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function authorize(settings: RouteSettings) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (settings.token === null || request.url.startsWith('/auth/')) return;
    const given = (request.query as Query).token ?? '';
    if (!sameSecret(given, settings.token)) {
      await reply.send({ error: 'Invalid authentication token: token does not match.' });
    }
  };
}

async function actionOn(
  request: FastifyRequest,
  action: (uuid: string, fields: Record<string, unknown>) => Promise<ActionResult>,
): Promise<ActionResult> {
  const fields = await readForm(request);
  const uuid = typeof fields.uuid === 'string' ? fields.uuid : '';
  if (uuid === '') return { error: 'uuid param missing.' };
  return action(uuid, fields);
}

/** Reads a form whose files are uploads of task `uuid`: its fields, and how many files came. */
async function readUpload(
  request: FastifyRequest,
  tasks: TaskManager,
  uuid: string,
): Promise<{ fields: FormFields; files: number }> {
  let files = 0;
  const fields = await readForm(request, async (name, content) => {
    await tasks.receive(uuid, name, content);
    files++;
  });
  return { fields, files };
}

export function registerRoutes(
  app: FastifyInstance,
  tasks: TaskManager,
  engine: EngineDescription,
  settings: RouteSettings,
): void {
  app.addHook('onRequest', authorize(settings));
  app.setErrorHandler(async (err: Error, _request, reply) =>
    reply.code(200).send(err instanceof UploadRefused ? { error: err.message, noRetry: true } : { error: err.message }));

  app.get('/info', async () => ({
    version: API_VERSION,
    taskQueueCount: tasks.pendingCount(),
    totalMemory: os.totalmem(),
    availableMemory: os.freemem(),
    cpuCores: os.availableParallelism(),
    maxImages: settings.maxImages,
    maxParallelTasks: settings.parallelTasks,
    engineVersion: engine.version,
    engine: 'aeromap',
  }));

  app.get('/options', async () => engine.options);

  app.post('/task/new', async (request): Promise<{ uuid: string } | NodeError> => {
    const claimed = await tasks.claimUuid(request.headers['set-uuid'] as string | undefined);
    if ('error' in claimed) return claimed;
    const { uuid } = claimed;
    try {
      const { fields, files } = await readUpload(request, tasks, uuid);
      const zipurl = typeof fields.zipurl === 'string' ? fields.zipurl : '';
      if (files === 0 && zipurl === '') throw new Error('Need at least 1 file or a zip file url.');
      const refused = tasks.register(uuid, fields);
      if (refused) throw new Error(refused.error);
      if (zipurl !== '') await tasks.download(uuid, zipurl);
      return await tasks.commit(uuid);
    } catch (err) {
      await tasks.discard(uuid);
      return { error: (err as Error).message };
    }
  });

  app.post('/task/new/init', async (request): Promise<{ uuid: string } | NodeError> => {
    const claimed = await tasks.claimUuid(request.headers['set-uuid'] as string | undefined);
    if ('error' in claimed) return claimed;
    try {
      const refused = tasks.register(claimed.uuid, await readForm(request));
      if (refused) throw new Error(refused.error);
      return claimed;
    } catch (err) {
      await tasks.discard(claimed.uuid);
      return { error: (err as Error).message };
    }
  });

  app.post<UuidParams>('/task/new/upload/:uuid', async (request): Promise<{ success: true } | NodeError> => {
    const { uuid } = request.params;
    if (!tasks.hasUpload(uuid)) return { error: 'Invalid uuid (not found)' };
    const { files } = await readUpload(request, tasks, uuid);
    return files > 0 ? { success: true } : { error: 'Need at least 1 file.', noRetry: true };
  });

  app.post<UuidParams>('/task/new/commit/:uuid', async (request) => tasks.commit(request.params.uuid));

  app.get('/task/list', async () => tasks.list());

  app.get<UuidParams>('/task/:uuid/info', async (request) => {
    const info = tasks.info(request.params.uuid, (request.query as Query).with_output);
    return info ?? { error: `${request.params.uuid} not found` };
  });

  app.get<UuidParams>('/task/:uuid/output', async (request) => {
    const output = tasks.output(request.params.uuid, (request.query as Query).line);
    return output ?? { error: `${request.params.uuid} not found` };
  });

  app.get<{ Params: { uuid: string; asset: string } }>('/task/:uuid/download/:asset', async (request, reply) => {
    const { uuid, asset } = request.params;
    const dir = tasks.taskDir(uuid);
    if (dir === undefined) return { error: `${uuid} not found` };
    if (asset !== 'all.zip') return { error: 'Invalid asset' };
    if (!existsSync(path.join(dir, asset))) return { error: 'Asset not ready' };
    // Ranges let PyODM and WebODM fetch big archives in parallel pieces.
    const file = await send(request.raw, `/${asset}`, { root: dir, acceptRanges: true, cacheControl: false });
    return reply
      .code(file.statusCode)
      .headers(file.headers)
      .header('Content-Disposition', `attachment; filename=${asset}`)
      .send(file.stream);
  });

  app.post('/task/cancel', async (request) => actionOn(request, (uuid) => tasks.cancel(uuid)));
  app.post('/task/remove', async (request) => actionOn(request, (uuid) => tasks.remove(uuid)));
  app.post('/task/restart', async (request) =>
    actionOn(request, (uuid, fields) => tasks.restart(uuid, fields.options)),
  );
  // Not in NodeODM: a finished task's gcp_list.txt replaced (form fields uuid and gcp, the file's text).
  app.post('/task/gcp', async (request) => actionOn(request, (uuid, fields) => tasks.replaceGcp(uuid, fields.gcp)));

  // This node has no accounts of its own: the stubs NodeODM answers without them.
  app.get('/auth/info', async () => ({
    message: 'Authentication not available on this node',
    loginUrl: null,
    registerUrl: null,
  }));
  app.post('/auth/login', async () => ({ error: 'Not available' }));
  app.post('/auth/register', async () => ({ error: 'Not available' }));
}
