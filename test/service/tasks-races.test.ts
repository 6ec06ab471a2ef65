// The task state machine against races and failures, over real HTTP with the stand-in node: a user's cancel or
// remove sent during an upload, an extraction or a tile build always wins and leaves nothing behind; a lease
// that runs out mid-step never lets a step run twice; a failing step ends FAILED after bounded retries; long
// uploads never hold back another task's poll or cancel; and a service stopped between a node's init and
// commit goes on with the same node task.
import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yazl from 'yazl';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceConfig } from '../../src/service/config.ts';
import { type Service, buildService } from '../../src/service/app.ts';
import { type FakeNode, startFakeNode } from './fakenode.ts';
import { ADMIN, BACKENDS, QUICK_BACKENDS, type Backend, Client, isolatedDatabase, testConfig } from './helpers.ts';
import { TaskStatus, finished, imageForm, makeJpegs, postForm, waitForTask } from './taskhelpers.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let work: string;
let images: string[];
let manyEntriesZip: string;
let orthophotoZip: string;
let plainZip: string;
const TILES_PID = () => path.join(work, 'tiles.pid');

async function writeZip(file: string, entries: [string, Buffer][]): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [name, data] of entries) zip.addBuffer(data, name);
  zip.end();
  const out = createWriteStream(file);
  zip.outputStream.pipe(out);
  await once(out, 'finish');
  return file;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'aeromap-races-'));
  images = await makeJpegs(path.join(work, 'images'), 3);
  // An engine whose `tiles` command takes long: the pid it leaves shows whether it was stopped.
  const engine = path.join(work, 'engine.sh');
  await writeFile(engine, `#!/bin/sh\necho $$ > "${TILES_PID()}"\nexec sleep 60\n`);
  await chmod(engine, 0o755);
  process.env.AEROMAP_ENGINE = engine;
  const small = Buffer.alloc(64, 1);
  manyEntriesZip = await writeZip(path.join(work, 'many.zip'), Array.from({ length: 6000 }, (_, i) => [`odm_texturing/part_${i}.txt`, small]));
  plainZip = await writeZip(path.join(work, 'plain.zip'), [['odm_report/report.txt', small]]);
  orthophotoZip = await writeZip(path.join(work, 'ortho.zip'), [['odm_orthophoto/odm_orthophoto.tif', small]]);
}, 60_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

interface Instance {
  service: Service;
  admin: Client;
}

/** A service on a database that outlives it (so that a second instance, or a restart, can share it). */
async function sharedDatabase(backend: Backend) {
  const database = await isolatedDatabase(backend);
  const instances: Service[] = [];
  const start = async (tasks: Partial<ServiceConfig['tasks']> = {}): Promise<Instance> => {
    const base = testConfig(database.dataDir, database.databaseUrl);
    const service = await buildService({ ...base, tasks: { ...base.tasks, leaseMs: 1500, ...tasks } });
    instances.push(service);
    const url = await service.listen();
    const token = (await new Client(url).post('/api/token-auth/', ADMIN)).body.token;
    return { service, admin: new Client(url, token) };
  };
  const close = async () => {
    for (const service of instances) await service.close().catch(() => undefined);
    await database.drop();
  };
  return { dataDir: database.dataDir, start, close };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** A service and the stand-in node it knows, with a project. */
async function setUp(backend: Backend, tasks: Partial<ServiceConfig['tasks']> = {}) {
  const node = await startFakeNode();
  node.tasks.allZip = plainZip;
  cleanups.push(() => node.close());
  const database = await sharedDatabase(backend);
  cleanups.push(database.close);
  const first = await database.start(tasks);
  await first.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port });
  await first.service.refresher.refreshAll();
  const projectId = (await first.admin.post('/api/projects/', { name: 'races' })).body.id as number;
  const tasksUrl = `/api/projects/${projectId}/tasks/`;
  const create = async (admin = first.admin) => {
    const created = await postForm(admin, tasksUrl, await imageForm(images));
    expect(created.status).toBe(201);
    return { id: created.body.id as number, url: `${tasksUrl}${created.body.id}/` };
  };
  const taskDir = (id: number) => path.join(database.dataDir, 'media', 'project', String(projectId), 'task', String(id));
  return { node, database, first, projectId, create, taskDir };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) expect.fail(`${what} did not happen in time`);
    await sleep(20);
  }
}

const liveNodeTasks = (node: FakeNode) => [...node.committed.values()].filter((task) => !task.canceled).length;

type Action = 'cancel' | 'remove';

