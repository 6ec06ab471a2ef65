// Tasks survive crashes. `aeromap serve` (with its embedded node and the quick stand-in engine) is killed with
// SIGKILL while it uploads a task to the node, while the node processes it, and while it downloads the results;
// started again on the same data, it completes every task with nothing lost. A separate node process is killed
// and restarted mid-task too. And two service instances on one PostgreSQL process three tasks exactly once.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningNode, startNode } from '../../src/node/index.ts';
import { buildService } from '../../src/service/app.ts';
import { startCuttingProxy } from './fakenode.ts';
import { ADMIN, Client, isolatedDatabase, startService, testConfig } from './helpers.ts';
import { FAKE_ENGINE, LONG, REPO, TaskStatus, finished, imageForm, makeJpegs, postForm, waitForTask } from './taskhelpers.ts';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A big file that passes as a JPEG (its start and end markers) for the stand-in engine, which does not decode. */
async function bigJpeg(file: string, megabytes: number): Promise<void> {
  const out = createWriteStream(file);
  out.write(Buffer.from([0xff, 0xd8, 0xff, 0xe0]));
  const block = randomBytes(1 << 20);
  for (let i = 0; i < megabytes; i++) if (!out.write(block)) await once(out, 'drain');
  out.end(Buffer.from([0xff, 0xd9]));
  await once(out, 'finish');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Started from the sources (tsx) on a loaded machine, a service or node may take tens of seconds to listen.
async function waitForHttp(url: string, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await fetch(url).then((r) => r.status < 500, () => false)) return;
    await sleep(100);
  }
  throw new Error(`${url} did not answer`);
}

/** `aeromap serve` as a process of its own, which the test may kill and start again on the same data. */
class ServiceProcess {
  child: ChildProcess | undefined;
  readonly url: string;

  constructor(
    private readonly dataDir: string,
    private readonly port: number,
    private readonly nodePort: number,
    private readonly env: Record<string, string> = {},
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.child = spawn(path.join(REPO, 'bin', 'aeromap'), ['serve'], {
      env: {
        ...process.env,
        PORT: String(this.port),
        HOST: '127.0.0.1',
        DATA_DIR: this.dataDir,
        EMBEDDED_NODE_PORT: String(this.nodePort),
        AEROMAP_ENGINE: FAKE_ENGINE,
        AEROMAP_ADMIN_PASSWORD: ADMIN.password,
        PASSWORD_ITERATIONS: '1000',
        LOG_LEVEL: 'warn',
        TASK_LEASE_SECONDS: '2',
        TASK_POLL_SECONDS: '0.3',
        ...this.env,
      },
      stdio: 'ignore',
    });
    await waitForHttp(`${this.url}/api/openapi.json`);
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async login(): Promise<Client> {
    const reply = await new Client(this.url).post('/api/token-auth/', ADMIN);
    return new Client(this.url, reply.body.token);
  }
}

// In `make test-long` (CI's time): the node killed and restarted mid-task below stays in `make test`.
describe.runIf(LONG)('tasks across crashes of the service', () => {
  let work: string;
  let service: ServiceProcess;
  let admin: Client;
  let projectId: number;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-crash-'));
    service = new ServiceProcess(path.join(work, 'data'), await freePort(), await freePort());
    await service.start();
    admin = await service.login();
    projectId = (await admin.post('/api/projects/', { name: 'crashes' })).body.id;
    // The embedded node must be online before tasks are created.
    const until = Date.now() + 60_000;
    while (!(await admin.get('/api/processingnodes/')).body.some((node: { online: boolean }) => node.online) && Date.now() < until) await sleep(200);
  }, 150_000);

  afterAll(async () => {
    await service?.kill();
    await rm(work, { recursive: true, force: true });
  });

  /** Kills the service when `when` first holds for the task, starts it again, and waits for the task to end. */
  async function crashWhen(taskId: number, when: (task: any) => boolean): Promise<any> {
    const url = `/api/projects/${projectId}/tasks/${taskId}/`;
    const seen = await waitForTask(admin, url, (task) => when(task) || finished(task), 60_000);
    expect(finished(seen), `the task ended before the crash: ${JSON.stringify(seen)}`).toBe(false);
    await service.kill();
    await service.start();
    admin = await service.login();
    return waitForTask(admin, url, finished, 90_000);
  }

