// The node client's transfers against small HTTP servers that behave as nodes do, and misbehave as networks do:
// ranged downloads that resume a .part left by a cut, a node that ignores ranges, a connection dropped in the
// middle of a piece, a node that answers with an error; uploads that are aborted.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient, NodeResponseError } from '../../src/nodeclient/index.ts';

const FILE = randomBytes(3 * 2 ** 20 + 12345);

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

async function serve(handler: Handler): Promise<{ server: Server; client: NodeClient; ranges: string[] }> {
  const ranges: string[] = [];
  const server = createServer((request, response) => {
    ranges.push(request.headers.range ?? '');
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new NodeClient({ hostname: '127.0.0.1', port: (server.address() as AddressInfo).port });
  return { server, client, ranges };
}

/** Answers a Range request for FILE as a node does (206 with Content-Range, 416 past the end). */
function ranged(request: IncomingMessage, response: ServerResponse, cut?: () => boolean): void {
  const match = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '');
  if (!match) {
    response.writeHead(200, { 'content-length': FILE.length, 'accept-ranges': 'bytes' }).end(FILE);
    return;
  }
  const start = Number(match[1]);
  if (start >= FILE.length) {
    response.writeHead(416, { 'content-range': `bytes */${FILE.length}` }).end();
    return;
  }
  const end = Math.min(FILE.length - 1, match[2] ? Number(match[2]) : FILE.length - 1);
  response.writeHead(206, { 'content-range': `bytes ${start}-${end}/${FILE.length}`, 'content-length': end - start + 1 });
  const piece = FILE.subarray(start, end + 1);
  if (cut?.()) {
    // Half the piece, then the connection drops.
    response.write(piece.subarray(0, piece.length >> 1), () => response.destroy());
    return;
  }
  response.end(piece);
}

describe('NodeClient downloads', () => {
  let dir: string;
  const servers: Server[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'aeromap-download-'));
  });
  afterAll(async () => {
    for (const server of servers) server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (handler: Handler) => {
    const served = await serve(handler);
    servers.push(served.server);
    return served;
  };

  it('downloads in ranged pieces, reporting progress, and renames the file only when whole', async () => {
    const { client, ranges } = await start((request, response) => ranged(request, response));
    const target = path.join(dir, 'whole.zip');
    const progress: number[] = [];
    await client.downloadAllZip('abc', target, { chunkBytes: 2 ** 20, onProgress: (f) => progress.push(f) });
    expect((await readFile(target)).equals(FILE)).toBe(true);
    expect(existsSync(`${target}.part`)).toBe(false);
    expect(ranges[0]).toBe(`bytes=0-${2 ** 20 - 1}`);
    expect(ranges).toHaveLength(4);
    expect(progress.at(-1)).toBe(1);
  });

  it('resumes from the .part a cut download left', async () => {
    const { client, ranges } = await start((request, response) => ranged(request, response));
    const target = path.join(dir, 'resumed.zip');
    const have = 1_500_000;
    await writeFile(`${target}.part`, FILE.subarray(0, have));
    await client.downloadAllZip('abc', target, { chunkBytes: 2 ** 20 });
    expect(ranges[0]).toBe(`bytes=${have}-${have + 2 ** 20 - 1}`);
    expect((await readFile(target)).equals(FILE)).toBe(true);
  });

  it('retries a piece whose connection dropped, keeping what arrived', async () => {
    let drops = 2;
    const { client } = await start((request, response) => ranged(request, response, () => drops-- > 0));
    const target = path.join(dir, 'dropped.zip');
    await client.downloadAllZip('abc', target, { chunkBytes: 2 ** 20 });
    expect((await readFile(target)).equals(FILE)).toBe(true);
  });

  it('makes the whole file when two downloads of it run at once, cut part-way', async () => {
    // As when a step's lease passed to another worker before the first noticed: both write into one .part.
    let drops = 6;
    const { client } = await start((request, response) => ranged(request, response, () => drops-- > 0));
    const target = path.join(dir, 'twice.zip');
    // The one that finishes second finds the .part already renamed by the first.
    await Promise.all([0, 1].map(() => client.downloadAllZip('abc', target, { chunkBytes: 2 ** 19 }).catch(() => {})));
    expect((await readFile(target)).equals(FILE)).toBe(true);
  });

  it('writes no piece after a hole when the .part it measured is gone', async () => {
    // Another download of the file renames the .part (whole) between this one measuring it and writing the
    // next piece: that piece must not go into a new, empty .part at its offset.
    const target = path.join(dir, 'moved.zip');
    const have = 1_500_000;
    await writeFile(`${target}.part`, FILE.subarray(0, have));
    let moved = false;
    const { client, ranges } = await start((request, response) => {
      if (!moved) {
        moved = true;
        void rm(`${target}.part`).then(() => ranged(request, response));
        return;
      }
      ranged(request, response);
    });
    await client.downloadAllZip('abc', target, { chunkBytes: 2 ** 20 });
    expect(ranges[0]).toBe(`bytes=${have}-${have + 2 ** 20 - 1}`);
    expect(ranges[1]).toBe(`bytes=0-${2 ** 20 - 1}`); // started over
    expect((await readFile(target)).equals(FILE)).toBe(true);
  });

  it('takes the whole file from a node that ignores ranges', async () => {
    const { client } = await start((_request, response) => {
      response.writeHead(200, { 'content-length': FILE.length }).end(FILE);
    });
    const target = path.join(dir, 'plain.zip');
    await writeFile(`${target}.part`, 'stale bytes of another download');
    await client.downloadAllZip('abc', target);
    expect((await readFile(target)).equals(FILE)).toBe(true);
  });

  it("reports the node's error (asset not ready, unknown task) without retrying", async () => {
    const { client, ranges } = await start((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Asset not ready' }));
    });
    const target = path.join(dir, 'missing.zip');
    await expect(client.downloadAllZip('abc', target)).rejects.toThrow(NodeResponseError);
    await expect(client.downloadAllZip('abc', target)).rejects.toThrow(/Asset not ready/);
    expect(ranges).toHaveLength(2);
    expect(existsSync(target)).toBe(false);
  });
});

describe('NodeClient uploads', () => {
  it('stops an upload when its signal aborts, and retries a file after a server error', async () => {
    let uploads = 0;
    const { server, client } = await serve((request, response) => {
      const json = (body: unknown, status = 200) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      request.resume();
      request.on('end', () => {
        if (request.url?.startsWith('/task/new/init')) return json({ uuid: 'u-1' });
        if (request.url?.startsWith('/task/new/upload/')) return ++uploads === 1 ? json({}, 502) : json({ success: true });
        if (request.url?.startsWith('/task/new/commit/')) return json({ uuid: 'u-1' });
        json({ error: 'unexpected' });
      });
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'aeromap-upload-'));
    try {
      const files = ['a.jpg', 'b.jpg'].map((name) => ({ name, path: path.join(dir, name) }));
      for (const file of files) await writeFile(file.path, randomBytes(1000));
      const progress: number[] = [];
      expect(await client.createTask(files, { onProgress: (f) => progress.push(f), parallelUploads: 1 })).toBe('u-1');
      expect(uploads).toBe(3);
      // By bytes as they go out; the failed attempt's bytes are taken back before the file is sent again.
      expect(progress).toEqual([0.5, 0.5, 1]);

      const controller = new AbortController();
      controller.abort(new Error('canceled by the user'));
      await expect(client.createTask(files, { signal: controller.signal })).rejects.toThrow('canceled by the user');
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
