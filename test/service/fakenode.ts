// A small HTTP server that answers /info and /options the way a NodeODM node does (errors as HTTP 200
// {"error": ...}, the token as ?token=), for testing the service's node refresher and client.
import { type Server, createServer } from 'node:http';
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
