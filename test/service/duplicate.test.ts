// Duplicating tasks and projects as WebODM does: "Copy of ..." with the files (hard-linked), 200 with
// {success, task} or {success, project}, "change" needed; only finished tasks are copied.
import { stat } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { QUICK_BACKENDS, type TestService, startService } from './helpers.ts';
import { TaskStatus, completedTask, download, fakeNode, finished, makeJpegs, waitForTask } from './taskhelpers.ts';

describe.each(QUICK_BACKENDS)('duplicate on %s', (backend) => {
  let t: TestService;
  let node: RunningNode;
  let work: string;
  let images: string[];

  beforeAll(async () => {
    t = await startService(backend);
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-duplicate-'));
    ({ node } = await fakeNode(t, path.join(work, 'node')));
    images = await makeJpegs(path.join(work, 'images'), 3);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  const taskFile = (projectId: number, taskId: number, ...parts: string[]) =>
    path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(taskId), ...parts);

  // The files' round trip is the same on either database (the rows' is in the other tests): SQLite alone.
  it.runIf(backend === 'sqlite')('copies a finished task with its files, under "Copy of", and the copy processes on its own', async () => {
    const projectId = (await t.admin.post('/api/projects/', { name: 'coast' })).body.id;
    const tasksUrl = `/api/projects/${projectId}/tasks/`;
    const original = await completedTask(t.admin, projectId, images, { name: 'Flight 1', tags: '["north"]' });

    const reply = await t.admin.post(`${tasksUrl}${original.id}/duplicate/`);
    expect(reply.status).toBe(200);
    expect(reply.body.success).toBe(true);
    const copy = reply.body.task;
    expect(copy.id).not.toBe(original.id);
    expect(copy).toMatchObject({
      name: 'Copy of Flight 1',
      project: projectId,
      status: TaskStatus.COMPLETED,
      images_count: 3,
      tags: ['north'],
      available_assets: original.available_assets,
      statistics: original.statistics,
      options: original.options,
      uuid: '',
    });
    // Photographs and results are links to the same files; the console is a copy of its own.
    const [a, b] = await Promise.all([stat(taskFile(projectId, original.id, 'images', 'IMG_0000.JPG')), stat(taskFile(projectId, copy.id, 'images', 'IMG_0000.JPG'))]);
    expect(b.ino).toBe(a.ino);
    const [c1, c2] = await Promise.all([stat(taskFile(projectId, original.id, 'console.txt')), stat(taskFile(projectId, copy.id, 'console.txt'))]);
    expect(c2.ino).not.toBe(c1.ino);
    expect((await t.admin.get(`${tasksUrl}${copy.id}/output/`)).body).toBe((await t.admin.get(`${tasksUrl}${original.id}/output/`)).body);
    const [ortho, orthoCopy] = await Promise.all([
      download(t.admin, `${tasksUrl}${original.id}/download/orthophoto.tif`),
      download(t.admin, `${tasksUrl}${copy.id}/download/orthophoto.tif`),
    ]);
    expect(orthoCopy.status).toBe(200);
    expect(orthoCopy.bytes).toEqual(ortho.bytes);

    // Restarted, the copy goes to the node anew (a task of its own there) and the original is untouched.
    expect((await t.admin.post(`${tasksUrl}${copy.id}/restart/`)).status).toBe(200);
    const again = await waitForTask(t.admin, `${tasksUrl}${copy.id}/`, (task) => finished(task) && task.uuid !== '');
    expect(again.status, again.last_error).toBe(TaskStatus.COMPLETED);
    expect(again.uuid).not.toBe(original.uuid);
    expect((await t.admin.get(`${tasksUrl}${original.id}/`)).body).toMatchObject({ uuid: original.uuid, status: TaskStatus.COMPLETED });

    // A task still waiting for its files, or in processing, is not copied.
    const partial = (await t.admin.post(tasksUrl, { partial: true, name: 'later' })).body;
    const refused = await t.admin.post(`${tasksUrl}${partial.id}/duplicate/`);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/only a task that has completed, failed or been canceled can be duplicated/);
    expect((await t.admin.post(`${tasksUrl}999999/duplicate/`)).status).toBe(404);
  });

  it('needs "change": a viewer is refused (403), a stranger sees nothing (404)', async () => {
    const { client: viewer } = await t.createUser(`viewer-${backend}`);
    const { client: editor } = await t.createUser(`editor-${backend}`);
    const { client: stranger } = await t.createUser(`stranger-${backend}`);
    const projectId = (await t.admin.post('/api/projects/', { name: 'shared' })).body.id;
    await t.admin.post(`/api/projects/${projectId}/edit/`, {
      permissions: [
        { username: `viewer-${backend}`, permissions: ['view'] },
        { username: `editor-${backend}`, permissions: ['view', 'change'] },
      ],
    });
    const task = await completedTask(t.admin, projectId, images);
    const url = `/api/projects/${projectId}/tasks/${task.id}/duplicate/`;
    expect((await viewer.post(url)).status).toBe(403);
    expect((await stranger.post(url)).status).toBe(404);
    expect((await t.anonymous.post(url)).status).toBe(403);
    expect((await editor.post(url)).status).toBe(200);
    expect((await viewer.post(`/api/projects/${projectId}/duplicate/`)).status).toBe(403);
    expect((await stranger.post(`/api/projects/${projectId}/duplicate/`)).status).toBe(404);

    // A project's copy belongs to whoever made it, holds copies of all its tasks, and is not shared.
    const reply = await editor.post(`/api/projects/${projectId}/duplicate/`);
    expect(reply.status).toBe(200);
    expect(reply.body.success).toBe(true);
    const project = reply.body.project;
    expect(project).toMatchObject({ name: 'Copy of shared', permissions: ['add', 'change', 'delete', 'view'] });
    expect(project.tasks).toHaveLength(2);
    const copies = (await editor.get(`/api/projects/${project.id}/tasks/`)).body;
    expect(copies.map((copy: { name: string }) => copy.name).sort()).toEqual([task.name, `Copy of ${task.name}`].sort());
    expect(copies.every((copy: { status: number }) => copy.status === TaskStatus.COMPLETED)).toBe(true);
    expect((await viewer.get(`/api/projects/${project.id}/`)).status).toBe(404);
    expect((await editor.get(`/api/projects/${project.id}/permissions/`)).body).toEqual([
      { username: `editor-${backend}`, owner: true, permissions: ['add', 'change', 'delete', 'view'] },
    ]);

    // A project with a task that is not finished is not copied, and nothing is left of the attempt.
    await t.admin.post(`/api/projects/${projectId}/tasks/`, { partial: true });
    const before = (await t.admin.get('/api/projects/')).body.count;
    const refused = await t.admin.post(`/api/projects/${projectId}/duplicate/`);
    expect(refused.status).toBe(400);
    expect((await t.admin.get('/api/projects/')).body.count).toBe(before);
  });
});
