import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type Client, ISO_TIMESTAMP, type TestService, startService } from './helpers.ts';

describe.each(BACKENDS)('admin API (%s)', (backend) => {
  let t: TestService;
  let staff: Client;
  let plain: Client;
  beforeAll(async () => {
    t = await startService(backend);
    staff = (await t.createUser('staffer', { is_staff: true })).client;
    plain = (await t.createUser('plain')).client;
  });
  afterAll(() => t?.close());

  it('is for staff only: 403 for other users and anonymous callers', async () => {
    for (const client of [plain, t.anonymous]) {
      for (const path of ['/api/admin/users/', '/api/admin/groups/', '/api/admin/users/1/', '/api/admin/groups/1/']) {
        expect((await client.get(path)).status).toBe(403);
      }
      expect((await client.post('/api/admin/users/', { username: 'x', password: 'y' })).status).toBe(403);
      expect((await client.post('/api/admin/groups/', { name: 'x' })).status).toBe(403);
      expect((await client.delete('/api/admin/users/1/')).status).toBe(403);
    }
    const denied = await plain.get('/api/admin/users/');
    expect(denied.body).toEqual({ detail: 'You do not have permission to perform this action.' });
    expect((await staff.get('/api/admin/users/')).status).toBe(200);
  });

  it('creates users with hashed passwords and the spec defaults', async () => {
    const created = await staff.post('/api/admin/users/', { username: 'carol', password: 'carol-pw', email: 'c@example.org' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(Number),
      password: expect.stringMatching(/^pbkdf2_sha256\$1000\$/),
      last_login: null,
      is_superuser: false,
      username: 'carol',
      first_name: '',
      last_name: '',
      email: 'c@example.org',
      is_staff: false,
      is_active: false,
      date_joined: expect.stringMatching(ISO_TIMESTAMP),
      groups: [],
      user_permissions: [],
    });
    expect(JSON.stringify(created.body)).not.toContain('carol-pw');
    // Inactive by default: no login until activated.
    expect((await t.anonymous.post('/api/token-auth/', { username: 'carol', password: 'carol-pw' })).status).toBe(400);
    expect((await staff.patch(`/api/admin/users/${created.body.id}/`, { is_active: true })).body.is_active).toBe(true);
    expect((await t.anonymous.post('/api/token-auth/', { username: 'carol', password: 'carol-pw' })).status).toBe(200);
  });

  it('hashes passwords on update, and keeps a hash that PUT echoes back', async () => {
    const { id } = await t.createUser('dave');
    const before = (await staff.get(`/api/admin/users/${id}/`)).body;
    const echoed = await staff.put(`/api/admin/users/${id}/`, { ...before, first_name: 'Dave' });
    expect(echoed.status).toBe(200);
    expect(echoed.body).toMatchObject({ first_name: 'Dave', password: before.password });
    await t.login('dave', 'dave-password');

    const changed = await staff.put(`/api/admin/users/${id}/`, { ...before, password: 'new-secret' });
    expect(changed.body.password).toMatch(/^pbkdf2_sha256\$/);
    expect(changed.body.password).not.toBe(before.password);
    await t.login('dave', 'new-secret');
    expect((await t.anonymous.post('/api/token-auth/', { username: 'dave', password: 'dave-password' })).status).toBe(400);

    const patched = await staff.patch(`/api/admin/users/${id}/`, { password: 'patched' });
    expect(patched.body.password).not.toContain('patched');
    await t.login('dave', 'patched');
    const row = await t.service.db.selectFrom('users').select('password').where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.password).toBe(patched.body.password);
  });

  it('validates user fields', async () => {
    expect(await staff.post('/api/admin/users/', { username: 'eve' })).toMatchObject({
      status: 400,
      body: { password: ['This field is required.'] },
    });
    expect(await staff.post('/api/admin/users/', { username: 'plain', password: 'x' })).toMatchObject({
      status: 400,
      body: { username: ['A user with that username already exists.'] },
    });
    expect(await staff.post('/api/admin/users/', { username: 'eve', password: 'x', groups: [999999] })).toMatchObject({
      status: 400,
      body: { groups: ['Invalid pk "999999" - object does not exist.'] },
    });
    expect(await staff.post('/api/admin/users/', { username: 'eve', password: 'x', user_permissions: [424242] })).toMatchObject({
      status: 400,
      body: { user_permissions: ['Invalid pk "424242" - object does not exist.'] },
    });
    const many = await staff.post('/api/admin/users/', { username: 'bad name!', password: 'x', email: 'not-an-email', is_staff: 'yes' });
    expect(many.status).toBe(400);
    expect(Object.keys(many.body).sort()).toEqual(['email', 'is_staff', 'username']);
    const plainId = (await staff.get('/api/admin/users/', { username: 'plain' })).body.results[0].id;
    expect(await staff.patch(`/api/admin/users/${plainId}/`, { username: 'staffer' })).toMatchObject({
      status: 400,
      body: { username: ['A user with that username already exists.'] },
    });
  });

  it('pages and filters the user list', async () => {
    await staff.post('/api/admin/users/', { username: 'frank', password: 'x', email: 'frank@example.org' });
    const all = await staff.get('/api/admin/users/');
    expect(all.body).toMatchObject({ count: expect.any(Number), next: null, previous: null });
    expect(all.body.results.length).toBe(all.body.count);
    const byEmail = await staff.get('/api/admin/users/', { email: 'frank@example.org' });
    expect(byEmail.body.results.map((u: { username: string }) => u.username)).toEqual(['frank']);
    const paged = await staff.get('/api/admin/users/', { page_size: 2, ordering: '-id' });
    expect(paged.body.results).toHaveLength(2);
    expect(paged.body.next).toBe(`${t.url}/api/admin/users/?page_size=2&ordering=-id&page=2`);
    expect(paged.body.results[0].id).toBeGreaterThan(paged.body.results[1].id);
    expect((await staff.get('/api/admin/users/', { ordering: 'password' })).status).toBe(400);
  });

  it('deletes users together with the projects they own', async () => {
    const { id, client } = await t.createUser('leaver');
    const project = (await client.post('/api/projects/', { name: 'Leftover' })).body;
    expect((await staff.delete(`/api/admin/users/${id}/`)).status).toBe(204);
    expect((await staff.get(`/api/admin/users/${id}/`)).status).toBe(404);
    expect((await t.admin.get(`/api/projects/${project.id}/`)).status).toBe(404);
  });

  it('manages groups: create, read, filter, replace, delete', async () => {
    const created = await staff.post('/api/admin/groups/', { name: 'pilots', permissions: [2, 1, 2] });
    expect(created).toMatchObject({ status: 201, body: { name: 'pilots', permissions: [1, 2] } });
    const id = created.body.id;
    expect((await staff.get(`/api/admin/groups/${id}/`)).body).toEqual(created.body);
    expect(await staff.post('/api/admin/groups/', { name: 'pilots' })).toMatchObject({
      status: 400,
      body: { name: ['A group with that name already exists.'] },
    });
    expect(await staff.post('/api/admin/groups/', { name: 'x', permissions: [999] })).toMatchObject({
      status: 400,
      body: { permissions: ['Invalid pk "999" - object does not exist.'] },
    });
    expect((await staff.post('/api/admin/groups/', {})).body).toEqual({ name: ['This field is required.'] });

    const byName = await staff.get('/api/admin/groups/', { name: 'pilots' });
    expect(byName.body).toMatchObject({ count: 1, next: null, previous: null, results: [created.body] });

    const replaced = await staff.put(`/api/admin/groups/${id}/`, { name: 'drone pilots' });
    expect(replaced.body).toEqual({ id, name: 'drone pilots', permissions: [] });

    const member = await staff.post('/api/admin/users/', { username: 'gina', password: 'x', groups: [id] });
    expect(member.body.groups).toEqual([id]);
    expect((await staff.delete(`/api/admin/groups/${id}/`)).status).toBe(204);
    expect((await staff.get(`/api/admin/groups/${id}/`)).status).toBe(404);
    expect((await staff.get(`/api/admin/users/${member.body.id}/`)).body.groups).toEqual([]);
  });
  it('keeps superusers to superusers: staff cannot make one, nor change or delete one', async () => {
    const denied = { status: 403, body: { detail: 'Only a superuser can create, change or delete a superuser.' } };
    expect(await staff.post('/api/admin/users/', { username: 'root2', password: 'pw', is_superuser: true })).toMatchObject(denied);
    const me = (await staff.get('/api/admin/users/', { username: 'staffer' })).body.results[0];
    expect(await staff.patch(`/api/admin/users/${me.id}/`, { is_superuser: true })).toMatchObject(denied);
    const admin = (await staff.get('/api/admin/users/', { username: 'admin' })).body.results[0];
    expect(await staff.patch(`/api/admin/users/${admin.id}/`, { password: 'taken-over' })).toMatchObject(denied);
    expect(await staff.delete(`/api/admin/users/${admin.id}/`)).toMatchObject(denied);
    expect((await staff.get(`/api/admin/users/${me.id}/`)).body.is_superuser).toBe(false);
    // A superuser may; staff still manage ordinary accounts.
    const made = await t.admin.post('/api/admin/users/', { username: 'root2', password: 'pw', is_superuser: true });
    expect(made.status).toBe(201);
    expect((await staff.patch(`/api/admin/users/${me.id}/`, { first_name: 'Stef' })).status).toBe(200);
  });
});
