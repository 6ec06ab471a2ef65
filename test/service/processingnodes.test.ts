import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { now } from '../../src/db/schema.ts';
import { TaskStatus } from '../../src/protocol/status.ts';
import { NodeClient, NodeConnectionError, NodeResponseError, NodeServerError } from '../../src/nodeclient/index.ts';
import { type FakeNode, closedPort, option, startFakeNode } from './fakenode.ts';
import { BACKENDS, type Client, ISO_TIMESTAMP, type TestService, startService } from './helpers.ts';

describe('NodeODM client', () => {
  const nodes: FakeNode[] = [];
  afterAll(() => Promise.all(nodes.map((node) => node.close())));
  const start = async (...args: Parameters<typeof startFakeNode>) => {
    const node = await startFakeNode(...args);
    nodes.push(node);
    return node;
  };

  it('reads /info and /options, sending the token', async () => {
    const node = await start({ token: 't0k', queueCount: 3, maxImages: 100, optionNames: ['dsm'] });
    const client = new NodeClient({ hostname: '127.0.0.1', port: node.port, token: 't0k' });
    expect(await client.info()).toMatchObject({ version: '2.2.4', taskQueueCount: 3, maxImages: 100, engine: 'odm' });
    expect(await client.options()).toEqual([option('dsm')]);
    expect(node.requests).toEqual([
      { path: '/info', token: 't0k' },
      { path: '/options', token: 't0k' },
    ]);
  });

  it('tells refusals, unreachable nodes, silent nodes and nonsense apart', async () => {
    const guarded = await start({ token: 'right' });
    await expect(new NodeClient({ hostname: '127.0.0.1', port: guarded.port, token: 'wrong' }).info()).rejects.toThrow(
      NodeResponseError,
    );
    await expect(new NodeClient({ hostname: '127.0.0.1', port: await closedPort() }).info()).rejects.toThrow(
      NodeConnectionError,
    );
    const silent = await start({ behaviour: 'hang' });
    await expect(new NodeClient({ hostname: '127.0.0.1', port: silent.port }, { quickTimeoutMs: 200 }).info()).rejects.toThrow(
      /no answer within 200 ms/,
    );
    const garbage = await start({ behaviour: 'garbage' });
    await expect(new NodeClient({ hostname: '127.0.0.1', port: garbage.port }).options()).rejects.toThrow(NodeServerError);
  });
});