/** Sends the action, and checks that it won: canceled with no node task running, or gone with its files. */
async function actionWins(admin: Client, task: { id: number; url: string }, action: Action, node: FakeNode, folder: string) {
  expect((await admin.post(`${task.url}${action}/`)).body).toEqual({ success: true });
  if (action === 'cancel') {
    const done = await waitForTask(admin, task.url, finished, 20_000);
    expect(done.status).toBe(TaskStatus.CANCELED);
    // Whatever the step was doing when the cancel came, it never comes back to complete the task.
    await sleep(1500);
    expect((await admin.get(task.url)).body.status).toBe(TaskStatus.CANCELED);
  } else {
    await until('the removal', async () => (await admin.get(task.url)).status === 404);
    await sleep(500);
    expect(existsSync(folder)).toBe(false);
    expect(node.committed.size).toBe(0);
  }
  expect(liveNodeTasks(node)).toBe(0);
}

describe.each(QUICK_BACKENDS)('races with the user on %s', (backend) => {
  it.each(['cancel', 'remove'] as const)('a %s sent while the node takes the upload (its commit in flight) wins', async (action) => {
    const { node, first, create, taskDir } = await setUp(backend);
    node.tasks.uploadDelayMs = 300;
    node.tasks.commitDelayMs = 2500;
    const task = await create();
    await until('the commit', () => node.requests.some((request) => request.path.startsWith('/task/new/commit/')));
    await actionWins(first.admin, task, action, node, taskDir(task.id));
    // The node did commit the task, and was told to cancel or remove it.
    await until('the node to take the commit', () => node.inits.length === 1 && node.requests.some((r) => r.path === `/task/${action}`), 5000);
  }, 30_000);

  it.each(['cancel', 'remove'] as const)('a %s sent during the extraction of the results wins', async (action) => {
    const { node, first, create, taskDir } = await setUp(backend);
    node.tasks.allZip = manyEntriesZip;
    const task = await create();
    await until('the extraction', () => existsSync(path.join(taskDir(task.id), 'work', 'assets.next', 'odm_texturing')));
    await actionWins(first.admin, task, action, node, taskDir(task.id));
    if (action === 'cancel') expect(existsSync(path.join(taskDir(task.id), 'assets', 'odm_texturing'))).toBe(false);
  }, 30_000);

  it.each(['cancel', 'remove'] as const)('a %s sent while tiles are built wins and stops the engine', async (action) => {
    const { node, first, create, taskDir } = await setUp(backend);
    node.tasks.allZip = orthophotoZip;
    await rm(TILES_PID(), { force: true });
    const task = await create();
    await until('the tile build', () => existsSync(TILES_PID()));
    const pid = Number((await readFile(TILES_PID(), 'utf8')).trim());
    await actionWins(first.admin, task, action, node, taskDir(task.id));
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // A killed process is gone once its parent has reaped it, which a machine busy with the suite can delay.
    await until('the engine to stop', () => !alive(), 20_000);
  }, 60_000);
});

