// A task's ground control points through the API: gcp_list.txt read whatever name it was uploaded under, replaced
// only by a list whose every line holds (a 400 naming the line otherwise, the stored list untouched), not while the
// task is processing; and the next restart giving the new list to the node: an Aeromap node takes it into the task
// it keeps (rerun-from applies), a node that cannot (NodeODM) gets the task again from a new upload.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { type TestService, startService } from './helpers.ts';
import { TaskStatus, completedTask, fakeNode, finished, makeJpegs, waitForTask } from './taskhelpers.ts';

const LIST = (pixel: number) =>
  `EPSG:32632\n500000 5000000 100 ${pixel} 20 IMG_0000.JPG gcp1\n500000 5000000 100 ${pixel + 5} 20 IMG_0001.JPG gcp1\n500010 5000000 101 30 40 IMG_0001.JPG gcp2 check\n`;

describe('ground control points of a task', () => {
  let t: TestService;
  let node: RunningNode;
  let nodeDir: string;
  let work: string;
  let images: string[];
  let projectId: number;

  beforeAll(async () => {
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-gcp-'));
    nodeDir = path.join(work, 'node');
    ({ node } = await fakeNode(t, nodeDir));
    images = await makeJpegs(path.join(work, 'images'), 2);
    const uploaded = path.join(work, 'images', 'survey points.txt');
    await writeFile(uploaded, LIST(10));
    images.push(uploaded);
    projectId = (await t.admin.post('/api/projects/', { name: 'control' })).body.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('reads the list, refuses a bad one naming its line, and replaces it with a good one', async () => {
    const task = await completedTask(t.admin, projectId, images);
    const url = `/api/projects/${projectId}/tasks/${task.id}/gcp/`;
    expect((await t.admin.get(url)).body).toEqual({ filename: 'survey points.txt', gcp_list: LIST(10) });

    const refusals: [string, RegExp][] = [
      ['EPSG:32632\n', /needs a coordinate system on its first line, then one line per mark/],
      ['EPSG:32632\n500000 5000000 100 10 20\n', /line 2: expected "x y z pixel_x pixel_y image/],
      ['EPSG:32632\n500000 north 100 10 20 IMG_0000.JPG a\n', /line 2: the coordinates and the pixel must be numbers/],
      ['EPSG:32632\n# marked on site\n500000 5000000 100 10 20 IMG_0009.JPG a\n', /line 3: IMG_0009.JPG is not one of the task's photographs/],
      ['EPSG:32632\n1 2 3 10 20 IMG_0000.JPG a\n1 2 4 10 20 IMG_0001.JPG a\n', /line 3: point a has two different coordinates/],
      ['EPSG:32632\n1 2 3 10 20 IMG_0000.JPG a check\n1 2 3 10 20 IMG_0001.JPG a\n', /line 3: point a is a checkpoint on some lines, not on others/],
    ];
    for (const [text, message] of refusals) {
      const reply = await t.admin.put(url, { gcp_list: text });
      expect(reply.status, text).toBe(400);
      expect(reply.body.detail).toMatch(message);
    }
    expect((await t.admin.put(url, {})).status).toBe(400);
    expect((await t.admin.get(url)).body.gcp_list).toBe(LIST(10));

    const saved = await t.admin.put(url, { gcp_list: LIST(11) });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ points: 2, marks: 3, checkpoints: 1 });
    // One list: the uploaded file is replaced by gcp_list.txt.
    expect((await t.admin.get(url)).body).toEqual({ filename: 'gcp_list.txt', gcp_list: LIST(11) });
  });

  it('is refused while the task is processing', async () => {
    const reply = await t.admin.post(`/api/projects/${projectId}/tasks/`, { partial: true });
    const id = reply.body.id;
    await t.service.db.updateTable('tasks').set({ partial: 0, status: TaskStatus.RUNNING }).where('id', '=', id).execute();
    const refused = await t.admin.put(`/api/projects/${projectId}/tasks/${id}/gcp/`, { gcp_list: LIST(12) });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/processing/);
  });

  it('gives the new list to an Aeromap node with the restart, which reruns from the stage asked', async () => {
    const task = await completedTask(t.admin, projectId, images);
    const url = `/api/projects/${projectId}/tasks/${task.id}/`;
    const onNode = path.join(nodeDir, 'tasks', task.uuid, 'gcp_list.txt');
    expect(await readFile(onNode, 'utf8')).toBe(LIST(10));
    expect((await t.admin.put(`${url}gcp/`, { gcp_list: LIST(13) })).status).toBe(200);
    expect((await t.admin.post(`${url}restart/`, { options: [{ name: 'rerun-from', value: 'opensfm' }] })).status).toBe(200);
    const again = await waitForTask(t.admin, url, (seen) => finished(seen) && seen.running_progress === 1);
    expect(again.status, again.last_error).toBe(TaskStatus.COMPLETED);
    expect(again.uuid).toBe(task.uuid);
    expect(await readFile(onNode, 'utf8')).toBe(LIST(13));
    const output = (await t.admin.get(`${url}output/`)).body as string;
    expect(output).toContain('Stage dataset already done, skipping');
    expect(output).toContain('Running stage opensfm');
    expect(existsSync(path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(task.id), 'work', 'gcp-changed'))).toBe(false);
  });

  it('uploads the task again to a node that cannot take a new list', async () => {
    const task = await completedTask(t.admin, projectId, images);
    const url = `/api/projects/${projectId}/tasks/${task.id}/`;
    // As NodeODM: no way to change a task's files.
    await t.service.db.updateTable('processing_nodes').set({ engine: 'odm' }).where('id', '=', task.processing_node).execute();
    try {
      expect((await t.admin.put(`${url}gcp/`, { gcp_list: LIST(14) })).status).toBe(200);
      expect((await t.admin.post(`${url}restart/`, { options: [{ name: 'rerun-from', value: 'opensfm' }] })).status).toBe(200);
      const again = await waitForTask(t.admin, url, (seen) => finished(seen) && seen.running_progress === 1 && seen.uuid !== task.uuid);
      expect(again.status, again.last_error).toBe(TaskStatus.COMPLETED);
      expect(await readFile(path.join(nodeDir, 'tasks', again.uuid, 'gcp_list.txt'), 'utf8')).toBe(LIST(14));
    } finally {
      await t.service.db.updateTable('processing_nodes').set({ engine: 'aeromap' }).where('id', '=', task.processing_node).execute();
    }
  });
});
