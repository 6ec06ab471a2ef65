import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, type RunningNode } from '../../src/node/index.ts';

const FAKE_ENGINE = fileURLToPath(new URL('../pyodm/fake_engine.py', import.meta.url));

interface TaskInfo {
  status: { code: number; errorMessage?: string };
  progress: number;
  output?: string[];
}

async function json<T = unknown>(url: string, init?: RequestInit): Promise<T> {
  const response = await fetch(url, init);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('application/json');
  return (await response.json()) as T;
}

function form(files: Record<string, string>, fields: Record<string, string>): FormData {
  const data = new FormData();
  // Files first, fields last, as CloudODM sends them.
  for (const [name, content] of Object.entries(files)) data.append('images', new Blob([content]), name);
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  return data;
}

async function waitFor(base: string, uuid: string, codes: number[]): Promise<TaskInfo> {
  for (let i = 0; i < 600; i++) {
    const info = await json<TaskInfo>(`${base}/task/${uuid}/info`);
    if (codes.includes(info.status.code)) return info;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`task ${uuid} never reached ${codes}`);
}

describe('processing node over HTTP, in process', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-http-'));
  let node: RunningNode;
  let base: string;

  beforeAll(async () => {
    node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });
    base = `http://127.0.0.1:${node.port}`;
  });
  afterAll(async () => node.close());

  it('answers errors as NodeODM does: HTTP 200 with an error field', async () => {
    expect(await json(`${base}/task/nope/info`)).toEqual({ error: 'nope not found' });
    expect(await json(`${base}/task/nope/download/all.zip`)).toEqual({ error: 'nope not found' });
    expect(await json(`${base}/task/remove`, { method: 'POST' })).toEqual({ error: 'uuid param missing.' });
    expect(await json(`${base}/task/new/commit/nope`, { method: 'POST' })).toEqual({
      error: 'Invalid uuid (not found)',
    });
    const broken = await json<{ error: string }>(`${base}/task/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{broken',
    });
    expect(broken.error).toBeTruthy();
  });

  it('keeps two photographs of one name from two flights, and a file sent again once', async () => {
    const { uuid } = await json<{ uuid: string }>(`${base}/task/new/init`, { method: 'POST', body: form({}, {}) });
    const send = (content: string) => json(`${base}/task/new/upload/${uuid}`, { method: 'POST', body: form({ 'DJI_0001.JPG': content }, {}) });
    for (const content of ['first flight', 'second flight', 'second flight', 'first flight']) expect(await send(content)).toEqual({ success: true });
    const files = path.join(dataDir, 'uploads', uuid, 'files');
    expect(fs.readdirSync(files).sort()).toEqual(['DJI_0001.JPG', 'DJI_0001_1.JPG']);
    expect(fs.readFileSync(path.join(files, 'DJI_0001.JPG'), 'utf8')).toBe('first flight');
    expect(fs.readFileSync(path.join(files, 'DJI_0001_1.JPG'), 'utf8')).toBe('second flight');
  });

  it('leaves out options it does not know and names them in the console, at the start and at a restart', async () => {
    const { uuid } = await json<{ uuid: string }>(`${base}/task/new`, {
      method: 'POST',
      body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: '[{"name": "radiometric-calibration", "value": "camera"}, {"name": "fake-seconds", "value": 0}, {"name": "3d-tiles", "value": true}]' }),
    });
    await waitFor(base, uuid, [40]);
    const output = async () => (await json<string[]>(`${base}/task/${uuid}/output?line=0`)).filter((line) => line.includes('does not know'));
    expect(await output()).toEqual(['[WARNING] This processing node does not know these options, ignored: radiometric-calibration, 3d-tiles']);
    const restarted = await json(`${base}/task/restart`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uuid, options: [{ name: 'vegetation', value: 1 }] }),
    });
    expect(restarted).toEqual({ success: true });
    await waitFor(base, uuid, [40]);
    expect(await output()).toEqual(['[WARNING] This processing node does not know this option, ignored: vegetation']);
  });

  it('serves all.zip whole and in byte ranges', async () => {
    const { uuid } = await json<{ uuid: string }>(`${base}/task/new`, {
      method: 'POST',
      body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: '[{"name": "fake-output-mb", "value": 2}]' }),
    });
    await waitFor(base, uuid, [40]);
    const url = `${base}/task/${uuid}/download/all.zip`;
    const whole = Buffer.from(await (await fetch(url)).arrayBuffer());
    const size = whole.length;
    expect(size).toBeGreaterThan(2 * 2 ** 20);

    const tail = await fetch(url, { headers: { Range: 'bytes=-100' } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(`bytes ${size - 100}-${size - 1}/${size}`);
    // Buffer.equals: a deep comparison of a megabyte byte by byte would take seconds.
    expect(Buffer.from(await tail.arrayBuffer()).equals(whole.subarray(size - 100))).toBe(true);

    const middle = await fetch(url, { headers: { Range: 'bytes=1000-1048575' } });
    expect(middle.status).toBe(206);
    expect(middle.headers.get('content-length')).toBe(String(1048575 - 1000 + 1));
    expect(Buffer.from(await middle.arrayBuffer()).equals(whole.subarray(1000, 1048576))).toBe(true);

    const beyond = await fetch(url, { headers: { Range: `bytes=${size}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${size}`);
    await beyond.arrayBuffer();
  });

  it('stops its engines on close and resumes their tasks when started again', async () => {
    const { uuid } = await json<{ uuid: string }>(`${base}/task/new`, {
      method: 'POST',
      body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: '[{"name": "fake-seconds", "value": 1}]' }),
    });
    await waitFor(base, uuid, [20]);
    await node.close();
    node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });
    base = `http://127.0.0.1:${node.port}`;
    const info = await waitFor(base, uuid, [40, 30]);
    expect(info.status.code).toBe(40);
    const output = (await json<string[]>(`${base}/task/${uuid}/output?line=0`)).join('\n');
    expect(output).toContain('resuming the task');
  });
});

