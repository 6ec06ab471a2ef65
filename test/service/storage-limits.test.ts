// What users may store: the disk reserve (MIN_FREE_DISK_GB, made larger than the free disk here) answers 507
// and stores nothing; the quota of a project's owner (WebODM's admin/profiles) refuses uploads and imports
// once used, and only superusers change it. On SQLite and PostgreSQL.
import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type Client, type TestService, startService, testConfig } from './helpers.ts';
import { imageForm, makeJpegs, postForm } from './taskhelpers.ts';

const MB = 2 ** 20;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
}

describe.each(BACKENDS)('storage limits on %s', (backend) => {
  let t: TestService;
  let work: string;
  let images: string[];
  let owner: Client;
  let ownerId: number;
  let projectId: number;

  beforeAll(async () => {
    t = await startService(backend);
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-limits-'));
    images = await makeJpegs(work, 2);
    ({ client: owner, id: ownerId } = await t.createUser('owner'));
    projectId = (await owner.post('/api/projects/', { name: 'survey' })).body.id;
  });

  afterAll(async () => {
    await t.close();
    await rm(work, { recursive: true, force: true });
  });

  const tasksUrl = () => `/api/projects/${projectId}/tasks/`;
  const projectFiles = () => filesUnder(path.join(t.dataDir, 'media', 'project', String(projectId)));

  it('lets a superuser set a quota through admin/profiles, and no one else', async () => {
    const { client: staff } = await t.createUser('staff', { is_staff: true });
    expect((await t.admin.get(`/api/admin/profiles/${ownerId}/`)).body).toEqual({ user: ownerId, quota: -1 });
    expect((await staff.patch(`/api/admin/profiles/${ownerId}/`, { quota: 5 })).status).toBe(403);
    expect((await owner.patch(`/api/admin/profiles/${ownerId}/`, { quota: 5 })).status).toBe(403);
    expect((await owner.get('/api/admin/profiles/')).status).toBe(403);
    expect((await t.admin.patch(`/api/admin/profiles/${ownerId}/`, { quota: -2 })).status).toBe(400);
    expect((await t.admin.put(`/api/admin/profiles/${ownerId}/`, { quota: 5 })).body).toEqual({ user: ownerId, quota: 5 });
    expect((await staff.get('/api/admin/profiles/')).body).toContainEqual({ user: ownerId, quota: 5 });
    expect((await t.admin.get(`/api/admin/profiles/${ownerId}/used_quota/`)).body).toEqual({ used: 0, total: 5 });
    expect((await t.admin.get('/api/admin/profiles/9999/')).status).toBe(404);
  });

  it('takes uploads under the quota, and refuses uploads and imports over it before storing anything', async () => {
    await t.admin.patch(`/api/admin/profiles/${ownerId}/`, { quota: 5 });
    const created = await postForm(owner, tasksUrl(), await imageForm(images));
    expect(created.status).toBe(201);
    const partial = (await owner.post(tasksUrl(), { partial: true })).body.id;
    const before = await projectFiles();
    // Results of 6 MB in the owner's project: over the 5 MB quota.
    await t.service.db.updateTable('tasks').set({ size: 6 * MB }).where('id', '=', created.body.id).execute();
    expect((await t.admin.get(`/api/admin/profiles/${ownerId}/used_quota/`)).body).toEqual({ used: 6, total: 5 });

    const refused = await postForm(owner, tasksUrl(), await imageForm(images));
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/quota.*5 MB.*6 MB used/);
    expect((await postForm(owner, `${tasksUrl()}${partial}/upload/`, await imageForm(images))).status).toBe(403);
    const imported = await owner.request('POST', `${tasksUrl()}import`, { raw: { body: 'PK\x05\x06', type: 'application/zip' } });
    expect(imported.status).toBe(403);
    expect((await owner.post(`${tasksUrl()}import`, { url: 'https://example.com/all.zip' })).status).toBe(403);
    expect((await owner.get(tasksUrl())).body).toHaveLength(2);
    expect(await projectFiles()).toEqual(before);

    await t.admin.patch(`/api/admin/profiles/${ownerId}/`, { quota: 0 });
    expect((await postForm(owner, `${tasksUrl()}${partial}/upload/`, await imageForm(images))).status).toBe(200);
  });
});

describe.each(BACKENDS)('the disk reserve on %s', (backend) => {
  let t: TestService;
  let work: string;
  let images: string[];
  let projectId: number;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-reserve-'));
    images = await makeJpegs(work, 2);
    // A reserve larger than any disk.
    t = await startService(backend, { tasks: { ...testConfig(work, undefined).tasks, minFreeBytes: 2 ** 62 } });
    projectId = (await t.admin.post('/api/projects/', { name: 'survey' })).body.id;
  });

  afterAll(async () => {
    await t.close();
    await rm(work, { recursive: true, force: true });
  });

  const tasksUrl = () => `/api/projects/${projectId}/tasks/`;

  it('refuses uploads and imports with 507 when the disk is within its reserve, keeping what was stored', async () => {
    const partial = (await t.admin.post(tasksUrl(), { partial: true })).body.id;
    // An image the partial task received before the disk filled up.
    const imagesDir = path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(partial), 'images');
    await mkdir(imagesDir, { recursive: true });
    await copyFile(images[0], path.join(imagesDir, 'IMG_0000.JPG'));
    const stored = await filesUnder(path.join(t.dataDir, 'media'));
    expect(stored).toEqual(['IMG_0000.JPG']);

    const created = await postForm(t.admin, tasksUrl(), await imageForm(images));
    expect(created.status).toBe(507);
    expect(created.body.detail).toMatch(/disk is nearly full/);
    expect((await postForm(t.admin, `${tasksUrl()}${partial}/upload/`, await imageForm(images.slice(1)))).status).toBe(507);
    const chunk = await imageForm(images.slice(1), { dzuuid: 'abc', dzchunkindex: '0', dztotalchunkcount: '2', dzchunkbyteoffset: '0' }, 'file');
    expect((await postForm(t.admin, `${tasksUrl()}import`, chunk)).status).toBe(507);
    expect((await t.admin.request('POST', `${tasksUrl()}import`, { raw: { body: 'PK\x05\x06', type: 'application/zip' } })).status).toBe(507);
    expect((await t.admin.get(tasksUrl())).body.map((task: { id: number }) => task.id)).toEqual([partial]);
    expect(await filesUnder(path.join(t.dataDir, 'media'))).toEqual(stored);
  });

  it('lists 507 in the OpenAPI document of the routes that store files', async () => {
    const paths = (await t.anonymous.get('/api/openapi.json')).body.paths;
    const base = '/api/projects/{project_id}/tasks';
    for (const route of [`${base}/`, `${base}/{task_id}/upload/`, `${base}/import`]) {
      expect(Object.keys(paths[route].post.responses)).toContain('507');
    }
  });
});
