// compact/ as WebODM does it: "delete" needed, the photographs removed by the scheduler, the results (every
// download) kept, `compacted` true and the size recomputed; a compacted task no longer restarts from the start.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { BACKENDS, type TestService, startService } from './helpers.ts';
import { TaskStatus, completedTask, download, fakeNode, finished, makeJpegs, waitForTask } from './taskhelpers.ts';

describe.each(BACKENDS)('compact on %s', (backend) => {
  let t: TestService;
  let node: RunningNode;
  let work: string;
  let images: string[];

  beforeAll(async () => {
    t = await startService(backend);
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-compact-'));
    ({ node } = await fakeNode(t, path.join(work, 'node')));
    // Photographs large enough that their removal shows in the size (MB, two decimals).
    images = await makeJpegs(path.join(work, 'images'), 3, 1024);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('removes the photographs and keeps every download; needs "delete"', async () => {
    const { client: editor } = await t.createUser(`editor-${backend}`);
    const projectId = (await t.admin.post('/api/projects/', { name: 'quarry' })).body.id;
    await t.admin.post(`/api/projects/${projectId}/edit/`, { permissions: [{ username: `editor-${backend}`, permissions: ['view', 'change'] }] });
    const tasksUrl = `/api/projects/${projectId}/tasks/`;
    const task = await completedTask(t.admin, projectId, images);
    expect(task.compacted).toBe(false);
    const url = `${tasksUrl}${task.id}/`;
    const imagesDir = path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(task.id), 'images');
    expect(existsSync(imagesDir)).toBe(true);

    expect((await editor.post(`${url}compact/`)).status).toBe(403);
    const partial = (await t.admin.post(tasksUrl, { partial: true })).body;
    expect((await t.admin.post(`${tasksUrl}${partial.id}/compact/`)).status).toBe(400);

    const reply = await t.admin.post(`${url}compact/`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ success: true });
    const compacted = await waitForTask(t.admin, url, (seen) => seen.compacted && seen.pending_action === null);
    expect(existsSync(imagesDir)).toBe(false);
    expect(compacted.status).toBe(TaskStatus.COMPLETED);
    expect(compacted.size).toBeLessThan(task.size);
    expect(compacted.images_count).toBe(task.images_count);
    expect(compacted.available_assets).toEqual(task.available_assets);
    for (const asset of task.available_assets) {
      expect((await download(t.admin, `${url}download/${asset}`)).status, asset).toBe(200);
    }

    // From the start it cannot be processed again; from a later stage, on the node that still has it, it can.
    const fromStart = await t.admin.post(`${url}restart/`);
    expect(fromStart.status).toBe(400);
    expect(fromStart.body.detail).toMatch(/compacted/);
    const later = await t.admin.post(`${url}restart/`, { options: [{ name: 'rerun-from', value: 'odm_orthophoto' }] });
    expect(later.status).toBe(200);
    const again = await waitForTask(t.admin, url, (seen) => finished(seen) && seen.running_progress === 1 && seen.pending_action === null);
    expect(again.status, again.last_error).toBe(TaskStatus.COMPLETED);
    expect(again.compacted).toBe(true);
  });
});