const BIN = fileURLToPath(new URL('../../bin/aeromap', import.meta.url));

/** `aeromap node` on this folder in a process of its own, once it listens: the process and its port. */
async function nodeProcess(dataDir: string, flags: string[] = [], env = process.env): Promise<{ child: ChildProcess; port: number }> {
  const args = ['node', '--port', '0', '--data-dir', dataDir, '--engine', FAKE_ENGINE, ...flags];
  const child = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const line = /listening on http:\/\/[\d.]+:(\d+)/.exec(chunk.toString());
      if (line) resolve(Number(line[1]));
    });
    child.once('exit', (code) => reject(new Error(`aeromap node exited with ${code}`)));
  });
  return { child, port };
}

describe('one node per data folder', () => {
  const start = (dataDir: string) => startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });

  it('refuses a second node while the first runs, and takes the folder once the first was killed', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-lock-'));
    const { child: first } = await nodeProcess(dataDir);
    const exited = new Promise((resolve) => first.once('exit', resolve));
    await expect(start(dataDir)).rejects.toThrow(`Another processing node uses ${dataDir}`);
    first.kill('SIGKILL');
    await exited;
    const second = await start(dataDir);
    // While it runs, the folder is refused to others in this process too.
    await expect(start(dataDir)).rejects.toThrow('Another processing node');
    await second.close();
    await (await start(dataDir)).close();
  }, 60_000);

  it('is not held up by a lock file of an earlier version naming a live process, this one', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-lock-'));
    fs.writeFileSync(path.join(dataDir, 'node.lock'), String(process.pid));
    const node = await start(dataDir);
    await expect(start(dataDir)).rejects.toThrow('Another processing node');
    await node.close();
  });
});

