// The node that `aeromap serve` embeds: a real processing node running the real engine in a process of its own,
// reached by the service over the NodeODM API like any other node.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderInUseError, lockDataDir } from '../../src/node/lock.ts';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { ADMIN, type TestService, startService } from './helpers.ts';
import { FAKE_ENGINE, LONG, REPO } from './taskhelpers.ts';

/** Whether a node holds the folder's lock: taking it (and letting it go at once) fails then. */
const held = (dataDir: string): boolean => {
  try {
    lockDataDir(dataDir)();
    return false;
  } catch (error) {
    if (error instanceof FolderInUseError) return true;
    throw error;
  }
};

/** The process ids of a process's children. */
const children = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('embedded processing node', () => {
  let t: TestService;
  const nodes: { close(): Promise<void> }[] = [];

  // The service's secrets, as `aeromap serve` holds them in its environment.
  const SECRETS = { SECRET_KEY: 'signing-key', DATABASE_URL: 'postgres://aeromap:db-password@db/aeromap', AEROMAP_ADMIN_PASSWORD: 'admin-password' };
  const saved = { ...process.env };

  beforeAll(async () => {
    t = await startService('sqlite');
    Object.assign(process.env, SECRETS);
  });
  afterAll(async () => {
    process.env = saved;
    for (const node of nodes) await node.close();
    await t.close();
  });

  // Each node its own data folder: a folder takes one node at a time.
  const start = async () => {
    const settings = { port: 0, dataDir: path.join(t.dataDir, `node-${nodes.length}`), maxRuntimeMinutes: 90 };
    const started = await startEmbeddedNode(settings, t.service.db, t.service.refresher, () => {});
    nodes.push(started.node);
    return started;
  };

  it('is listed as an online node with the engine options, and its token stays with admins', async () => {
    const { id } = await start();
    await expect.poll(async () => (await t.admin.get(`/api/processingnodes/${id}/`)).body.online, { timeout: 20_000 }).toBe(true);
    const node = (await t.admin.get(`/api/processingnodes/${id}/`)).body;
    expect(node).toMatchObject({ hostname: '127.0.0.1', engine: 'aeromap' });
    expect(node.token).toMatch(/^[\w-]{20,}$/);
    const names = node.available_options.map((o: { name: string }) => o.name);
    expect(names).toEqual(expect.arrayContaining(['rerun-from', 'end-with', 'max-concurrency']));

    const pilot = (await t.createUser('pilot')).client;
    const seen = (await pilot.get(`/api/processingnodes/${id}/`)).body;
    expect(seen.online).toBe(true);
    expect(seen).not.toHaveProperty('token');
    const common = (await pilot.get('/api/processingnodes/options/')).body.map((o: { name: string }) => o.name);
    expect(common).toContain('rerun-from');
  });

  it.runIf(LONG)('keeps one record when it starts again on the same port, with a new token', async () => {
    const first = await start();
    const before = (await t.admin.get(`/api/processingnodes/${first.id}/`)).body;
    await first.node.close();
    nodes.splice(nodes.indexOf(first.node), 1);
    const settings = { port: first.node.port, dataDir: path.join(t.dataDir, 'node-1') };
    const again = await startEmbeddedNode(settings, t.service.db, t.service.refresher, () => {});
    nodes.push(again.node);
    expect(again.id).toBe(first.id);
    const after = (await t.admin.get(`/api/processingnodes/${first.id}/`)).body;
    expect(after.token).not.toBe(before.token);
  });

  // A loaded machine may take tens of seconds to start a node from the sources (tsx), so the waits are generous.
  it('runs in a process of its own, started again when it dies', { timeout: 180_000 }, async () => {
    const { node, id } = await start();
    const dataDir = path.join(t.dataDir, `node-${nodes.length - 1}`);
    const first = node.pid!;
    expect(first).not.toBe(process.pid);
    expect(held(dataDir)).toBe(true);
    // It needs none of the service's secrets, and gets its token.
    const environment = readFileSync(`/proc/${first}/environ`, 'utf8').split('\0');
    const names = environment.map((entry) => entry.split('=')[0]);
    for (const name of Object.keys(SECRETS)) expect(names).not.toContain(name);
    expect(names).toContain('AEROMAP_NODE_TOKEN');
    // A run that never ends stops at the limit rather than holding the node for good.
    expect(readFileSync(`/proc/${first}/cmdline`, 'utf8').split('\0').join(' ')).toContain('--max-runtime 90');
    const { token } = (await t.admin.get(`/api/processingnodes/${id}/`)).body;
    const killedAt = new Date().toISOString();
    process.kill(first, 'SIGKILL');
    const answers = () => fetch(`${node.url}/info?token=${token}`).then((r) => r.ok, () => false);
    await expect.poll(answers, { timeout: 90_000, interval: 250 }).toBe(true);
    expect(node.pid).not.toBe(first);
    expect(held(dataDir)).toBe(true);
    // Once it listens again, the service asks it for its state at once (the test service refreshes nodes on no
    // schedule of its own, so only the restart can have asked).
    const refreshed = async () => (await t.admin.get(`/api/processingnodes/${id}/`)).body.last_refreshed > killedAt;
    await expect.poll(refreshed, { timeout: 30_000 }).toBe(true);
  });

  it('goes down with a service that is killed', async () => {
    const dataDir = path.join(t.dataDir, 'killed-service');
    const service = spawn(path.join(REPO, 'bin', 'aeromap'), ['serve'], {
      // Not the stand-in secrets set above: its DATABASE_URL names no server.
      env: { ...saved, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, AEROMAP_ENGINE: FAKE_ENGINE,
        AEROMAP_ADMIN_PASSWORD: ADMIN.password, PASSWORD_ITERATIONS: '1000', LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
    const nodeDir = path.join(dataDir, 'node');
    await expect.poll(() => held(nodeDir), { timeout: 30_000 }).toBe(true);
    const [child] = children(service.pid!);
    expect(child).toBeGreaterThan(0);
    service.kill('SIGKILL');
    await expect.poll(() => alive(child), { timeout: 20_000 }).toBe(false);
    expect(held(nodeDir)).toBe(false);
  }, 60_000);
});
