// Who may do what with a project: anonymous, the owner, another user, a member of a group the project is
// shared with, a staff user and a superuser.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, type Client, type Role, type TestService, createCallers, startService } from './helpers.ts';

const ALL = ['add', 'change', 'delete', 'view'];

describe.each(BACKENDS)('project permissions (%s)', (backend) => {
  let t: TestService;
  let callers: Record<Role, Client>;
  let projectId: number;

  beforeAll(async () => {
    t = await startService(backend);
    callers = await createCallers(t);
  });
  afterAll(() => t?.close());

  beforeEach(async () => {
    projectId = (await callers.owner.post('/api/projects/', { name: 'Shared field', description: 'd' })).body.id;
    const shared = await callers.owner.post(`/api/projects/${projectId}/edit/`, {
      permissions: [{ groupname: 'surveyors', permissions: ['view'] }],
    });
    expect(shared.status).toBe(200);
  });

  const listed = async (client: Client) =>
    (await client.get('/api/projects/', { page_size: 1000 })).body.results?.some((p: { id: number }) => p.id === projectId);

  it.each([
    // caller, listed, GET, permissions field, PATCH, GET permissions/, POST edit/
    ['anonymous', undefined, 403, undefined, 403, 403, 403],
    ['owner', true, 200, ALL, 200, 200, 200],
    ['other', false, 404, undefined, 404, 404, 404],
    ['member', true, 200, ['view'], 403, 403, 403],
    ['staff', false, 404, undefined, 404, 404, 404],
    ['superuser', true, 200, ALL, 200, 200, 200],
  ] as const)('%s: listed %s, GET %s, permissions %j, PATCH %s, sharing %s / %s', async (who, inList, get, perms, patch, sharing, edit) => {
    const client = callers[who];
    expect(await listed(client)).toBe(inList);
    const detail = await client.get(`/api/projects/${projectId}/`);
    expect(detail.status).toBe(get);
    expect(detail.body.permissions).toEqual(perms);
    expect((await client.patch(`/api/projects/${projectId}/`, { name: `renamed by ${who}` })).status).toBe(patch);
    expect((await client.get(`/api/projects/${projectId}/permissions/`)).status).toBe(sharing);
    expect((await client.post(`/api/projects/${projectId}/edit/`, { description: who })).status).toBe(edit);
    const seen = (await callers.owner.get(`/api/projects/${projectId}/`)).body;
    expect(seen.name).toBe(patch === 200 ? `renamed by ${who}` : 'Shared field');
    expect(seen.description).toBe(edit === 200 ? who : 'd');
  });

  it.each([
    ['anonymous', 403, true],
    ['other', 404, true],
    ['staff', 404, true],
    ['owner', 204, false],
    ['superuser', 204, false],
  ] as const)('DELETE by %s answers %s (project kept: %s)', async (who, status, kept) => {
    expect((await callers[who].delete(`/api/projects/${projectId}/`)).status).toBe(status);
    expect((await callers.owner.get(`/api/projects/${projectId}/`)).status).toBe(kept ? 200 : 404);
  });

  // The same six callers on the task routes of that project; a partial task is a real task that needs no node.
  it.each([
    // caller, list, detail, output, create, PATCH, tiles.json, remove
    // A task's own reads answer 404 to anonymous callers on a private task (public tasks are open to them).
    ['anonymous', 403, 404, 403, 403, 403, 404, 403],
    ['owner', 200, 200, 200, 201, 200, 404, 200],
    ['other', 404, 404, 404, 404, 404, 404, 404],
    ['member', 200, 200, 200, 403, 403, 404, 403],
    ['staff', 404, 404, 404, 404, 404, 404, 404],
    ['superuser', 200, 200, 200, 201, 200, 404, 200],
  ] as const)('%s on tasks: list %s, detail %s, output %s, create %s, PATCH %s, tiles %s, remove %s', async (who, list, detail, output, create, patch, tiles, remove) => {
    const client = callers[who];
    const tasks = `/api/projects/${projectId}/tasks/`;
    const task = (await callers.owner.post(tasks, { partial: true, name: 'flight' })).body.id as number;
    expect((await client.get(tasks)).status).toBe(list);
    expect((await client.get(`${tasks}${task}/`)).status).toBe(detail);
    expect((await client.get(`${tasks}${task}/output/`)).status).toBe(output);
    expect((await client.post(tasks, { partial: true, name: who })).status).toBe(create);
    expect((await client.patch(`${tasks}${task}/`, { name: `renamed by ${who}` })).status).toBe(patch);
    // No results yet: whoever may see the task learns only that, the others that there is nothing.
    expect((await client.get(`${tasks}${task}/orthophoto/tiles.json`)).status).toBe(tiles);
    expect((await client.post(`${tasks}${task}/remove/`)).status).toBe(remove);
    const after = await callers.owner.get(`${tasks}${task}/`);
    // Whoever may remove may also rename; the others changed nothing.
    if (remove === 200) expect([200, 404]).toContain(after.status);
    else expect(after.body.name).toBe('flight');
  });

  it('DELETE by a user it is shared with only removes their own access', async () => {
    await callers.owner.post(`/api/projects/${projectId}/edit/`, {
      permissions: [{ username: 'other', permissions: ['view', 'delete'] }],
    });
    expect((await callers.other.get(`/api/projects/${projectId}/`)).status).toBe(200);
    expect((await callers.other.delete(`/api/projects/${projectId}/`)).status).toBe(204);
    expect((await callers.other.get(`/api/projects/${projectId}/`)).status).toBe(404);
    expect((await callers.owner.get(`/api/projects/${projectId}/`)).status).toBe(200);
  });

  it('shares with users and groups through edit/ and lists the sharing, owner first', async () => {
    const edit = await callers.owner.post(`/api/projects/${projectId}/edit/`, {
      name: 'Renamed',
      permissions: [
        { username: 'owner', owner: true, permissions: ['view'] },
        { username: 'other', permissions: ['view', 'change'] },
        { groupname: 'surveyors', permissions: ['view', 'add'] },
      ],
    });
    expect(edit).toMatchObject({ status: 200, body: { success: true } });
    expect((await callers.owner.get(`/api/projects/${projectId}/permissions/`)).body).toEqual([
      { username: 'owner', owner: true, permissions: ALL },
      { username: 'other', owner: false, permissions: ['change', 'view'] },
      { groupname: 'surveyors', permissions: ['add', 'view'] },
    ]);
    // The owner's entry is ignored: the owner keeps everything.
    expect((await callers.owner.get(`/api/projects/${projectId}/`)).body).toMatchObject({ name: 'Renamed', permissions: ALL });
    expect((await callers.other.get(`/api/projects/${projectId}/`)).body.permissions).toEqual(['change', 'view']);
    expect((await callers.member.get(`/api/projects/${projectId}/`)).body.permissions).toEqual(['add', 'view']);
    expect((await callers.other.patch(`/api/projects/${projectId}/`, { description: 'by other' })).status).toBe(200);
    // With "change", other may read the sharing too.
    expect((await callers.other.get(`/api/projects/${projectId}/permissions/`)).status).toBe(200);

    // Users and groups left out lose their access; fields left out keep their value.
    await callers.owner.post(`/api/projects/${projectId}/edit/`, { permissions: [] });
    expect((await callers.other.get(`/api/projects/${projectId}/`)).status).toBe(404);
    expect((await callers.member.get(`/api/projects/${projectId}/`)).status).toBe(404);
    const kept = (await callers.owner.get(`/api/projects/${projectId}/`)).body;
    expect(kept).toMatchObject({ name: 'Renamed', description: 'by other' });
  });

  it('refuses unknown users and groups and malformed entries in the sharing', async () => {
    const edit = (permissions: unknown) => callers.owner.post(`/api/projects/${projectId}/edit/`, { permissions });
    expect(await edit([{ username: 'ghost', permissions: ['view'] }])).toMatchObject({
      status: 400,
      body: { permissions: ['Invalid user in permissions list'] },
    });
    expect(await edit([{ groupname: 'ghosts', permissions: ['view'] }])).toMatchObject({
      status: 400,
      body: { permissions: ['Invalid group in permissions list'] },
    });
    expect((await edit([{ username: 'other', permissions: ['fly'] }])).status).toBe(400);
    expect((await edit([{ permissions: ['view'] }])).status).toBe(400);
    expect((await edit('everyone')).status).toBe(400);
    // Nothing changed: the group still sees the project, other still does not.
    expect((await callers.member.get(`/api/projects/${projectId}/`)).status).toBe(200);
    expect((await callers.other.get(`/api/projects/${projectId}/`)).status).toBe(404);
  });

  it('lets any signed-in user create projects, owned by them', async () => {
    const created = await callers.other.post('/api/projects/', { name: 'Mine' });
    expect(created.status).toBe(201);
    expect(created.body.permissions).toEqual(ALL);
    expect((await callers.owner.get(`/api/projects/${created.body.id}/`)).status).toBe(404);
    expect((await t.anonymous.post('/api/projects/', { name: 'Nobody' })).status).toBe(403);
  });
});