describe.each(BACKENDS)('processing nodes (%s)', (backend) => {
  let t: TestService;
  let user: Client;
  const fakes: FakeNode[] = [];
  let primary: FakeNode;
  let secondary: FakeNode;
  let ids: { primary: number; secondary: number; offline: number };

  beforeAll(async () => {
    t = await startService(backend);
    user = (await t.createUser('pilot')).client;
    primary = await startFakeNode({ token: 'secret', queueCount: 2, maxImages: 500, optionNames: ['dsm', 'dtm', 'fast-orthophoto'] });
    secondary = await startFakeNode({ optionNames: ['dtm', 'fast-orthophoto', 'mesh-size'] });
    fakes.push(primary, secondary);
    const create = async (body: object) => {
      const reply = await t.admin.post('/api/processingnodes/', body);
      expect(reply.status).toBe(201);
      return reply.body.id as number;
    };
    ids = {
      primary: await create({ hostname: '127.0.0.1', port: primary.port, token: 'secret' }),
      secondary: await create({ hostname: 'localhost', port: secondary.port }),
      offline: await create({ hostname: '127.0.0.1', port: await closedPort() }),
    };
    await t.service.refresher.refreshAll();
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all(fakes.map((fake) => fake.close()));
  });

  it("stores what a node's /info and /options say, asking with its token", async () => {
    const node = (await t.admin.get(`/api/processingnodes/${ids.primary}/`)).body;
    expect(node).toEqual({
      id: ids.primary,
      online: true,
      hostname: '127.0.0.1',
      port: primary.port,
      api_version: '2.2.4',
      engine_version: '3.5.6',
      engine: 'odm',
      last_refreshed: expect.stringMatching(ISO_TIMESTAMP),
      queue_count: 2,
      max_images: 500,
      label: `127.0.0.1:${primary.port}`,
      available_options: ['dsm', 'dtm', 'fast-orthophoto'].map(option),
      token: 'secret',
    });
    expect(primary.requests.filter((r) => r.path === '/info').every((r) => r.token === 'secret')).toBe(true);
    expect(primary.requests.some((r) => r.path === '/options')).toBe(true);
  });

  it('leaves an unreachable node offline without failing', async () => {
    await expect(t.service.refresher.refreshAll()).resolves.toBeUndefined();
    const node = (await user.get(`/api/processingnodes/${ids.offline}/`)).body;
    expect(node).toMatchObject({ online: false, last_refreshed: null, api_version: '', available_options: [], max_images: null });
  });

  it('lists nodes as a plain array for every signed-in user, the token for admins only', async () => {
    const list = await user.get('/api/processingnodes/');
    expect(list.status).toBe(200);
    expect(list.body.map((n: { id: number }) => n.id)).toEqual([ids.primary, ids.secondary, ids.offline]);
    expect(list.body.every((n: object) => !('token' in n))).toBe(true);
    expect((await t.admin.get('/api/processingnodes/')).body[0].token).toBe('secret');
    expect((await t.anonymous.get('/api/processingnodes/')).status).toBe(403);
  });

  it('filters by every field the spec names and orders', async () => {
    const idsOf = async (query: Record<string, string | number | boolean>) =>
      (await user.get('/api/processingnodes/', query)).body.map((n: { id: number }) => n.id);
    expect(await idsOf({ id: ids.secondary })).toEqual([ids.secondary]);
    expect(await idsOf({ hostname: 'localhost' })).toEqual([ids.secondary]);
    expect(await idsOf({ port: primary.port })).toEqual([ids.primary]);
    expect(await idsOf({ api_version: '2.2.4' })).toEqual([ids.primary, ids.secondary]);
    expect(await idsOf({ queue_count: 2 })).toEqual([ids.primary]);
    expect(await idsOf({ max_images: 500 })).toEqual([ids.primary]);
    expect(await idsOf({ engine_version: '3.5.6' })).toEqual([ids.primary, ids.secondary]);
    expect(await idsOf({ engine: 'odm' })).toEqual([ids.primary, ids.secondary]);
    expect(await idsOf({ label: `localhost:${secondary.port}` })).toEqual([ids.secondary]);
    expect(await idsOf({ has_available_options: true })).toEqual([ids.primary, ids.secondary]);
    expect(await idsOf({ has_available_options: false })).toEqual([ids.offline]);
    expect(await idsOf({ ordering: '-id' })).toEqual([ids.offline, ids.secondary, ids.primary]);
    expect(await idsOf({ ordering: '-queue_count,id' })).toEqual([ids.primary, ids.secondary, ids.offline]);
    expect((await user.get('/api/processingnodes/', { ordering: 'token' })).status).toBe(400);
    expect(await user.get('/api/processingnodes/', { port: 'eighty' })).toMatchObject({
      status: 400,
      body: { port: ['A valid integer is required.'] },
    });
    expect((await user.get('/api/processingnodes/', { has_available_options: 'perhaps' })).status).toBe(400);
  });

  it('offers the options common to the online nodes', async () => {
    const common = async () => (await user.get('/api/processingnodes/options/')).body.map((o: { name: string }) => o.name);
    expect(await common()).toEqual(['dtm', 'fast-orthophoto']);
    const full = (await user.get('/api/processingnodes/options')).body[0];
    expect(full).toEqual(option('dtm'));

    // A third node with its own options narrows the list while it is online, and stops counting once
    // its last refresh is older than five minutes.
    const narrow = await startFakeNode({ optionNames: ['dtm', 'zzz'] });
    fakes.push(narrow);
    const { body } = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: narrow.port });
    await t.service.refresher.refreshAll();
    expect(await common()).toEqual(['dtm']);
    const stale = new Date(Date.now() - 6 * 60 * 1000).toISOString();
    await t.service.db.updateTable('processing_nodes').set({ last_refreshed: stale }).where('id', '=', body.id).execute();
    expect((await user.get(`/api/processingnodes/${body.id}/`)).body.online).toBe(false);
    expect(await common()).toEqual(['dtm', 'fast-orthophoto']);
    expect((await t.admin.delete(`/api/processingnodes/${body.id}/`)).status).toBe(204);
    expect((await t.anonymous.get('/api/processingnodes/options/')).status).toBe(403);
  });

  it('lets only admins add, change and delete nodes', async () => {
    expect((await user.post('/api/processingnodes/', { hostname: 'example.org', port: 3000 })).status).toBe(403);
    expect((await user.patch(`/api/processingnodes/${ids.primary}/`, { port: 1 })).status).toBe(403);
    expect((await user.put(`/api/processingnodes/${ids.primary}/`, { hostname: 'x', port: 1 })).status).toBe(403);
    expect((await user.delete(`/api/processingnodes/${ids.primary}/`)).status).toBe(403);
    expect((await user.get(`/api/processingnodes/${ids.primary}/`)).body.port).toBe(primary.port);
  });

  it('validates node addresses', async () => {
    const bad = async (body: object) => (await t.admin.post('/api/processingnodes/', body)).body;
    expect(Object.keys(await bad({ hostname: 'http://example.org/', port: 3000 }))).toEqual(['hostname']);
    expect(await bad({ hostname: 'example.org', port: 70000 })).toEqual({
      port: ['Ensure this value is less than or equal to 65535.'],
    });
    expect(await bad({ hostname: 'example.org' })).toEqual({ port: ['This field is required.'] });
    expect(await bad({ hostname: 'example.org', port: '1e400' })).toEqual({ port: ['A finite number is required.'] });
    expect(await bad({ port: 3000 })).toEqual({ hostname: ['This field is required.'] });
    // Names the pattern lets through but no URL can hold.
    for (const hostname of ['[', '::1', 'a:b', '[::1']) expect(Object.keys(await bad({ hostname, port: 3000 })), hostname).toEqual(['hostname']);
    expect((await t.admin.post('/api/processingnodes/', { hostname: '[::1]', port: 3000 })).status).toBe(201);
  });

  it('writes only the writable fields of a change, whatever else the body holds', async () => {
    const url = `/api/processingnodes/${ids.primary}/`;
    const before = (await t.admin.get(url)).body;
    const reply = await t.admin.patch(url, { queue_count: 99, engine: 'hacked', id: 7, bogus: 1, port: before.port });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: ids.primary, queue_count: before.queue_count, engine: before.engine });
    expect((await t.admin.get('/api/processingnodes/7/')).status).toBe(404);
    expect((await t.admin.patch(url, { hostname: '[' })).status).toBe(400);
  });

  it('refreshes a node right after an admin changes it', async () => {
    const moved = await t.admin.patch(`/api/processingnodes/${ids.offline}/`, { port: secondary.port });
    expect(moved.status).toBe(200);
    expect(moved.body.label).toBe(`127.0.0.1:${secondary.port}`);
    await vi.waitFor(
      async () => expect((await user.get(`/api/processingnodes/${ids.offline}/`)).body.online).toBe(true),
      { timeout: 10_000, interval: 50 },
    );
  });

  it('deletes a node (204) and keeps its tasks, without a node', async () => {
    const node = await startFakeNode();
    fakes.push(node);
    const { body } = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port });
    const project = (await t.admin.post('/api/projects/', { name: 'With a task' })).body;
    const task = await t.service.db
      .insertInto('tasks')
      // Completed, so that the scheduler leaves it alone (it would give a task still to run another node).
      .values({ project_id: project.id, processing_node_id: body.id, created_at: now(), status: TaskStatus.COMPLETED })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect((await t.admin.delete(`/api/processingnodes/${body.id}/`)).status).toBe(204);
    expect((await t.admin.get(`/api/processingnodes/${body.id}/`)).status).toBe(404);
    const row = await t.service.db.selectFrom('tasks').select('processing_node_id').where('id', '=', task.id).executeTakeFirst();
    expect(row).toEqual({ processing_node_id: null });
  });
});

describe.each(BACKENDS)('scheduled node refresh (%s)', (backend) => {
  let t: TestService;
  let node: FakeNode;
  beforeAll(async () => {
    t = await startService(backend, { nodeRefreshIntervalMs: 100 });
    node = await startFakeNode({ queueCount: 1 });
  });
  afterAll(async () => {
    await t?.close();
    await node?.close();
  });

  it('asks every node again and again while the service runs', async () => {
    const { body } = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port });
    await vi.waitFor(
      async () => {
        expect((await t.admin.get(`/api/processingnodes/${body.id}/`)).body).toMatchObject({ online: true, queue_count: 1 });
        expect(node.requests.filter((r) => r.path === '/info').length).toBeGreaterThanOrEqual(3);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
