// WebODM's tags on tasks and projects (a list in the API, space-separated text in the database) and its search
// syntax in the project list (words, #project tag, ##task tag, @owner, ":" for "#") and the task list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type TestService, startService } from './helpers.ts';

describe.each(BACKENDS)('tags and search on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService(backend);
  });
  afterAll(() => t?.close());

  type Named = { name: string }[];
  const names = (reply: { body: Named | { results: Named } }) =>
    (Array.isArray(reply.body) ? reply.body : reply.body.results).map((item) => item.name).sort();

  it('keeps project tags as WebODM does: a list in, space-separated in the database, a list out', async () => {
    const created = await t.admin.post('/api/projects/', { name: 'Tagged', tags: ['a', 'b', '.hidden'] });
    expect(created.status).toBe(201);
    expect(created.body.tags).toEqual(['a', 'b', '.hidden']);
    const row = await t.service.db.selectFrom('projects').select('tags').where('id', '=', created.body.id).executeTakeFirstOrThrow();
    expect(row.tags).toBe('a b .hidden');
    expect((await t.admin.post(`/api/projects/${created.body.id}/edit/`, { tags: ['b', 'c'] })).status).toBe(200);
    expect((await t.admin.get(`/api/projects/${created.body.id}/`)).body.tags).toEqual(['b', 'c']);
    // A form sends the list as JSON text; whitespace inside a tag splits it.
    const form = await t.admin.request('PATCH', `/api/projects/${created.body.id}/`, { form: { tags: '["x y", "z"]' } });
    expect(form.status).toBe(200);
    expect(form.body.tags).toEqual(['x', 'y', 'z']);
    expect((await t.admin.patch(`/api/projects/${created.body.id}/`, { tags: [{ a: 1 }] })).status).toBe(400);
    expect((await t.admin.patch(`/api/projects/${created.body.id}/`, { tags: '[not json' })).status).toBe(400);
  });

  it('searches projects by name, task name, #project tag, ##task tag and @owner, as WebODM', async () => {
    // A user who sees only their own projects (the administrator sees everyone's).
    const { client: me } = await t.createUser(`pilot-${backend}`);
    const { client: other } = await t.createUser(`surveyor-${backend}`);
    const p1 = (await me.post('/api/projects/', { name: 'test project', tags: ['a', 'b', 'c', '.hidden'] })).body.id;
    const p2 = (await me.post('/api/projects/', { name: 'test project2', tags: ['c', 'd'] })).body.id;
    await other.post('/api/projects/', { name: 'elsewhere', tags: ['c'] });
    const t1 = (await me.post(`/api/projects/${p1}/tasks/`, { partial: true, name: 'TestTask1', tags: ['d', 'e', '.hidden'] })).body;
    expect(t1.tags).toEqual(['d', 'e', '.hidden']);
    await me.post(`/api/projects/${p1}/tasks/`, { partial: true, name: 'TestTask0' });
    const t2 = (await me.post(`/api/projects/${p2}/tasks/`, { partial: true, name: 'TestTask2', tags: ['ee', '.hidden'] })).body;

    const search = async (text: string) => names(await me.get('/api/projects/', { search: text }));
    expect(await search(':c')).toEqual(['test project', 'test project2']);
    expect(await search('#d')).toEqual(['test project2']);
    expect(await search('project2')).toEqual(['test project2']);
    // ##e is a whole task tag: "ee" does not hold it; a hidden tag answers to its name.
    expect(await search('::e')).toEqual(['test project']);
    expect(await search('##hidden')).toEqual(['test project', 'test project2']);
    expect(await search('TestTask2')).toEqual(['test project2']);
    expect(await search('test #a ##E')).toEqual(['test project']);
    expect(await search(`@surveyor-${backend}`)).toEqual([]);
    expect(names(await other.get('/api/projects/', { search: `@surveyor-${backend} #c` }))).toEqual(['elsewhere']);
    // LIKE's wildcards are plain characters.
    expect(await search('%')).toEqual([]);
    expect(await search('#_')).toEqual([]);
    // With pages too.
    const paged = await me.get('/api/projects/', { search: ':c', page: 1 });
    expect(paged.body.count).toBe(2);

    // The task list: words in the name, #tag among the task's tags.
    const tasks = async (project: number, text: string) => names(await me.get(`/api/projects/${project}/tasks/`, { search: text }));
    expect(await tasks(p1, '#e')).toEqual(['TestTask1']);
    expect(await tasks(p1, 'task0')).toEqual(['TestTask0']);
    expect(await tasks(p1, 'TestTask #hidden')).toEqual(['TestTask1']);
    expect(await tasks(p2, '#e')).toEqual([]);

    // Task tags change with PATCH; multipart and form clients send JSON text.
    const patched = await me.patch(`/api/projects/${p2}/tasks/${t2.id}/`, { tags: ['d', 'e'] });
    expect(patched.status).toBe(200);
    expect(patched.body.tags).toEqual(['d', 'e']);
    const row = await t.service.db.selectFrom('tasks').select('tags').where('id', '=', t2.id).executeTakeFirstOrThrow();
    expect(row.tags).toBe('d e');
    expect(await tasks(p2, '#e')).toEqual(['TestTask2']);
    const form = await me.request('PATCH', `/api/projects/${p2}/tasks/${t2.id}/`, { form: { tags: '["f"]' } });
    expect(form.body.tags).toEqual(['f']);
    expect((await me.patch(`/api/projects/${p2}/tasks/${t2.id}/`, { tags: [{}] })).status).toBe(400);
  });
});