describe.each(BACKENDS)('the lease of a step on %s', (backend) => {
  it('runs out mid-upload with a second instance present: the node gets one task, the first instance stops', async () => {
    const { node, database, first, create } = await setUp(backend);
    node.tasks.uploadDelayMs = 5000;
    const task = await create();
    await until('the upload', () => node.requests.some((request) => request.path.startsWith('/task/new/upload/')));
    const second = await database.start();
    // As after a database outage longer than the lease: the first instance's lease has run out.
    await first.service.db.updateTable('tasks').set({ lease_until: '2000-01-01T00:00:00.000Z' }).where('id', '=', task.id).execute();
    node.tasks.uploadDelayMs = 0;
    const done = await waitForTask(second.admin, task.url, finished, 20_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(node.inits).toHaveLength(1);
    expect([...node.committed.keys()]).toEqual(node.inits);
    expect(done.uuid).toBe(node.inits[0]);
    // The first instance gave up its upload (held by the node, it would otherwise still be in flight).
    await until('the first instance to give up its upload', () => node.abortedUploads >= 1, 20_000);
  }, 60_000);
});

describe.each(QUICK_BACKENDS)('failures on %s', (backend) => {
  it('a step that keeps failing ends the task FAILED with its reason, which shows while it is retried', async () => {
    const { first, create, taskDir } = await setUp(backend, { maxAttempts: 3, retryBackoffMs: 200 });
    const scheduler = first.service.scheduler;
    await scheduler.stop();
    const task = await create();
    await rm(path.join(taskDir(task.id), 'images'), { recursive: true });
    scheduler.start();
    const retrying: string[] = [];
    const done = await waitForTask(first.admin, task.url, finished, 20_000, (seen) => {
      if (!finished(seen)) {
        expect(seen.status === null || seen.last_error !== null, JSON.stringify(seen)).toBe(true);
        if (seen.last_error) retrying.push(seen.last_error);
      }
    });
    expect(done.status).toBe(TaskStatus.FAILED);
    expect(done.last_error).toBe("The task's images cannot be read (ENOENT). (gave up after 3 attempts)");
    expect(retrying).toContain("Attempt 1 of 3 failed, trying again in 1 s: The task's images cannot be read (ENOENT).");
    const output = (await first.admin.get(`${task.url}output/`)).body as string;
    expect(output.trim().split('\n').at(-1)).toBe(`[ERROR] ${done.last_error}`);
  }, 30_000);

  it.runIf(backend === 'sqlite')("a proxy's answers without progress keep the task running, and its failure shows", async () => {
    const { node, first, create } = await setUp(backend);
    node.tasks.taskStatus = TaskStatus.RUNNING;
    node.tasks.infoShape = 'proxy';
    const task = await create();
    const polls = () => node.requests.filter((r) => r.path.endsWith('/info')).length;
    await until('three polls of the forwarded task', () => polls() >= 3, 10_000);
    // The third answer may still be on its way into the task's row: the status is waited for, not read once.
    const running = await waitForTask(first.admin, task.url, (seen) => seen.status === TaskStatus.RUNNING, 10_000);
    expect(running.last_error).toBeNull();
    await until('three more polls', () => polls() >= 6, 10_000);
    expect((await first.admin.get(task.url)).body.status).toBe(TaskStatus.RUNNING);
    node.tasks.taskStatus = TaskStatus.FAILED;
    node.tasks.errorMessage = 'Cannot forward task abc to processing node 10.0.0.5:3000: Failed to upload images';
    const done = await waitForTask(first.admin, task.url, finished, 10_000);
    expect(done.status).toBe(TaskStatus.FAILED);
    expect(done.last_error).toBe(node.tasks.errorMessage);
  }, 30_000);

  it('four uploads held in flight never delay a fifth task: its polls go on and its cancel takes effect', async () => {
    const { node, first, create } = await setUp(backend);
    node.tasks.taskStatus = TaskStatus.RUNNING;
    const fifth = await create();
    const running = await waitForTask(first.admin, fifth.url, (task) => task.status === TaskStatus.RUNNING, 10_000);
    node.tasks.uploadDelayMs = 60_000;
    for (let i = 0; i < 4; i++) await create();
    await until('four uploads in flight', () => node.requests.filter((r) => r.path.startsWith('/task/new/upload/')).length >= 3 + 4 * 3);
    const polls = () => node.requests.filter((r) => r.path === `/task/${running.uuid}/info`).length;
    const before = polls();
    await until('another poll of the fifth task', () => polls() >= before + 2, 10_000);
    const started = Date.now();
    expect((await first.admin.post(`${fifth.url}cancel/`)).body).toEqual({ success: true });
    const canceled = await waitForTask(first.admin, fifth.url, finished, 10_000);
    expect(canceled.status).toBe(TaskStatus.CANCELED);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(node.committed.get(running.uuid)?.canceled).toBe(true);
  }, 40_000);

  it.each([
    ['the commit never reached the node', 'drop'],
    ['the answer to the commit was lost', 'lose'],
  ] as const)('a service stopped between init and commit (%s) goes on with the same node task', async (_, commit) => {
    const { node, database, first, create } = await setUp(backend);
    node.tasks.commit = commit;
    const task = await create();
    await until('the commit', () => node.requests.some((request) => request.path.startsWith('/task/new/commit/')));
    await first.service.close();
    const uploads = node.requests.filter((request) => request.path.startsWith('/task/new/upload/')).length;
    node.tasks.commit = 'answer';
    const restarted = await database.start();
    const done = await waitForTask(restarted.admin, task.url, finished, 20_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(node.inits).toHaveLength(1);
    expect([...node.committed.keys()]).toEqual(node.inits);
    expect(done.uuid).toBe(node.inits[0]);
    // The files were all sent before the stop: only the commit is repeated.
    expect(node.requests.filter((request) => request.path.startsWith('/task/new/upload/'))).toHaveLength(uploads);
  }, 30_000);
});
