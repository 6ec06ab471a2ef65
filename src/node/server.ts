// A processing node in this process: `aeromap node` runs one, and the service can embed one.
import cors from '@fastify/cors';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import Fastify from 'fastify';
import { mkdir } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import path from 'node:path';
import { defaultEnginePath, describeEngine } from '../protocol/engine.ts';

export { defaultEnginePath };
import { DataLayout } from './layout.ts';
import { lockDataDir } from './lock.ts';
import { FORM_LIMITS } from './multipart.ts';
import { registerRoutes } from './routes.ts';
import { TaskStore } from './store.ts';
import { TaskManager } from './tasks.ts';


export interface NodeOptions {
  dataDir: string;
  /** 0 picks a free port. */
  port: number;
  host?: string;
  token?: string | null;
  maxImages?: number | null;
  parallelTasks?: number;
  cleanupAfterMinutes?: number;
  webhook?: string | null;
  /** An engine run that lasts longer is stopped and its task failed (default: no limit). */
  maxRuntimeMs?: number | null;
  /** An engine run whose processes hold more memory is stopped and its task failed (default: no limit). */
  maxMemoryBytes?: number | null;
  /** Space kept free on the data folder's disk (default 1 GiB): uploads and unpacking stop short of it. */
  minFreeBytes?: number;
  /** Web applications (origins) whose browser requests are accepted; by default none but the node's own. */
  corsOrigins?: string[];
  /** Let zipurl and webhooks reach loopback and private networks (default: public addresses only). */
  allowPrivateUrls?: boolean;
  /** Host names a node without a token answers besides loopback's (default: none). */
  allowedHosts?: string[];
  enginePath?: string;
  log?: (message: string) => void;
}

export interface RunningNode {
  /** Where clients on this machine reach the node. */
  url: string;
  port: number;
  /** Stops serving and stops running engines; their tasks resume when a node starts on the same data folder. */
  close(): Promise<void>;
}

// A Host header: a name or an IPv4 address, or an IPv6 address in brackets, and an optional port.
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[^:[\]/@\s]+)(?::\d{1,5})?$/i;

/** The host name of a Host header, lower case, without brackets or port; null when it is none. */
function hostName(header: string | undefined): string | null {
  const match = header === undefined ? null : HOST_HEADER.exec(header);
  return match ? match[1].toLowerCase().replace(/^\[(.*)\]$/, '$1') : null;
}

function isLoopback(name: string): boolean {
  return name === 'localhost' || name === '::1' || (isIPv4(name) && name.startsWith('127.'));
}

/**
 * Whether a node without a token answers a request for this Host. A web page on a name that its DNS points at
 * 127.0.0.1 (DNS rebinding) reaches the node as its own origin, with that name in Host; only loopback's names and
 * those the operator lists are this node's.
 */
function answersHost(header: string | undefined, allowedHosts: string[]): boolean {
  const name = hostName(header);
  return name !== null && (isLoopback(name) || allowedHosts.includes(name));
}

function sameHost(origin: string, host: string | undefined): boolean {
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

export async function startNode(options: NodeOptions): Promise<RunningNode> {
  const log = options.log ?? ((message: string) => console.error(message));
  const dataDir = path.resolve(options.dataDir);
  await mkdir(dataDir, { recursive: true });
  const engine = await describeEngine(options.enginePath ?? defaultEnginePath());
  const unlock = lockDataDir(dataDir);
  const layout = new DataLayout(dataDir);
  const settings = {
    token: options.token || null,
    maxImages: options.maxImages ?? null,
    parallelTasks: options.parallelTasks ?? 1,
    cleanupAfterMinutes: options.cleanupAfterMinutes ?? 2880,
    webhook: options.webhook || null,
    allowPrivateUrls: options.allowPrivateUrls ?? false,
    minFreeBytes: options.minFreeBytes ?? 2 ** 30,
    maxRuntimeMs: options.maxRuntimeMs ?? null,
    maxMemoryBytes: options.maxMemoryBytes ?? null,
  };
  const store = new TaskStore(layout.database);
  const tasks = new TaskManager(layout, store, engine, settings, log);
  // Closing drops open connections too: a client that left a download unread must not hold up a shutdown.
  const app = Fastify({
    bodyLimit: FORM_LIMITS.fieldBytes,
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true },
  });
  try {
    await tasks.open();
    // Browsers send an Origin with cross-site requests; NodeODM clients (PyODM, WebODM's server, ClusterODM) do
    // not. A web page the user happens to open must not submit or remove tasks (even a "simple" POST needs no
    // preflight), so other origins are refused unless named.
    const corsOrigins = options.corsOrigins ?? [];
    const allowedHosts = (options.allowedHosts ?? []).map((name) => hostName(name) ?? name.toLowerCase());
    if (!settings.token) {
      app.addHook('onRequest', async (request, reply) => {
        if (answersHost(request.headers.host, allowedHosts)) return;
        const host = request.headers.host ?? '';
        return reply.code(403).send({ error: `This node answers no request for host "${host}": without --token it answers loopback (127.0.0.1, [::1], localhost) and the names --allowed-hosts lists` });
      });
    }
    app.addHook('onRequest', async (request, reply) => {
      const origin = request.headers.origin;
      if (origin === undefined || corsOrigins.includes(origin) || sameHost(origin, request.headers.host)) return;
      return reply.code(403).send({ error: `Requests from ${origin} are not accepted; start the node with --cors-origin ${origin} to allow that web application` });
    });
    await app.register(cors, { origin: corsOrigins.length ? corsOrigins : false });
    await app.register(formbody, { bodyLimit: FORM_LIMITS.fieldBytes });
    // A file's size is bounded by the disk's room as it is written (UploadArea.receive).
    await app.register(multipart, {
      limits: { fieldSize: FORM_LIMITS.fieldBytes, fields: FORM_LIMITS.fields, fileSize: Infinity, files: FORM_LIMITS.files, parts: FORM_LIMITS.parts },
    });
    registerRoutes(app, tasks, engine, settings);
    await app.listen({ port: options.port, host: options.host ?? '0.0.0.0' });
  } catch (err) {
    await tasks.close();
    store.close();
    unlock();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host ?? '0.0.0.0';
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    url: `http://${reachable}:${port}`,
    port,
    async close() {
      await tasks.close();
      await app.close();
      store.close();
      unlock();
    },
  };
}