/** `aeromap node` with these flags, until it says where it listens: that line and what it wrote to stderr. */
async function nodeCommand(flags: string[]): Promise<{ listening: string; warnings: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-command-'));
  const child = spawn(BIN, ['node', '--port', '0', '--data-dir', dataDir, '--engine', FAKE_ENGINE, ...flags]);
  let stdout = '';
  let warnings = '';
  child.stderr.on('data', (chunk: Buffer) => (warnings += chunk.toString()));
  try {
    const listening = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = /listening on \S+/.exec(stdout);
        if (line) resolve(line[0]);
      });
      child.once('exit', (code) => reject(new Error(`aeromap node exited with ${code}: ${stdout}${warnings}`)));
    });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the warning follows the line
    return { listening, warnings };
  } finally {
    child.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('a standalone node on the network', () => {
  it('listens on loopback unless told otherwise, and warns when it is opened without a token', async () => {
    const local = await nodeCommand([]);
    expect(local.listening).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    expect(local.warnings).toBe('');
    const open = await nodeCommand(['--host', '0.0.0.0']);
    expect(open.listening).toMatch(/^listening on http:\/\/0\.0\.0\.0:\d+$/);
    expect(open.warnings).toMatch(/without --token, anyone who reaches 0\.0\.0\.0:\d+ can submit and remove tasks/);
    const guarded = await nodeCommand(['--host', '0.0.0.0', '--token', 'secret']);
    expect(guarded.warnings).toBe('');
  }, 60_000);
});

describe('requests from web pages', () => {
  it('refuses browser requests from other origins, unless named, and serves the rest', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-origin-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, corsOrigins: ['https://maps.example.org'] });
    const base = `http://127.0.0.1:${node.port}`;
    try {
      // A page elsewhere posting a form (no preflight needed): refused before anything is created.
      const forged = await fetch(`${base}/task/new/init`, { method: 'POST', headers: { origin: 'https://evil.example' }, body: new URLSearchParams({ name: 'x' }) });
      expect(forged.status).toBe(403);
      expect((await forged.json()).error).toMatch(/--cors-origin https:\/\/evil\.example/);
      expect((await (await fetch(`${base}/info`)).json()).taskQueueCount).toBe(0);
      // The node's own origin, a named web application (with CORS headers), and clients that send no Origin.
      expect((await fetch(`${base}/info`, { headers: { origin: base } })).status).toBe(200);
      const named = await fetch(`${base}/info`, { headers: { origin: 'https://maps.example.org' } });
      expect(named.status).toBe(200);
      expect(named.headers.get('access-control-allow-origin')).toBe('https://maps.example.org');
      expect((await fetch(`${base}/task/new/init`, { method: 'POST', body: new URLSearchParams({ name: 'x' }) })).status).toBe(200);
    } finally {
      await node.close();
    }
  });
});

/** A GET with this Host header (fetch would send the URL's): the status and the JSON body. */
function getWithHost(port: number, pathname: string, host: string, origin?: string): Promise<{ status: number; body: { error?: string } }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host, ...(origin ? { origin } : {}) };
    http.get({ host: '127.0.0.1', port, path: pathname, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

describe('requests for other host names (DNS rebinding)', () => {
  it('answers a node without a token only for loopback and the names it is given', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-hosts-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, allowedHosts: ['Maps.Internal'] });
    const { port } = node;
    try {
      // A page on attacker.example, whose DNS now says 127.0.0.1, calling the node as its own origin.
      const rebound = await getWithHost(port, '/task/list', `attacker.example:${port}`, `http://attacker.example:${port}`);
      expect(rebound.status).toBe(403);
      expect(rebound.body.error).toMatch(/no request for host "attacker\.example:\d+".*--allowed-hosts/);
      expect((await getWithHost(port, '/info', 'attacker.example')).status).toBe(403);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'localhost', `maps.internal:${port}`]) {
        expect((await getWithHost(port, '/task/list', host)).status, host).toBe(200);
      }
    } finally {
      await node.close();
    }
  });

  it('answers a node with a token for any host name', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-hosts-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, token: 'secret' });
    try {
      expect((await getWithHost(node.port, '/task/list?token=secret', 'node.example.org')).status).toBe(200);
    } finally {
      await node.close();
    }
  });

  it('takes the names from --allowed-hosts or AEROMAP_NODE_ALLOWED_HOSTS', async () => {
    const env = { ...process.env, AEROMAP_NODE_ALLOWED_HOSTS: 'maps.internal,nodes.internal' };
    for (const [flags, environment] of [[['--allowed-hosts', 'maps.internal', 'nodes.internal'], process.env], [[], env]] as const) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-hosts-'));
      const { child, port } = await nodeProcess(dataDir, [...flags], environment);
      try {
        expect((await getWithHost(port, '/info', 'nodes.internal')).status).toBe(200);
        expect((await getWithHost(port, '/info', 'other.internal')).status).toBe(403);
      } finally {
        child.kill('SIGTERM');
      }
    }
  }, 60_000);
});

describe('a node whose disk is nearly full', () => {
  it('refuses uploads with a clear error instead of filling the disk', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-full-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, minFreeBytes: 2 ** 60 });
    const base = `http://127.0.0.1:${node.port}`;
    try {
      const answer = await json<{ error?: string }>(`${base}/task/new`, { method: 'POST', body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, {}) });
      expect(answer.error).toMatch(/disk is nearly full/);
    } finally {
      await node.close();
    }
  });
});

