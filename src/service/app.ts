// The service's app factory: opens and migrates the database, makes sure an admin exists, and assembles the
// HTTP API. `aeromap serve` and the tests start the service through buildService.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import type { Kysely } from 'kysely';
import type { ServiceConfig } from './config.ts';
import { type DialectName, openDatabase } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrations.ts';
import { defaultEnginePath } from '../protocol/engine.ts';
import type { Database } from '../db/schema.ts';
import { TokenService, requestForLog, requireUser, tokenRoutes } from './auth.ts';
import { healthRoutes } from './health.ts';
import { type FirstAdmin, ensureFirstAdmin } from './bootstrap.ts';
import { installErrorHandling, methodNotAllowed } from './errors.ts';
import { GroupSchema, groupRoutes } from './groups.ts';
import { registerOpenApi } from './openapi.ts';
import { registerWebApp, webAppBuilt } from './web.ts';
import { installSecurityHeaders } from './security-headers.ts';
import { ProcessingNodeSchema, processingNodeRoutes } from './processingnodes.ts';
import { PresetSchema, presetRoutes } from './presets.ts';
import { profileRoutes } from './profiles.ts';
import { ProjectSchema, projectRoutes } from './projects.ts';
import { NodeRefresher } from './refresher.ts';
import { sweepProjects } from './tasks/actions.ts';
import { taskStep } from './tasks/processing.ts';
import { taskRoutes } from './tasks/routes.ts';
import { ExportJobs } from './exports/jobs.ts';
import { earthworksRoutes } from './earthworks/routes.ts';
import { gcpRoutes } from './gcp/routes.ts';
import { exportRoutes, workerRoutes } from './exports/routes.ts';
import { TaskSchema } from './tasks/schema.ts';
import { publicRoutes } from './public.ts';
import { startExpirySweep } from './tasks/expiry.ts';
import { TaskScheduler } from './tasks/scheduler.ts';
import { TaskRules } from './tasks/tasks.ts';
import { TileService } from './tiles/service.ts';
import { ErrorReply } from './schemas.ts';
import type { App } from './typed-app.ts';
import { UserSchema, userRoutes } from './users.ts';

