import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { now } from '../../src/db/schema.ts';
import { BACKENDS, ISO_TIMESTAMP, type TestService, startService } from './helpers.ts';

describe.each(BACKENDS)('projects (%s)', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService(backend);
  });
  afterAll(() => t?.close());

  it('creates a project (201) and reads it with and without the trailing slash', async () => {
    const created = await t.admin.post('/api/projects/', { name: 'Harbour', description: 'North pier' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(Number),
      tasks: [],
      created_at: expect.stringMatching(ISO_TIMESTAMP),
      name: 'Harbour',
      description: 'North pier',
      permissions: ['add', 'change', 'delete', 'view'],
      public: false,
      public_edit: false,
      tags: [],
    });
    const id = created.body.id;
    expect((await t.admin.get(`/api/projects/${id}/`)).body).toEqual(created.body);
    expect((await t.admin.get(`/api/projects/${id}`)).body).toEqual(created.body);
    const noDescription = await t.admin.request('POST', '/api/projects', { form: { name: 'Form made' } });
    expect(noDescription.status).toBe(201);
    expect(noDescription.body.description).toBe('');
  });

  it('updates with PATCH (only the given fields) and PUT (the whole object)', async () => {
    const { body } = await t.admin.post('/api/projects/', { name: 'Before', description: 'keep me' });
    const patched = await t.admin.patch(`/api/projects/${body.id}/`, { name: 'After' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'After', description: 'keep me', created_at: body.created_at });
    const put = await t.admin.put(`/api/projects/${body.id}/`, { name: 'Replaced' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'Replaced', description: '' });
    expect(await t.admin.put(`/api/projects/${body.id}/`, { description: 'no name' })).toMatchObject({
      status: 400,
      body: { name: ['This field is required.'] },
    });
    expect((await t.admin.get(`/api/projects/${body.id}/`)).body.name).toBe('Replaced');
  });

  it('deletes a project with its tasks and their files (204)', async () => {
    const { body: project } = await t.admin.post('/api/projects/', { name: 'Doomed' });
    const { db } = t.service;
    const task = await db
      .insertInto('tasks')
      .values({ project_id: project.id, name: 'flight 1', created_at: now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    const taskDir = path.join(t.dataDir, 'media', 'project', String(project.id), 'task', String(task.id), 'images');
    await mkdir(taskDir, { recursive: true });
    await writeFile(path.join(taskDir, 'DJI_0001.JPG'), 'jpeg');
    expect((await t.admin.get(`/api/projects/${project.id}/`)).body.tasks).toEqual([task.id]);

    const deleted = await t.admin.delete(`/api/projects/${project.id}/`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBe('');
    expect((await t.admin.get(`/api/projects/${project.id}/`)).status).toBe(404);
    // Hidden at once; the scheduler removes the tasks (their nodes' copies too), then the project goes.
    const gone = async () => (await db.selectFrom('projects').select('id').where('id', '=', project.id).execute()).length === 0;
    for (const until = Date.now() + 10_000; !(await gone()) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
    expect(await gone()).toBe(true);
    expect(await db.selectFrom('tasks').select('id').where('project_id', '=', project.id).execute()).toEqual([]);
    expect(existsSync(path.join(t.dataDir, 'media', 'project', String(project.id)))).toBe(false);
  });

  it("lists a project's tasks by id, all or of one status, with their ids in the project (none, some)", async () => {
    const { body: project } = await t.admin.post('/api/projects/', { name: 'Listed' });
    const tasks = `/api/projects/${project.id}/tasks/`;
    expect((await t.admin.get(tasks)).body).toEqual([]);
    expect((await t.admin.get(`/api/projects/${project.id}/`)).body.tasks).toEqual([]);
    const { db } = t.service;
    const ids: number[] = [];
    // Twelve, so that ids of one and two digits are both listed in numeric order.
    for (let i = 0; i < 12; i++) {
      const row = await db
        .insertInto('tasks')
        .values({ project_id: project.id, name: `flight ${i}`, status: i % 2 ? 40 : 30, created_at: now() })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    // Tasks on two nodes and on none: each shows its own node's stages.
    const nodes: number[] = [];
    for (const [port, stages] of [[3001, ['dataset', 'opensfm']], [3002, ['odm_dem']]] as const) {
      const options = JSON.stringify([{ name: 'rerun-from', type: 'enum', value: '', domain: stages, help: '' }]);
      const row = await db
        .insertInto('processing_nodes')
        .values({ hostname: 'node.test', port, available_options: options, created_at: now() })
        .returning('id')
        .executeTakeFirstOrThrow();
      nodes.push(row.id);
    }
    await db.updateTable('tasks').set({ processing_node_id: nodes[0] }).where('id', 'in', [ids[1], ids[4], ids[11]]).execute();
    await db.updateTable('tasks').set({ processing_node_id: nodes[1] }).where('id', 'in', [ids[3], ids[5]]).execute();
    const all = await t.admin.get(tasks);
    expect(all.body.map((task: { id: number }) => task.id)).toEqual(ids);
    expect(all.body[0]).toMatchObject({ project: project.id, name: 'flight 0', status: 30, processing_node: null, options: [] });
    const stagesOf = (index: number) => (index === 1 || index === 4 || index === 11 ? ['dataset', 'opensfm'] : index === 3 || index === 5 ? ['odm_dem'] : []);
    expect(all.body.map((task: { can_rerun_from: string[] }) => task.can_rerun_from)).toEqual(ids.map((_, i) => stagesOf(i)));
    expect(all.body[4]).toMatchObject({ processing_node: nodes[0], processing_node_name: 'node.test:3001' });
    for (const task of all.body) expect((await t.admin.get(`${tasks}${task.id}/`)).body).toEqual(task);
    // Of one status, the first of a node's tasks is not the first of the whole list.
    expect((await t.admin.get(tasks, { status: 30 })).body.map((task: { can_rerun_from: string[] }) => task.can_rerun_from)).toEqual(
      ids.map((_, i) => stagesOf(i)).filter((_, i) => i % 2 === 0),
    );
    expect((await t.admin.get(tasks, { status: 40 })).body.map((task: { id: number }) => task.id)).toEqual(ids.filter((_, i) => i % 2));
    expect((await t.admin.get(tasks, { status: 20 })).body).toEqual([]);
    expect((await t.admin.get(`/api/projects/${project.id}/`)).body.tasks).toEqual(ids);
    const listed = await t.admin.get('/api/projects/', { id: project.id });
    expect(listed.body.results[0].tasks).toEqual(ids);

    // A user who does not see the project, and anyone for a project being deleted, gets a 404.
    const stranger = await t.createUser(`stranger-${backend}`);
    expect((await stranger.client.get(tasks)).status).toBe(404);
    expect((await stranger.client.get(tasks, { status: 40 })).status).toBe(404);
    await db.updateTable('projects').set({ deleting: 1 }).where('id', '=', project.id).execute();
    expect((await t.admin.get(tasks)).status).toBe(404);
    await db.deleteFrom('projects').where('id', '=', project.id).execute();
    await db.deleteFrom('processing_nodes').where('id', 'in', nodes).execute();
  });

  it('answers 404 for missing, malformed and out-of-range ids', async () => {
    for (const id of ['999999', 'abc', '99999999999999', '-1', '1.5', '1e400', 'Infinity']) {
      expect(await t.admin.get(`/api/projects/${id}/`)).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
    }
    expect((await t.admin.patch('/api/projects/999999/', { name: 'x' })).status).toBe(404);
    expect((await t.admin.delete('/api/projects/999999/')).status).toBe(404);
    expect(await t.admin.get('/api/no-such-thing/')).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
  });

  it('answers 405 for methods a path does not take', async () => {
    const reply = await t.admin.delete('/api/projects/');
    expect(reply).toMatchObject({ status: 405, body: { detail: 'Method "DELETE" not allowed.' } });
    expect(reply.headers.get('allow')).toBe('GET, POST');
    expect((await t.admin.post('/api/projects/1/', { name: 'x' })).status).toBe(405);
  });

  it('answers 4xx with a clear body for bad input of every kind', async () => {
    const bad = async (options: Parameters<typeof t.admin.request>[2], status = 400) => {
      const reply = await t.admin.request('POST', '/api/projects/', options);
      expect(reply.status).toBe(status);
      return reply.body;
    };
    expect(await bad({ json: {} })).toEqual({ name: ['This field is required.'] });
    expect(await bad({ json: { name: '' } })).toEqual({ name: ['This field may not be blank.'] });
    expect(await bad({ json: { name: { nested: true } } })).toEqual({ name: ['Not a valid string.'] });
    expect(await bad({ json: { name: 'x'.repeat(256) } })).toEqual({
      name: ['Ensure this field has no more than 255 characters.'],
    });
    expect(await bad({ json: { name: 'nul\u0000byte' } })).toEqual({ name: ['Null characters are not allowed.'] });
    expect(await bad({ json: ['a', 'list'] })).toEqual({ detail: 'Invalid data. Expected an object.' });
    expect((await bad({ raw: { body: '{"name": ', type: 'application/json' } })).detail).toMatch(/not valid JSON/);
    expect((await bad({ raw: { body: '', type: 'application/json' } })).detail).toMatch(/empty/);
    expect((await bad({ raw: { body: 'name=x', type: 'text/csv' } }, 415)).detail).toMatch(/Unsupported media type/);
    const deep = '['.repeat(20000) + ']'.repeat(20000);
    expect(await bad({ raw: { body: deep, type: 'application/json' } })).toEqual({ detail: 'Invalid data. Expected an object.' });
    expect(await bad({ form: { name: 'x', description: '\u0000' } })).toEqual({ description: ['Null characters are not allowed.'] });
    const huge = await bad({ json: { name: 'big', description: 'x'.repeat(2 * 1024 * 1024) } }, 413);
    expect(huge).toEqual({ detail: 'Request body is too large.' });
  });

  describe('list', () => {
    const marker = 'paging';
    let ids: number[];
    beforeAll(async () => {
      ids = [];
      for (let i = 0; i < 25; i++) {
        const name = `Survey ${String(i).padStart(2, '0')}`;
        ids.push((await t.admin.post('/api/projects/', { name, description: marker })).body.id);
      }
    });

    it('pages by 10 with absolute next and previous links', async () => {
      const first = await t.admin.get('/api/projects/', { description: marker });
      expect(first.status).toBe(200);
      expect(first.body.count).toBe(25);
      expect(first.body.results).toHaveLength(10);
      expect(first.body.previous).toBeNull();
      expect(first.body.next).toBe(`${t.url}/api/projects/?description=${marker}&page=2`);
      // Newest first by default.
      expect(first.body.results[0].id).toBe(ids[24]);

      const second = await t.admin.request('GET', first.body.next.replace(t.url, ''));
      expect(second.body.results.map((p: { id: number }) => p.id)).toEqual(ids.slice(5, 15).reverse());
      expect(second.body.previous).toBe(`${t.url}/api/projects/?description=${marker}`);

      const last = await t.admin.get('/api/projects/', { description: marker, page: 3 });
      expect(last.body.results).toHaveLength(5);
      expect(last.body.next).toBeNull();
      expect((await t.admin.get('/api/projects/', { description: marker, page: 'last' })).body).toEqual(last.body);
    });

    it('answers 404 "Invalid page." past the end and for page numbers that are not numbers', async () => {
      for (const page of ['4', '0', 'abc', '-1']) {
        expect(await t.admin.get('/api/projects/', { description: marker, page })).toMatchObject({
          status: 404,
          body: { detail: 'Invalid page.' },
        });
      }
      const empty = await t.admin.get('/api/projects/', { name: 'no such project' });
      expect(empty.body).toEqual({ count: 0, next: null, previous: null, results: [] });
    });

    it('takes page_size up to 1000', async () => {
      expect((await t.admin.get('/api/projects/', { description: marker, page_size: 7 })).body.results).toHaveLength(7);
      const capped = await t.admin.get('/api/projects/', { description: marker, page_size: 5000 });
      expect(capped.body.results).toHaveLength(25);
      expect(capped.body.next).toBeNull();
      expect((await t.admin.get('/api/projects/', { page_size: 0 })).status).toBe(400);
    });

    it('filters by id, name, description and created_at', async () => {
      const one = (await t.admin.get(`/api/projects/${ids[3]}/`)).body;
      const byName = await t.admin.get('/api/projects/', { name: one.name });
      expect(byName.body.results.map((p: { id: number }) => p.id)).toEqual([one.id]);
      expect((await t.admin.get('/api/projects/', { id: one.id })).body.count).toBe(1);
      const byTime = await t.admin.get('/api/projects/', { created_at: one.created_at, description: marker });
      expect(byTime.body.results.map((p: { id: number }) => p.id)).toContain(one.id);
      const sameInstant = one.created_at.replace('Z', '+00:00');
      expect((await t.admin.get('/api/projects/', { created_at: sameInstant, id: one.id })).body.count).toBe(1);
      // An empty filter is no filter.
      expect((await t.admin.get('/api/projects/', { description: marker, name: '' })).body.count).toBe(25);
    });

    it('refuses filters of the wrong type and shrugs off injection attempts', async () => {
      expect(await t.admin.get('/api/projects/', { id: 'abc' })).toMatchObject({
        status: 400,
        body: { id: ['A valid integer is required.'] },
      });
      for (const id of ['99999999999', '1e400', '-Infinity']) {
        expect((await t.admin.get('/api/projects/', { id })).status).toBe(400);
      }
      expect(await t.admin.get('/api/projects/', { created_at: 'yesterday' })).toMatchObject({
        status: 400,
        body: { created_at: ['Datetime has wrong format. Use ISO 8601.'] },
      });
      for (const name of ["' OR 1=1 --", "Survey 01'; DROP TABLE projects; --", '%', 'Survey%']) {
        const reply = await t.admin.get('/api/projects/', { name });
        expect(reply.status).toBe(200);
        expect(reply.body.count).toBe(0);
      }
      expect((await t.admin.get('/api/projects/', { description: marker })).body.count).toBe(25);
    });

    it('orders by allowed fields and refuses others with 400', async () => {
      const asc = await t.admin.get('/api/projects/', { description: marker, ordering: 'name', page_size: 100 });
      const names = asc.body.results.map((p: { name: string }) => p.name);
      expect(names).toEqual([...names].sort());
      const desc = await t.admin.get('/api/projects/', { description: marker, ordering: '-name', page_size: 100 });
      expect(desc.body.results.map((p: { name: string }) => p.name)).toEqual([...names].reverse());
      const byIdDesc = await t.admin.get('/api/projects/', { description: marker, ordering: '-id' });
      expect(byIdDesc.body.results[0].id).toBe(ids[24]);
      for (const ordering of ['owner_id', 'bogus', 'name;DROP TABLE projects', '--name']) {
        const reply = await t.admin.get('/api/projects/', { ordering });
        expect(reply.status).toBe(400);
        expect(reply.body.ordering[0]).toMatch(/^Unknown field/);
      }
    });
  });
});