describe('a node with a time limit', () => {
  it('stops an engine that runs too long and fails its task with the reason', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-runtime-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, maxRuntimeMs: 1500 });
    const base = `http://127.0.0.1:${node.port}`;
    try {
      const { uuid } = await json<{ uuid: string }>(`${base}/task/new`, {
        method: 'POST',
        body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: '[{"name": "fake-seconds", "value": 30}]' }),
      });
      const info = await waitFor(base, uuid, [30, 40]);
      expect(info.status).toMatchObject({ code: 30, errorMessage: 'The task ran longer than this node allows (0.03 minutes, --max-runtime)' });
    } finally {
      await node.close();
    }
  });
});

describe('a node with a memory limit', () => {
  it('stops an engine whose processes hold more and fails its task with the reason', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-memory-'));
    const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, maxMemoryBytes: 200 * 2 ** 20 });
    const base = `http://127.0.0.1:${node.port}`;
    try {
      const { uuid } = await json<{ uuid: string }>(`${base}/task/new`, {
        method: 'POST',
        body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: '[{"name": "fake-seconds", "value": 30}, {"name": "fake-memory-mb", "value": 400}]' }),
      });
      const info = await waitFor(base, uuid, [30, 40]);
      expect(info.status).toMatchObject({ code: 30, errorMessage: 'The task needed more memory than this node allows (0.2 GB, --max-memory)' });
      // The engine is told its share, to size its work by.
      expect(fs.readFileSync(path.join(dataDir, 'tasks', uuid, 'fake', 'memory_limit'), 'utf8')).toBe(String(200 * 2 ** 20));
    } finally {
      await node.close();
    }
  });
});

describe('bounded uploads', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-bounds-'));
  let node: RunningNode;
  let base: string;
  beforeAll(async () => {
    node = await startNode({ dataDir, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, maxImages: 2 });
    base = `http://127.0.0.1:${node.port}`;
  });
  afterAll(async () => node.close());

  it('refuses images beyond --max-images as they arrive, before any task exists', async () => {
    const answer = await json<{ error?: string }>(`${base}/task/new`, { method: 'POST', body: form({ 'a.jpg': 'a', 'b.jpg': 'b', 'c.jpg': 'c', 'gcp_list.txt': 'x' }, {}) });
    expect(answer.error).toBe('More than 2 images uploaded, but this node can only process up to 2.');
    const { uuid } = await json<{ uuid: string }>(`${base}/task/new/init`, { method: 'POST', body: form({}, {}) });
    expect(await json(`${base}/task/new/upload/${uuid}`, { method: 'POST', body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, {}) })).toEqual({ success: true });
    const third = await json<{ error?: string; noRetry?: boolean }>(`${base}/task/new/upload/${uuid}`, { method: 'POST', body: form({ 'c.jpg': 'c' }, {}) });
    expect(third.error).toMatch(/^More than 2 images/);
    expect(third.noRetry).toBe(true);
    expect(fs.readdirSync(path.join(dataDir, 'uploads', uuid, 'files')).sort()).toEqual(['a.jpg', 'b.jpg']);
    expect(await json(`${base}/task/list`)).toEqual([]);
  });

  it('refuses a field too long to hold in memory, and too many fields', async () => {
    const long = await json<{ error?: string }>(`${base}/task/new`, { method: 'POST', body: form({ 'a.jpg': 'a', 'b.jpg': 'b' }, { options: 'x'.repeat(5 * 2 ** 20) }) });
    expect(long.error).toBe('The field options is longer than 4 MB');
    const fields = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, 'v']));
    const many = await json<{ error?: string }>(`${base}/task/new`, { method: 'POST', body: form({ 'a.jpg': 'a' }, fields) });
    expect(many.error).toBe('More than 200 fields in one request');
    expect(await json(`${base}/task/list`)).toEqual([]);
  });

  it('stops a file that would take the disk into its reserve as it comes, and keeps nothing of it', async () => {
    const small = fs.mkdtempSync(path.join(os.tmpdir(), 'node-room-'));
    const free = fs.statfsSync(small);
    // Room for 1 MB above the reserve, for a 64 MB upload.
    const reserve = free.bavail * free.bsize - 2 ** 20;
    const tight = await startNode({ dataDir: small, port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, minFreeBytes: reserve });
    try {
      const body = new FormData();
      body.append('images', new Blob([new Uint8Array(64 * 2 ** 20)]), 'big.jpg');
      body.append('images', new Blob(['b']), 'b.jpg');
      const answer = await json<{ error?: string }>(`http://127.0.0.1:${tight.port}/task/new`, { method: 'POST', body });
      expect(answer.error).toMatch(/disk is nearly full/);
      const left = fs.readdirSync(path.join(small, 'uploads'));
      expect(left).toEqual([]);
    } finally {
      await tight.close();
    }
  });
});
