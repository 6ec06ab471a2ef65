// The node that `aeromap serve` embeds: a real processing node running the real engine, reached by the service
// over the NodeODM API like any other node.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { type TestService, startService } from './helpers.ts';

describe('embedded processing node', () => {
  let t: TestService;
  const nodes: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    t = await startService('sqlite');
  });
  afterAll(async () => {
    for (const node of nodes) await node.close();
    await t.close();
  });

  // Each node its own data folder: a folder takes one node at a time.
  const start = async () => {
    const settings = { port: 0, dataDir: path.join(t.dataDir, `node-${nodes.length}`) };
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

  it('keeps one record when it starts again on the same port, with a new token', async () => {
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
});