  it('completes a task whose upload to the node was cut by SIGKILL', async () => {
    const files = [path.join(work, 'A.JPG'), path.join(work, 'B.JPG'), path.join(work, 'C.JPG')];
    for (const file of files) await bigJpeg(file, 96);
    const created = await postForm(admin, `/api/projects/${projectId}/tasks/`, await imageForm(files, { name: 'upload' }));
    expect(created.status).toBe(201);
    const done = await crashWhen(created.body.id, (task) => task.upload_progress > 0 && task.upload_progress < 1);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.images_count).toBe(3);
    for (const file of files) await rm(file);
  }, 180_000);

  it('completes a task whose processing was cut by SIGKILL (the embedded node goes down with the service)', async () => {
    const images = await makeJpegs(path.join(work, 'small'), 3);
    const options = JSON.stringify([{ name: 'fake-seconds', value: 1.5 }]);
    const created = await postForm(admin, `/api/projects/${projectId}/tasks/`, await imageForm(images, { name: 'processing', options }));
    const done = await crashWhen(created.body.id, (task) => task.status === TaskStatus.RUNNING);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    const output = (await admin.get(`/api/projects/${projectId}/tasks/${created.body.id}/output/`)).body as string;
    expect(output).toContain('Running stage dataset');
    expect(output).toContain('Fake engine finished');
  }, 180_000);

  it('completes a task whose result download was cut by SIGKILL, resuming the download', async () => {
    const images = await makeJpegs(path.join(work, 'download'), 2);
    const options = JSON.stringify([{ name: 'fake-output-mb', value: 400 }]);
    const created = await postForm(admin, `/api/projects/${projectId}/tasks/`, await imageForm(images, { name: 'download', options }));
    const done = await crashWhen(created.body.id, (task) => task.running_progress > 0.9 && task.running_progress < 1);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    const ortho = path.join(work, 'data', 'media', 'project', String(projectId), 'task', String(done.id), 'assets', 'odm_orthophoto', 'odm_orthophoto.tif');
    expect((await stat(ortho)).size).toBe(400 * 2 ** 20);
    expect(await readdir(path.join(path.dirname(path.dirname(path.dirname(ortho))), 'work')).catch(() => [])).toEqual([]);
  }, 180_000);

  it('kept every task of this file complete', async () => {
    const tasks = (await admin.get(`/api/projects/${projectId}/tasks/`)).body;
    expect(tasks.map((task: { status: number }) => task.status)).toEqual([40, 40, 40]);
  });
});

