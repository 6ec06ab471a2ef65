// Task benchmark, over loopback with `aeromap serve` and its embedded node in a child process:
//   1. upload throughput: a client's upload to the service, the service's upload to the node, and the node's
//      own rate for the same files (a direct upload with the node client), with the quick stand-in engine;
//   2. the time the service adds between the node finishing a task and the task being COMPLETED (download and
//      unpacking of all.zip), on the real engine with Brighton Beach;
//   3. latency of the task list and task detail with 100 tasks in the project.
//
//   npx tsx bench/tasks.ts [--files 4] [--file-mb 100] [--images 18] [--skip-engine] [--requests 2000] [--concurrency 8]
//                          [--postgres]   (3. again on PostgreSQL: AEROMAP_BENCH_POSTGRES_URL, a schema of its own)
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { NodeClient } from '../src/nodeclient/index.ts';
import { isolatedDatabase } from '../test/service/helpers.ts';
import { HttpClient, LATENCY_HEADER, type RunningService, latencyRow, measureLatency, startService } from './lib/service.ts';

const { values: args } = parseArgs({
  options: {
    files: { type: 'string', default: '4' },
    'file-mb': { type: 'string', default: '100' },
    images: { type: 'string', default: '18' },
    'skip-engine': { type: 'boolean', default: false },
    requests: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    postgres: { type: 'boolean', default: false },
  },
});
const REPO = fileURLToPath(new URL('..', import.meta.url));
const BRIGHTON = path.join(REPO, '..', 'shared', 'datasets', 'brighton_beach', 'images');
const ADMIN = { AEROMAP_ADMIN_USERNAME: 'bench', AEROMAP_ADMIN_PASSWORD: 'bench', PASSWORD_ITERATIONS: '1000' };
const POSTGRES_URL = process.env.AEROMAP_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const http = new HttpClient(Number(args.concurrency));
// A step that fails half-way must not leave a service behind: its piped stdout would keep this process alive.
const running: RunningService[] = [];

interface Task {
  id: number;
  uuid: string;
  status: number | null;
  processing_time: number;
  last_error: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mbps = (bytes: number, ms: number) => `${(bytes / 2 ** 20 / (ms / 1000)).toFixed(0)} MB/s`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** Files that pass the service's JPEG check (start and end markers) for the stand-in engine, which does not decode. */
async function jpegLikeFiles(dir: string, count: number, megabytes: number): Promise<string[]> {
  const block = randomBytes(2 ** 20);
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `BIG_${i}.JPG`);
    const out = createWriteStream(file);
    out.write(Buffer.from([0xff, 0xd8, 0xff, 0xe0]));
    for (let mb = 0; mb < megabytes; mb++) if (!out.write(block)) await once(out, 'drain');
    out.end(Buffer.from([0xff, 0xd9]));
    await once(out, 'finish');
    files.push(file);
  }
  return files;
}

/** Starts a service with its embedded node on a known port; answers it, a token and the node's token. */
async function serviceWithNode(dataDir: string, engine: Record<string, string>) {
  const nodePort = await freePort();
  const service = await startService({ DATA_DIR: dataDir, EMBEDDED_NODE_PORT: String(nodePort), TASK_POLL_SECONDS: '0.2', ...ADMIN, ...engine });
  running.push(service);
  const token = await http.login(service.url, 'bench', 'bench');
  type Node = { online: boolean; token: string };
  let nodes: Node[] = [];
  for (const until = Date.now() + 30_000; !nodes.some((node) => node.online) && Date.now() < until; await sleep(200)) {
    nodes = await http.json<Node[]>(`${service.url}/api/processingnodes/`, 'GET', token);
  }
  const node = new NodeClient({ hostname: '127.0.0.1', port: nodePort, token: nodes[0].token });
  const projectId = (await http.json<{ id: number }>(`${service.url}/api/projects/`, 'POST', token, { name: 'bench' })).id;
  return { service, token, node, projectId };
}

