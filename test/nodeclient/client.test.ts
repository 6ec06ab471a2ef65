// The node client against the repo's own processing node, started in process with the fake engine and reached
// over real HTTP: the chunked upload, task info and actions, the all.zip download and its resume. Small servers
// stand in for nodes that ignore ranges and for a connection that drops in the middle of a body.
import { randomBytes } from 'node:crypto';
import { getEventListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as forward } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, type RunningNode } from '../../src/node/index.ts';
import { NodeClient, NodeResponseError, type NodeTaskInfo, type UploadFile } from '../../src/nodeclient/index.ts';
import { FAKE_ENGINE, makeJpegs } from '../service/taskhelpers.ts';

const COMPLETED = 40;
const RUNNING = 20;
const CANCELED = 50;

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

async function listen(handler: Handler): Promise<{ server: Server; client: NodeClient }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, client: new NodeClient({ hostname: '127.0.0.1', port: (server.address() as AddressInfo).port }) };
}

/** Passes every request on to the node, noting the Range header of each. */
function proxyTo(port: number, ranges: string[]): Handler {
  return (request, response) => {
    if (request.url?.includes('/download/')) ranges.push(request.headers.range ?? '');
    const upstream = forward({ host: '127.0.0.1', port, path: request.url, method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    request.pipe(upstream);
  };
}

async function waitFor(client: NodeClient, uuid: string, codes: number[]): Promise<NodeTaskInfo> {
  for (let i = 0; i < 400; i++) {
    const info = await client.taskInfo(uuid);
    if (codes.includes(info.status.code)) return info;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`task ${uuid} never reached ${codes.join(' or ')}`);
}

/** The names of the entries of a zip file, read from its central directory (so the file must be whole). */
function zipEntries(file: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error);
      const names: string[] = [];
      zip.on('entry', (entry: yauzl.Entry) => {
        names.push(entry.fileName);
        zip.readEntry();
      });
      zip.on('end', () => resolve(names));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

describe('NodeClient with a processing node', () => {
  let dir: string;
  let node: RunningNode;
  let client: NodeClient;
  let files: UploadFile[];
  let uuid: string;
  let zip: Buffer;
  const servers: Server[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'aeromap-nodeclient-'));
    node = await startNode({ dataDir: path.join(dir, 'node'), port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });
    client = new NodeClient({ hostname: '127.0.0.1', port: node.port });
    files = (await makeJpegs(path.join(dir, 'images'), 3)).map((file) => ({ name: path.basename(file), path: file }));
  });
  afterAll(async () => {
    for (const server of servers) server.close();
    await node.close();
    await rm(dir, { recursive: true, force: true });
  });

  const serve = async (handler: Handler) => {
    const served = await listen(handler);
    servers.push(served.server);
    return served;
  };

  it('uploads files from disk in the chunked flow, reporting progress up to 1', async () => {
    const progress: number[] = [];
    uuid = await client.createTask(files, {
      name: 'Client test',
      options: [{ name: 'fake-output-mb', value: 3 }],
      onProgress: (fraction) => progress.push(fraction),
      parallelUploads: 2,
    });
    expect(uuid).toMatch(/^[\w-]{8,}$/);
    expect(progress.at(-1)).toBe(1);
    expect(progress.every((fraction, i) => fraction > 0 && fraction >= (progress[i - 1] ?? 0))).toBe(true);
  });

  it('follows the task to completion, with and without its console output', async () => {
    const info = await waitFor(client, uuid, [COMPLETED]);
    expect(info).toMatchObject({ uuid, name: 'Client test', imagesCount: 3, progress: 100 });
    expect(info.output).toBeUndefined();
    expect(info.dateCreated).toBeGreaterThan(Date.now() - 60_000);

    const all = (await client.taskInfo(uuid, 0)).output ?? [];
    expect(all.join('\n')).toContain('Fake engine finished');
    expect((await client.taskInfo(uuid, 2)).output).toEqual(all.slice(2));
  });

  it('downloads all.zip in pieces to the final name, the same bytes as the node serves', async () => {
    zip = Buffer.from(await (await fetch(`${node.url}/task/${uuid}/download/all.zip`)).arrayBuffer());
    expect(zip.length).toBeGreaterThan(3 * 2 ** 20);
    const target = path.join(dir, 'all.zip');
    const progress: number[] = [];
    await client.downloadAllZip(uuid, target, { chunkBytes: 2 ** 20, onProgress: (fraction) => progress.push(fraction) });
    expect(existsSync(`${target}.part`)).toBe(false);
    expect((await stat(target)).size).toBe(zip.length);
    expect((await readFile(target)).equals(zip)).toBe(true);
    expect(await zipEntries(target)).toContain('odm_orthophoto/odm_orthophoto.tif');
    expect(progress.length).toBeGreaterThanOrEqual(4);
    expect(progress.at(-1)).toBe(1);
  });

  it('resumes a download from the .part a cut one left', async () => {
    const ranges: string[] = [];
    const { client: proxied } = await serve(proxyTo(node.port, ranges));
    const target = path.join(dir, 'resumed.zip');
    const have = 1_234_567;
    await writeFile(`${target}.part`, zip.subarray(0, have));
    await proxied.downloadAllZip(uuid, target, { chunkBytes: 2 ** 20 });
    expect(ranges[0]).toMatch(new RegExp(`^bytes=${have}-`));
    expect((await readFile(target)).equals(zip)).toBe(true);
    expect(existsSync(`${target}.part`)).toBe(false);

    // Killed after the last byte and before the rename: the node's 416 says the .part is whole.
    const whole = path.join(dir, 'whole.zip');
    await writeFile(`${whole}.part`, zip);
    await proxied.downloadAllZip(uuid, whole);
    expect(ranges.at(-1)).toMatch(new RegExp(`^bytes=${zip.length}-`));
    expect((await readFile(whole)).equals(zip)).toBe(true);
  });

  it('cancels, restarts and removes a task', async () => {
    const slow = await client.createTask(files, { options: [{ name: 'fake-seconds', value: 5 }] });
    await waitFor(client, slow, [RUNNING]);
    await expect(client.restartTask(slow)).rejects.toThrow(NodeResponseError);
    await client.cancelTask(slow);
    expect((await waitFor(client, slow, [CANCELED])).status.code).toBe(CANCELED);

    await client.restartTask(slow, [{ name: 'fake-seconds', value: 0 }]);
    expect((await waitFor(client, slow, [COMPLETED])).status.code).toBe(COMPLETED);

    await client.removeTask(slow);
    await expect(client.taskInfo(slow)).rejects.toThrow(NodeResponseError);
  });

  it("reports the node's refusals as NodeResponseError", async () => {
    await expect(client.taskInfo('no-such-task')).rejects.toThrow(/no-such-task not found/);
    await expect(client.taskInfo('no-such-task', 0)).rejects.toThrow(NodeResponseError);
    await expect(client.cancelTask('no-such-task')).rejects.toThrow(NodeResponseError);
    await expect(client.downloadAllZip('no-such-task', path.join(dir, 'none.zip'))).rejects.toThrow(NodeResponseError);
    await expect(client.createTask(files, { options: [{ name: 'mesh-octree-depth', value: 99 }] })).rejects.toThrow(NodeResponseError);
  });

  it('stops an upload when its signal aborts, rejecting with the reason', async () => {
    const big = path.join(dir, 'big.jpg');
    await writeFile(big, randomBytes(4 * 2 ** 20));
    const controller = new AbortController();
    const reason = new Error('stopped by the test');
    const upload = client.createTask([...files, { name: 'big.jpg', path: big }], {
      signal: controller.signal,
      parallelUploads: 1,
      onProgress: () => controller.abort(reason),
    });
    await expect(upload).rejects.toBe(reason);
  });

  it('retries an upload on one signal without leaving a listener per attempt', async () => {
    // Files go one at a time: every first attempt at a file fails with a server error, the second goes through.
    let uploads = 0;
    let refused = 0;
    const { server, client: flaky } = await listen((request, response) => {
      const upload = request.url?.startsWith('/task/new/upload/') ?? false;
      if (upload && ++uploads % 2 === 1) {
        refused++;
        request.resume();
        response.writeHead(502).end('{}');
        return;
      }
      proxyTo(node.port, [])(request, response);
    });
    const controller = new AbortController();
    const warnings: string[] = [];
    const warned = (warning: Error) => warnings.push(warning.name);
    process.on('warning', warned);
    try {
      const many = await makeJpegs(path.join(dir, 'retried'), 6);
      const uuid = await flaky.createTask(many.map((file) => ({ name: path.basename(file), path: file })), {
        signal: controller.signal,
        parallelUploads: 1,
      });
      expect((await waitFor(flaky, uuid, [COMPLETED])).status.code).toBe(COMPLETED);
      expect(refused).toBe(6);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', warned);
      server.close();
    }
  });

  it('takes the whole file from a node that ignores ranges, over a stale .part', async () => {
    const body = randomBytes(2 ** 20 + 77);
    const { client: plain } = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length }).end(body);
    });
    const target = path.join(dir, 'plain.zip');
    await writeFile(`${target}.part`, randomBytes(5000));
    await plain.downloadAllZip('abc', target, { chunkBytes: 2 ** 16 });
    expect((await readFile(target)).equals(body)).toBe(true);
  });

  it('downloads again after the connection drops in the middle of the body', async () => {
    const body = randomBytes(2 ** 20 + 99);
    let requests = 0;
    const { client: flaky } = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length });
      if (++requests === 1) response.write(body.subarray(0, body.length >> 1), () => response.destroy());
      else response.end(body);
    });
    const target = path.join(dir, 'flaky.zip');
    await flaky.downloadAllZip('abc', target);
    expect(requests).toBe(2);
    expect((await readFile(target)).equals(body)).toBe(true);
  });
});