describe('a node that closes every download part-way, as ClusterODM does', () => {
  it('keeps the service up, which resumes the download from its .part each time and completes the task', async () => {
    const work = await mkdtemp(path.join(tmpdir(), 'aeromap-cut-'));
    const node = await startNode({ dataDir: path.join(work, 'node'), port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });
    const proxy = await startCuttingProxy(node.port, 3 * 2 ** 20);
    const service = new ServiceProcess(path.join(work, 'data'), await freePort(), 0, { EMBEDDED_NODE: 'false' });
    try {
      await service.start();
      const pid = service.child?.pid;
      const admin = await service.login();
      await admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: proxy.port });
      const until = Date.now() + 30_000;
      while (!(await admin.get('/api/processingnodes/')).body.some((n: { online: boolean }) => n.online) && Date.now() < until) await sleep(200);
      const projectId = (await admin.post('/api/projects/', { name: 'cut downloads' })).body.id;
      const images = await makeJpegs(path.join(work, 'images'), 2);
      const options = JSON.stringify([{ name: 'fake-output-mb', value: 24 }]);
      const created = await postForm(admin, `/api/projects/${projectId}/tasks/`, await imageForm(images, { options }));
      const done = await waitForTask(admin, `/api/projects/${projectId}/tasks/${created.body.id}/`, finished, 90_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
      expect(service.child?.exitCode).toBe(null);
      expect(service.child?.pid).toBe(pid);
      const assets = path.join(work, 'data', 'media', 'project', String(projectId), 'task', String(done.id), 'assets');
      expect((await stat(path.join(assets, 'odm_orthophoto', 'odm_orthophoto.tif'))).size).toBe(24 * 2 ** 20);
      // Cut after 3 MB each, the pieces went on from where the .part ended, never from the start again.
      const starts = proxy.downloads.map((range) => Number(/^bytes=(\d+)-/.exec(range)?.[1]));
      expect(starts.length).toBeGreaterThan(8);
      expect(starts.slice(1).every((start, i) => start > starts[i])).toBe(true);
    } finally {
      await service.kill();
      await proxy.close();
      await node.close();
      await rm(work, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('a processing node killed and restarted mid-task', () => {
  it('resumes the task, which the service then completes', async () => {
    const t = await startService('sqlite');
    const work = await mkdtemp(path.join(tmpdir(), 'aeromap-nodecrash-'));
    const port = await freePort();
    const startChild = () =>
      spawn(path.join(REPO, 'bin', 'aeromap'), ['node', '--port', String(port), '--host', '127.0.0.1', '--data-dir', path.join(work, 'node'), '--engine', FAKE_ENGINE], { stdio: 'ignore' });
    let child = startChild();
    try {
      await waitForHttp(`http://127.0.0.1:${port}/info`);
      await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port });
      await t.service.refresher.refreshAll();
      const projectId = (await t.admin.post('/api/projects/', { name: 'node crash' })).body.id;
      const images = await makeJpegs(path.join(work, 'images'), 3);
      const options = JSON.stringify([{ name: 'fake-seconds', value: 1.5 }]);
      const created = await postForm(t.admin, `/api/projects/${projectId}/tasks/`, await imageForm(images, { options }));
      const url = `/api/projects/${projectId}/tasks/${created.body.id}/`;
      await waitForTask(t.admin, url, (task) => task.status === TaskStatus.RUNNING);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      await sleep(1000);
      child = startChild();
      const done = await waitForTask(t.admin, url, finished, 60_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
      expect(done.available_assets).toContain('orthophoto.tif');
    } finally {
      child.kill('SIGKILL');
      await t.close();
      await rm(work, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('two service instances on one PostgreSQL', () => {
  let node: RunningNode;
  let work: string;
  const closers: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-two-'));
    node = await startNode({ dataDir: path.join(work, 'node'), port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {}, parallelTasks: 3 });
    closers.push(() => node.close());
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await rm(work, { recursive: true, force: true });
  });

  it('share three tasks and process each exactly once', async () => {
    const database = await isolatedDatabase('postgres');
    closers.push(() => database.drop());
    // Both instances serve the API and run the scheduler, on one database and one shared data folder.
    const config = testConfig(database.dataDir, database.databaseUrl);
    const first = await buildService(config);
    const second = await buildService(config);
    closers.push(() => first.close(), () => second.close());
    const clients: Client[] = [];
    for (const instance of [first, second]) {
      const url = await instance.listen();
      const token = (await new Client(url).post('/api/token-auth/', ADMIN)).body.token;
      clients.push(new Client(url, token));
    }
    await clients[0].post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port });
    await first.refresher.refreshAll();
    const projectId = (await clients[0].post('/api/projects/', { name: 'shared' })).body.id;
    const images = await makeJpegs(path.join(work, 'images'), 2);
    const options = JSON.stringify([{ name: 'fake-seconds', value: 0.5 }]);
    const ids: number[] = [];
    for (const [index, client] of [clients[0], clients[1], clients[0]].entries()) {
      const created = await postForm(client, `/api/projects/${projectId}/tasks/`, await imageForm(images, { name: `t${index}`, options }));
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    for (const id of ids) {
      const done = await waitForTask(clients[1], `/api/projects/${projectId}/tasks/${id}/`, finished, 60_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    }
    // The node received three tasks, no more, and ran each one's stages once.
    const uuids = (await (await fetch(`${node.url}/task/list`)).json()) as { uuid: string }[];
    expect(uuids).toHaveLength(3);
    for (const { uuid } of uuids) {
      const runs = await readFile(path.join(work, 'node', 'tasks', uuid, 'fake', 'runs.txt'), 'utf8');
      expect(runs.trim().split('\n')).toEqual(['dataset', 'opensfm', 'odm_orthophoto']);
    }
  }, 90_000);
});

describe('a processing node that stops answering', () => {
  it('fails the task it was running, restartably, and moves a task not yet uploaded to another node', async () => {
    const t = await startService('sqlite', {
      tasks: { ...testConfig('', undefined).tasks, nodeOfflineAfterMs: 1500 },
    });
    const work = await mkdtemp(path.join(tmpdir(), 'aeromap-offline-'));
    const start = (name: string) => startNode({ dataDir: path.join(work, name), port: 0, host: '127.0.0.1', enginePath: FAKE_ENGINE, log: () => {} });
    const nodes = { running: await start('running'), dead: await start('dead'), spare: await start('spare') };
    try {
      const ids: Record<string, number> = {};
      for (const [name, node] of Object.entries(nodes)) {
        ids[name] = (await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port })).body.id;
      }
      await t.service.refresher.refreshAll();
      const projectId = (await t.admin.post('/api/projects/', { name: 'offline' })).body.id;
      const images = await makeJpegs(path.join(work, 'images'), 2);
      const tasks = `/api/projects/${projectId}/tasks/`;

      // A task running on a node that then goes silent fails, saying so.
      const slow = JSON.stringify([{ name: 'fake-seconds', value: 30 }]);
      const running = await postForm(t.admin, tasks, await imageForm(images, { processing_node: String(ids.running), options: slow }));
      await waitForTask(t.admin, `${tasks}${running.body.id}/`, (task) => task.status === TaskStatus.RUNNING);
      await nodes.running.close();
      const failed = await waitForTask(t.admin, `${tasks}${running.body.id}/`, finished, 30_000);
      expect(failed.status).toBe(TaskStatus.FAILED);
      expect(failed.last_error).toMatch(/^Processing node 127\.0\.0\.1:\d+ went offline \(no answer for 2 s: .*\)\. Restart the task/);

      // The silent node still looks online to the refresher; a task assigned to it moves on to the spare node.
      await nodes.dead.close();
      await t.admin.delete(`/api/processingnodes/${ids.running}/`);
      const moved = await postForm(t.admin, tasks, await imageForm(images));
      // Generous: on a machine busy with other suites the fake engine's stages take several times their time.
      const done = await waitForTask(t.admin, `${tasks}${moved.body.id}/`, finished, 90_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
      expect(done.processing_node).toBe(ids.spare);
    } finally {
      await Promise.allSettled(Object.values(nodes).map((node) => node.close()));
      await t.close();
      await rm(work, { recursive: true, force: true });
    }
  }, 180_000);
});