export interface Service {
  app: App;
  db: Kysely<Database>;
  dialect: DialectName;
  refresher: NodeRefresher;
  scheduler: TaskScheduler;
  tokens: TokenService;
  /** The admin created on this start, if the database had no user. */
  firstAdmin: FirstAdmin | undefined;
  /** Starts listening; answers the base URL, e.g. http://127.0.0.1:8000. */
  listen(port?: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Answers 405 with an Allow header for the methods a path does not take, instead of the router's 404.
 * Collects the routes as they are registered; call the returned function once all are.
 */
function methodNotAllowedRoutes(app: App): () => void {
  const methodsByUrl = new Map<string, Set<string>>();
  let collecting = true;
  app.addHook('onRoute', (route) => {
    if (!collecting || !route.url.startsWith('/')) return;
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    methodsByUrl.set(route.url, methods);
  });
  return () => {
    collecting = false;
    for (const [url, methods] of methodsByUrl) {
      const missing = METHODS.filter((method) => !methods.has(method));
      if (missing.length === 0 || url.includes('*')) continue;
      const allow = METHODS.filter((method) => methods.has(method)).join(', ');
      app.route({
        method: missing,
        url,
        schema: { hide: true },
        handler: async (request, reply) => {
          reply.header('allow', allow);
          throw methodNotAllowed(request.method);
        },
      });
    }
  };
}

export async function buildService(config: ServiceConfig): Promise<Service> {
  const { db, dialect } = openDatabase(config.databaseUrl, config.dataDir);
  try {
    await migrateToLatest(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const firstAdmin = await ensureFirstAdmin(db, config.firstAdmin, config.passwordIterations);

  const app: App = Fastify({
    logger: { level: config.logLevel, serializers: { req: requestForLog } },
    // Every log line of a request carries its id (reqId), which the answer's X-Request-Id gives back; a proxy's id
    // of a sane shape is kept, so that one request is followed from the load balancer to the logs.
    genReqId: (raw) => {
      const given = raw.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    bodyLimit: config.bodyLimitBytes,
    // Behind a trusted proxy, request.ip is the client's address from X-Forwarded-For (the login throttle counts by it).
    trustProxy: config.trustProxy,
    // A path parameter of any length reaches its route, which answers 400 or 404 as documented (the router's own
    // limit of 100 characters answers an undocumented 414).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 8192 },
    // All errors of a body at once, so that a client fixes them in one go; type lists (see Nullable).
    ajv: { customOptions: { allErrors: true, allowUnionTypes: true } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const tokens = new TokenService(db, config);
  const refresher = new NodeRefresher(db, app.log, {
    intervalMs: config.nodeRefreshIntervalMs,
    timeoutMs: config.nodeTimeoutMs,
  });

  const taskSettings = config.tasks;
  const enginePath = defaultEnginePath();
  const scheduler = new TaskScheduler(
    db,
    app.log,
    {
      tickMs: taskSettings.tickMs,
      leaseMs: taskSettings.leaseMs,
      concurrency: { transfer: taskSettings.concurrency, short: taskSettings.stepConcurrency },
    },
    taskStep(db, app.log, {
      dataDir: config.dataDir,
      pollMs: taskSettings.pollMs,
      retryMs: taskSettings.retryMs,
      nodeOfflineAfterMs: taskSettings.nodeOfflineAfterMs,
      nodeTimeoutMs: config.nodeTimeoutMs,
      zipLimits: { maxBytes: taskSettings.maxExtractedBytes, maxEntries: taskSettings.maxZipEntries },
      importMaxBytes: taskSettings.maxImportBytes,
      importTimeoutMs: taskSettings.importTimeoutMs,
      allowPrivateUrls: taskSettings.allowPrivateUrls,
      minFreeBytes: taskSettings.minFreeBytes,
      enginePath,
      maxAttempts: taskSettings.maxAttempts,
      retryBackoffMs: taskSettings.retryBackoffMs,
    }),
    sweepProjects(db, config.dataDir),
  );
  const wake = () => scheduler.wake();
  const rules = new TaskRules(db, {
    dataDir: config.dataDir,
    minFreeBytes: taskSettings.minFreeBytes,
    upload: { fileBytes: taskSettings.maxImageBytes, files: taskSettings.maxImages },
    wake,
  });

  const tiles = new TileService(enginePath, {
    dataDir: config.dataDir,
    cacheBytes: taskSettings.tileCacheBytes,
    workers: taskSettings.tileWorkers,
    queue: taskSettings.tileQueue,
  });

  const exportJobs = new ExportJobs(
    { dataDir: config.dataDir, enginePath, workers: taskSettings.exportWorkers, expiryMs: taskSettings.exportExpiryMs },
    app.log,
  );

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installSecurityHeaders(app);
  const pages = webAppBuilt();
  installErrorHandling(app, pages);
  const finishMethodRoutes = methodNotAllowedRoutes(app);
  await app.register(formbody);
  await app.register(cookie);
  for (const schema of [ErrorReply, ProjectSchema, PresetSchema, ProcessingNodeSchema, UserSchema, GroupSchema, TaskSchema]) {
    app.addSchema(schema);
  }
  await registerOpenApi(app, version);
  await app.register(async (open: App) => tokenRoutes(open, { tokens, db }));
  await app.register(async (open: App) => healthRoutes(open, { db }));
  await app.register(async (open: App) => workerRoutes(open, { tokens, jobs: exportJobs }));
  await app.register(async (api: App) => {
    requireUser(api, tokens);
    await projectRoutes(api, { db, dataDir: config.dataDir, minFreeBytes: taskSettings.minFreeBytes });
    await presetRoutes(api, { db });
    await processingNodeRoutes(api, { db, refresher });
    await userRoutes(api, { db, dataDir: config.dataDir, passwordIterations: config.passwordIterations, tokens });
    await groupRoutes(api, { db });
    await profileRoutes(api, { db });
    await taskRoutes(api, {
      db,
      rules,
      imports: { dataDir: config.dataDir, minFreeBytes: taskSettings.minFreeBytes, maxBytes: taskSettings.maxImportBytes, enginePath, wake },
      uploadLimits: { fileBytes: taskSettings.maxImageBytes },
      tiles,
    });
    await exportRoutes(api, { rules, tiles, jobs: exportJobs });
    await earthworksRoutes(api, { rules, jobs: exportJobs });
    await gcpRoutes(api, { rules, jobs: exportJobs });
  });
  await publicRoutes(app, { db, rules, pages });
  finishMethodRoutes();
  if (pages) await registerWebApp(app);
  await app.ready();
  if (config.nodeRefreshIntervalMs > 0) refresher.start();
  if (taskSettings.scheduler) scheduler.start();
  const expiry = { dataDir: config.dataDir, expiryMs: taskSettings.partialExpiryMs };
  const stopExpirySweep = startExpirySweep(db, app.log, expiry, Math.min(3_600_000, expiry.expiryMs / 4));

  return {
    app,
    db,
    dialect,
    refresher,
    scheduler,
    tokens,
    firstAdmin,
    async listen(port = config.port, host = config.host) {
      const address = await app.listen({ port, host });
      return address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '[::1]');
    },
    async close() {
      stopExpirySweep();
      exportJobs.close();
      await scheduler.stop();
      await refresher.stop();
      await app.close();
      tiles.close();
      await db.destroy();
    },
  };
}
