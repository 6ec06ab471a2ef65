// A small HTTP server that answers /info and /options the way a NodeODM node does (errors as HTTP 200
// {"error": ...}, the token as ?token=), for testing the service's node refresher and client; the task protocol
// (chunked upload, info, cancel, remove, all.zip) with knobs that hold an upload or a commit in flight; and a
// proxy in front of a real node that cuts its all.zip downloads as ClusterODM does.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeNodeOptions {
  token?: string;
  version?: string;
  queueCount?: number;
  maxImages?: number | null;
  optionNames?: string[];
  /** "garbage": answers that are not JSON; "hang": never answers. */
  behaviour?: 'normal' | 'garbage' | 'hang';
}

/** What the stand-in does with tasks; the test may change it at any time. */
export interface FakeTaskBehaviour {
  /** Pause before each upload's body is read, which holds the upload in flight. */
  uploadDelayMs: number;
  /** 'answer': commits as NodeODM does; 'drop': never answers nor commits; 'lose': commits but never answers. */
  commit: 'answer' | 'drop' | 'lose';
  /** Pause between taking a commit and answering it. */
  commitDelayMs: number;
  /** Status code that committed tasks report (40: completed, 20: running). */
  taskStatus: number;
  /** The all.zip of completed tasks. */
  allZip: string | null;
  /** 'node': task info as NodeODM gives it; 'proxy': as ClusterODM's task table does while it forwards a task
   * (or after a forward failed): a status, a line of output, no progress, time nor image count. */
  infoShape: 'node' | 'proxy';
  /** The error message of failed tasks. */
  errorMessage: string;
}

export interface FakeNode {
  port: number;
  requests: { path: string; token: string | null }[];
  tasks: FakeTaskBehaviour;
  /** Uploads opened by task/new/init, and those committed (removed ones leave). */
  inits: string[];
  committed: Map<string, { canceled: boolean }>;
  /** Upload requests whose client went away before the answer. */
  abortedUploads: number;
  close(): Promise<void>;
}

export const option = (name: string) => ({ name, type: 'bool', value: 'false', domain: '', help: `The ${name} option` });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return new URLSearchParams(text);
}

/** The task protocol; answers false for other paths. */
function taskRoutes(node: FakeNode, request: IncomingMessage, response: ServerResponse, send: (body: unknown) => void): boolean {
  const path = new URL(request.url ?? '/', 'http://fake').pathname;
  const { tasks } = node;
  const uploadOf = /^\/task\/new\/(upload|commit)\/([^/]+)$/.exec(path);
  const taskOf = /^\/task\/([^/]+)\/(info|download\/all\.zip)$/.exec(path);
  if (path === '/task/new/init') {
    const uuid = randomUUID();
    node.inits.push(uuid);
    send({ uuid });
  } else if (uploadOf?.[1] === 'upload') {
    response.on('close', () => {
      if (!response.writableFinished) node.abortedUploads += 1;
    });
    void sleep(tasks.uploadDelayMs).then(async () => {
      for await (const _ of request);
      send(node.inits.includes(uploadOf[2]) ? { success: true } : { error: 'Invalid uuid (not found)' });
    }).catch(() => undefined); // the client went away
  } else if (uploadOf?.[1] === 'commit') {
    if (tasks.commit === 'drop') return true;
    node.committed.set(uploadOf[2], { canceled: false });
    if (tasks.commit === 'answer') void sleep(tasks.commitDelayMs).then(() => send({ uuid: uploadOf[2] }));
  } else if (taskOf) {
    const task = node.committed.get(taskOf[1]);
    if (!task) send({ error: 'Invalid uuid (not found)' });
    else if (taskOf[2] === 'info') {
      const code = task.canceled ? 50 : tasks.taskStatus;
      const status = code === 30 ? { code, errorMessage: tasks.errorMessage } : { code };
      if (tasks.infoShape === 'proxy') send({ uuid: taskOf[1], status, output: ['Launching... please wait!'] });
      else send({ uuid: taskOf[1], processingTime: 1000, status, imagesCount: 3, progress: code === 40 ? 100 : 50, output: [] });
    } else {
      response.setHeader('content-type', 'application/zip');
      createReadStream(tasks.allZip ?? '').pipe(response);
    }
  } else if (path === '/task/cancel' || path === '/task/remove') {
    void formOf(request).then((form) => {
      const uuid = form.get('uuid') ?? '';
      const task = node.committed.get(uuid);
      if (!task) return send({ error: 'Invalid uuid (not found)' });
      if (path === '/task/cancel') task.canceled = true;
      else node.committed.delete(uuid);
      send({ success: true });
    });
  } else {
    return false;
  }
  return true;
}