async function createTask(service: RunningService, token: string, projectId: number, files: string[], options: object[]) {
  const form = new FormData();
  form.append('options', JSON.stringify(options));
  for (const file of files) form.append('images', await openAsBlob(file), path.basename(file));
  const response = await fetch(`${service.url}/api/projects/${projectId}/tasks/`, { method: 'POST', headers: { authorization: `JWT ${token}` }, body: form });
  if (response.status !== 201) throw new Error(`task creation answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Task;
}

async function pollTask(service: RunningService, token: string, projectId: number, id: number, until: (task: Task) => boolean): Promise<Task> {
  for (;;) {
    const task = await http.json<Task>(`${service.url}/api/projects/${projectId}/tasks/${id}/`, 'GET', token);
    if (until(task)) return task;
    if (task.status === 30) throw new Error(`task ${id} failed: ${task.last_error}`);
    await sleep(20);
  }
}

async function benchUploads(work: string): Promise<{ service: RunningService; token: string; projectId: number }> {
  const files = await jpegLikeFiles(work, Number(args.files), Number(args['file-mb']));
  const bytes = Number(args.files) * (Number(args['file-mb']) * 2 ** 20 + 6);
  const { service, token, node, projectId } = await serviceWithNode(path.join(work, 'data'), {
    AEROMAP_ENGINE: path.join(REPO, 'test', 'pyodm', 'fake_engine.py'),
  });
  let started = performance.now();
  const task = await createTask(service, token, projectId, files, []);
  const toService = performance.now() - started;
  started = performance.now();
  await pollTask(service, token, projectId, task.id, (seen) => seen.uuid !== '');
  const toNode = performance.now() - started;
  started = performance.now();
  await node.createTask(files.map((file) => ({ name: path.basename(file), path: file })));
  const direct = performance.now() - started;
  console.log(`upload of ${files.length} x ${args['file-mb']} MB:`);
  console.log(`  client -> service          ${mbps(bytes, toService)}`);
  console.log(`  service -> embedded node   ${mbps(bytes, toNode)}  (${((direct / toNode) * 100).toFixed(0)} % of the node's own rate; target >= 80 %)`);
  console.log(`  node client -> node        ${mbps(bytes, direct)}  (the node's own rate for these files)`);
  await pollTask(service, token, projectId, task.id, (seen) => seen.status === 40);
  return { service, token, projectId };
}

async function benchCompletion(work: string): Promise<void> {
  const images = (await readdir(BRIGHTON)).filter((name) => name.endsWith('.JPG')).sort().slice(0, Number(args.images));
  const { service, token, node, projectId } = await serviceWithNode(path.join(work, 'engine'), {});
  try {
    const task = await createTask(service, token, projectId, images.map((name) => path.join(BRIGHTON, name)), [{ name: 'dsm', value: true }]);
    const { uuid } = await pollTask(service, token, projectId, task.id, (seen) => seen.uuid !== '');
    // The node and the service are asked in turn every 20 ms; the gap is when each first says COMPLETED.
    let nodeDone = 0;
    let done: Task | undefined;
    while (!done) {
      if (!nodeDone && (await node.taskInfo(uuid)).status.code === 40) nodeDone = performance.now();
      const seen = await http.json<Task>(`${service.url}/api/projects/${projectId}/tasks/${task.id}/`, 'GET', token);
      if (seen.status === 30) throw new Error(`task failed: ${seen.last_error}`);
      if (seen.status === 40) done = seen;
      else await sleep(20);
    }
    const zip = await fetch(`${service.url}/api/projects/${projectId}/tasks/${task.id}/download/all.zip`, { headers: { authorization: `JWT ${token}` } });
    await zip.body?.cancel();
    console.log(`Brighton Beach, ${images.length} images, real engine (dsm):`);
    console.log(`  processing on the node     ${(done.processing_time / 1000).toFixed(1)} s`);
    console.log(`  all.zip                    ${(Number(zip.headers.get('content-length')) / 2 ** 20).toFixed(0)} MB`);
    console.log(`  node COMPLETED -> task COMPLETED   ${((performance.now() - nodeDone) / 1000).toFixed(2)} s (target < 5 s)`);
  } finally {
    await service.stop();
  }
}

/** Fills the project up to 100 tasks with partial ones (`existing` are there already) and measures list and detail. */
async function benchLatency(service: RunningService, token: string, projectId: number, backend: string, existing: number): Promise<void> {
  const base = `${service.url}/api/projects/${projectId}/tasks/`;
  let lastId = 0;
  for (let i = existing; i < 100; i++) lastId = (await http.json<Task>(base, 'POST', token, { partial: true, name: `Task ${i}` })).id;
  const load = { requests: Number(args.requests), concurrency: Number(args.concurrency), timeLimitMs: 30_000 };
  console.log(`${backend}, 100 tasks, ${load.requests} requests per endpoint, ${load.concurrency} in flight:`);
  console.log(LATENCY_HEADER);
  console.log(latencyRow('GET .../tasks/', await measureLatency(http, base, token, load)));
  console.log(latencyRow('GET .../tasks/{id}/', await measureLatency(http, `${base}${lastId}/`, token, load)));
}

/** The same latency figures on PostgreSQL; no node is needed for partial tasks. */
async function benchLatencyPostgres(): Promise<void> {
  const database = await isolatedDatabase('postgres', POSTGRES_URL);
  try {
    const service = await startService({ DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? '', ...(database.databaseUrl ? { SECRET_KEY: 'bench' } : {}), EMBEDDED_NODE: 'false', ...ADMIN });
    running.push(service);
    const token = await http.login(service.url, 'bench', 'bench');
    const projectId = (await http.json<{ id: number }>(`${service.url}/api/projects/`, 'POST', token, { name: 'bench' })).id;
    await benchLatency(service, token, projectId, 'postgres', 0);
    // Stopped before the schema goes, so that no open connection holds it.
    await service.stop();
  } finally {
    await database.drop();
  }
}

const work = await mkdtemp(path.join(tmpdir(), 'aeromap-bench-tasks-'));
try {
  const { service, token, projectId } = await benchUploads(work);
  await benchLatency(service, token, projectId, 'sqlite', 1);
  await service.stop();
  if (args.postgres) await benchLatencyPostgres();
  if (!args['skip-engine']) await benchCompletion(work);
} finally {
  for (const service of running) await service.stop();
  await http.close();
  await rm(work, { recursive: true, force: true });
}
