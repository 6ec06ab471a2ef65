// Unfinished uploads expire: with a short PARTIAL_UPLOAD_EXPIRY_HOURS, the periodic sweep removes a partial task
// that was never committed (row and files), upload chunks whose last piece never came and external imports never
// committed; younger ones stay.
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type TestService, startService, testConfig } from './helpers.ts';
import { imageForm, makeJpegs, postForm } from './taskhelpers.ts';

const EXPIRY_MS = 3000;
const exists = (file: string) => access(file).then(() => true, () => false);

describe.each(BACKENDS)('expiry of unfinished uploads on %s', (backend) => {
  let t: TestService;
  let work: string;
  let images: string[];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-expiry-'));
    images = await makeJpegs(work, 1);
    t = await startService(backend, { tasks: { ...testConfig(work, undefined).tasks, partialExpiryMs: EXPIRY_MS } });
  });

  afterAll(async () => {
    await t.close();
    await rm(work, { recursive: true, force: true });
  });

  it('removes partial tasks and chunks older than the expiry, and keeps younger ones', async () => {
    const projectId = (await t.admin.post('/api/projects/', { name: 'survey' })).body.id;
    const tasksUrl = `/api/projects/${projectId}/tasks/`;
    const chunk = (id: string) => ({ dzuuid: id, dzchunkindex: '0', dztotalchunkcount: '2', dzchunkbyteoffset: '0' });
    const stale = (await t.admin.post(tasksUrl, { partial: true })).body.id;
    expect((await postForm(t.admin, `${tasksUrl}${stale}/upload/`, await imageForm(images))).status).toBe(200);
    expect((await postForm(t.admin, `${tasksUrl}${stale}/upload/`, await imageForm(images, chunk('half'), 'file'))).status).toBe(200);
    expect((await postForm(t.admin, `${tasksUrl}import`, await imageForm(images, chunk('import'), 'file'))).status).toBe(200);
    const external = (await t.admin.post(`${tasksUrl}import/external/init`)).body.uuid;
    const externalFolder = path.join(t.dataDir, 'media', 'tmp', 'external', String(projectId), external);
    const staleFolder = path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(stale));
    const importChunk = path.join(t.dataDir, 'media', 'tmp', 'imports', 'import');
    expect([await exists(path.join(staleFolder, 'work', 'chunks', 'half')), await exists(importChunk)]).toEqual([true, true]);

    // The import's chunk was written after the task was made: a sweep may take the task and leave it to the next.
    const gone = async () =>
      (await t.admin.get(`${tasksUrl}${stale}/`)).status === 404 && !(await exists(importChunk)) && !(await exists(externalFolder));
    const deadline = Date.now() + 4 * EXPIRY_MS;
    while (!(await gone()) && Date.now() < deadline) await sleep(100);
    const young = (await t.admin.post(tasksUrl, { partial: true })).body.id;
    expect((await t.admin.get(`${tasksUrl}${stale}/`)).status).toBe(404);
    expect(await exists(staleFolder)).toBe(false);
    expect(await exists(importChunk)).toBe(false);
    expect(await exists(externalFolder)).toBe(false);
    const youngExternal = (await t.admin.post(`${tasksUrl}import/external/init`)).body.uuid;
    await sleep(EXPIRY_MS / 3);
    expect(await exists(path.join(t.dataDir, 'media', 'tmp', 'external', String(projectId), youngExternal))).toBe(true);
    expect((await t.admin.get(`${tasksUrl}${young}/`)).status).toBe(200);
  });
});