export async function startFakeNode(config: FakeNodeOptions = {}): Promise<FakeNode> {
  const requests: FakeNode['requests'] = [];
  const node = {
    requests,
    tasks: { uploadDelayMs: 0, commit: 'answer', commitDelayMs: 0, taskStatus: 40, allZip: null, infoShape: 'node', errorMessage: '' },
    inits: [],
    committed: new Map(),
    abortedUploads: 0,
  } as Omit<FakeNode, 'port' | 'close'> as FakeNode;
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    const token = url.searchParams.get('token');
    requests.push({ path: url.pathname, token });
    if (config.behaviour === 'hang') return;
    const send = (body: unknown) => {
      response.setHeader('content-type', 'application/json');
      response.end(config.behaviour === 'garbage' ? '<html>' : JSON.stringify(body));
    };
    if (config.token && token !== config.token) return send({ error: 'Invalid authentication token: token does not match.' });
    if (url.pathname === '/info') {
      return send({
        version: config.version ?? '2.2.4',
        taskQueueCount: config.queueCount ?? 0,
        totalMemory: 8e9,
        availableMemory: 4e9,
        cpuCores: 4,
        maxImages: config.maxImages === undefined ? null : config.maxImages,
        maxParallelTasks: 1,
        engineVersion: '3.5.6',
        engine: 'odm',
      });
    }
    if (url.pathname === '/options') return send((config.optionNames ?? ['dsm', 'dtm']).map(option));
    if (!taskRoutes(node, request, response, send)) send({ error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  node.port = (server.address() as AddressInfo).port;
  node.close = () => closeServer(server);
  return node;
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface CuttingProxy {
  port: number;
  /** The Range header of each all.zip request, in order. */
  downloads: string[];
  close(): Promise<void>;
}

/**
 * A node as ClusterODM fronts it: every request goes on to the real node at `targetPort`, but each all.zip
 * answer says Connection: close and stops after `cutAfterBytes` bytes of its body, the socket closed.
 */
export async function startCuttingProxy(targetPort: number, cutAfterBytes: number): Promise<CuttingProxy> {
  const downloads: string[] = [];
  const server: Server = createServer((request, response) => {
    const zip = /\/download\/all\.zip$/.test(new URL(request.url ?? '/', 'http://proxy').pathname);
    if (zip) downloads.push(request.headers.range ?? '');
    const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, path: request.url, method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...(zip ? { connection: 'close' } : {}) });
      if (!zip) return void answer.pipe(response);
      const held: Buffer[] = [];
      let sent = 0;
      let cut = false;
      answer.on('data', (chunk: Buffer) => {
        held.push(chunk);
        sent += chunk.length;
        if (sent <= cutAfterBytes || cut) return;
        cut = true;
        answer.destroy();
        // The bytes before the cut reach the socket, then the connection closes while they are still in flight,
        // as a proxy that gives up on a long answer does: the client reads them after the node has gone.
        response.write(Buffer.concat(held).subarray(0, cutAfterBytes), () => response.socket?.destroy());
      });
      // An answer whose last bytes came with the cut may still end: what it held must not follow the cut bytes.
      answer.on('end', () => cut || response.end(Buffer.concat(held)));
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    downloads,
    close: () => closeServer(server),
  };
}
