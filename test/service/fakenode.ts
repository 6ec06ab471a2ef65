// A small HTTP server that answers /info and /options the way a NodeODM node does (errors as HTTP 200
// {"error": ...}, the token as ?token=), for testing the service's node refresher and client; and a proxy in
// front of a real node that cuts its all.zip downloads as ClusterODM does.
import { type Server, createServer, request as httpRequest } from 'node:http';
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

export interface FakeNode {
  port: number;
  requests: { path: string; token: string | null }[];
  close(): Promise<void>;
}

export const option = (name: string) => ({ name, type: 'bool', value: 'false', domain: '', help: `The ${name} option` });

export async function startFakeNode(config: FakeNodeOptions = {}): Promise<FakeNode> {
  const requests: FakeNode['requests'] = [];
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
    send({ error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () => closeServer(server),
  };
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
      // The bytes before the cut go out at once, and the connection is closed while they are still in flight.
      const held: Buffer[] = [];
      let sent = 0;
      answer.on('data', (chunk: Buffer) => {
        held.push(chunk);
        sent += chunk.length;
        if (sent <= cutAfterBytes) return;
        answer.destroy();
        response.write(Buffer.concat(held).subarray(0, cutAfterBytes));
        // After the write leaves the cork of this tick: what the kernel took arrives, then the close.
        setImmediate(() => response.socket?.destroy());
      });
      answer.on('end', () => response.end(Buffer.concat(held)));
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
