// The task API over real HTTP, on SQLite and PostgreSQL, with a real processing node (in this process, running
// the quick stand-in engine of the node's tests): create, progress, console, downloads, actions, permissions,
// partial uploads, import, and bad input.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningNode, startNode } from '../../src/node/index.ts';
import { QUICK_BACKENDS, type Client, type TestService, startService, testConfig } from './helpers.ts';
import {
  FAKE_ENGINE,
  TaskStatus,
  download,
  finished,
  imageForm,
  makeJpegs,
  postForm,
  python,
  waitForTask,
} from './taskhelpers.ts';

describe.each(QUICK_BACKENDS)('tasks on %s', (backend) => {
  let t: TestService;
  let node: RunningNode;
  let nodeId: number;
  let work: string;
  let images: string[];
  let projectId: number;

  beforeAll(async () => {
    t = await startService(backend, {
      tasks: { ...testConfig('', undefined).tasks, maxExtractedBytes: 64 * 2 ** 20 },
    });
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-tasks-'));
    node = await startNode({ dataDir: path.join(work, 'node'), port: 0, host: '127.0.0.1', token: 'node-secret', enginePath: FAKE_ENGINE, log: () => {} });
    const created = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port, token: 'node-secret' });
    expect(created.status).toBe(201);
    nodeId = created.body.id;
    await t.service.refresher.refreshAll();
    images = await makeJpegs(path.join(work, 'images'), 3);
    projectId = (await t.admin.post('/api/projects/', { name: 'survey' })).body.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  const tasksUrl = () => `/api/projects/${projectId}/tasks/`;
  const createTask = async (client: Client, fields: Record<string, string> = {}, files = images) =>
    postForm(client, tasksUrl(), await imageForm(files, fields));

  it('processes uploaded images on the node: queued, running with progress and console, then completed with assets', async () => {
    // An option the node does not know is kept on the task and ignored, as NodeODM ignores it.
    const options = [{ name: 'fake-seconds', value: 0.3 }, { name: 'radiometric-calibration', value: 'camera' }];
    const created = await createTask(t.admin, { name: 'First flight', options: JSON.stringify(options) });
    expect(created.status).toBe(201);
    const task = created.body;
    expect(task).toMatchObject({ project: projectId, name: 'First flight', images_count: 3, partial: false, available_assets: [] });
    expect(task.options).toEqual(options);
    // Older WebODM clients read this key in every task.
    expect(task).toHaveProperty('ground_control_points', null);

    const url = `${tasksUrl()}${task.id}/`;
    const statuses = new Set<number | null>();
    const progress: number[] = [];
    const done = await waitForTask(t.admin, url, finished, 60_000, (seen) => {
      statuses.add(seen.status);
      progress.push(seen.running_progress);
    });
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(statuses).toContain(TaskStatus.RUNNING);
    expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1] - 1e-9)).toBe(true);
    expect(done).toMatchObject({ processing_node: nodeId, processing_node_name: `127.0.0.1:${node.port}`, upload_progress: 1, running_progress: 1 });
    expect(done.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(done.processing_time).toBeGreaterThan(0);
    expect(done.available_assets).toEqual(expect.arrayContaining(['all.zip', 'orthophoto.tif']));
    expect(done.can_rerun_from).toContain('odm_orthophoto');
    expect(done.size).toBeGreaterThan(0);

    const output = await t.admin.get(`${url}output/`);
    expect(output.status).toBe(200);
    expect(output.headers.get('content-type')).toMatch(/^application\/json/);
    expect(output.body).toContain('dataset');
    expect(output.body.split('\n')[0]).toBe(`[WARNING] Processing node 127.0.0.1:${node.port} does not know this option, ignored: radiometric-calibration`);
    const lines = output.body.split('\n');
    expect((await t.admin.get(`${url}output/`, { line: 2 })).body).toBe(lines.slice(2).join('\n'));

    // Files download whole, by range, and under WebODM's names; zips are built as they are sent.
    const ortho = await download(t.admin, `${url}download/orthophoto.tif`);
    expect(ortho.status).toBe(200);
    expect(ortho.headers.get('content-disposition')).toBe('attachment; filename="First-flight-orthophoto.tif"');
    expect(ortho.headers.get('accept-ranges')).toBe('bytes');
    const range = await download(t.admin, `${url}download/orthophoto.tif`, { range: 'bytes=2-5' });
    expect(range.status).toBe(206);
    expect(range.bytes).toEqual(ortho.bytes.subarray(2, 6));
    const all = await download(t.admin, `${url}download/all.zip`);
    expect(all.status).toBe(200);
    expect(Number(all.headers.get('content-length'))).toBe(all.bytes.length);
    expect(all.bytes.subarray(0, 2).toString()).toBe('PK');
    expect(all.bytes.includes(Buffer.from('odm_orthophoto/odm_orthophoto.tif'))).toBe(true);

    // The raw assets route serves files inside the folder only.
    const raw = await download(t.admin, `${url}assets/odm_orthophoto/odm_orthophoto.tif`);
    expect(raw.status).toBe(200);
    expect(createHash('sha1').update(raw.bytes).digest('hex')).toBe(createHash('sha1').update(ortho.bytes).digest('hex'));
    for (const bad of ['assets/../../../../etc/passwd', 'assets/%2e%2e/%2e%2e/%2e%2e/etc/passwd', 'assets/odm_orthophoto', 'assets/', 'download/dtm.tif', 'download/bogus', 'textured_model/']) {
      const reply = await t.admin.get(`${url}${bad}`);
      expect(reply.status, bad).toBe(404);
    }
    expect((await t.admin.get(`${url}download/dtm.tif`)).body).toEqual({ detail: 'Asset does not exist' });

    // The stand-in engine makes an orthophoto but no tile pyramid: the layer says so.
    expect(await t.admin.get(`${url}orthophoto/tiles.json`)).toMatchObject({
      status: 404,
      body: { detail: 'The orthophoto tiles of this task are not built yet.' },
    });
    expect((await t.admin.get(`${url}bogus/tiles.json`)).status).toBe(404);

    // The task is listed, filtered by status, and counted in its project.
    const list = await t.admin.get(tasksUrl(), { status: TaskStatus.COMPLETED });
    expect(list.body.map((item: { id: number }) => item.id)).toContain(task.id);
    expect((await t.admin.get(`/api/projects/${projectId}/`)).body.tasks).toContain(task.id);
  }, 90_000);

  it('cancels a running task, restarts it from a stage on the same node, and removes it with its files', async () => {
    const created = await createTask(t.admin, { options: JSON.stringify([{ name: 'fake-seconds', value: 3 }]) });
    const url = `${tasksUrl()}${created.body.id}/`;
    await waitForTask(t.admin, url, (task) => task.status === TaskStatus.RUNNING);
    expect((await t.admin.post(`${url}cancel/`)).body).toEqual({ success: true });
    const canceled = await waitForTask(t.admin, url, finished);
    expect(canceled.status).toBe(TaskStatus.CANCELED);

    const restart = await t.admin.post(`${url}restart/`, {
      options: [{ name: 'rerun-from', value: 'odm_orthophoto' }, { name: 'fake-seconds', value: 0 }],
    });
    expect(restart.body).toEqual({ success: true });
    const uuid = canceled.uuid;
    const done = await waitForTask(t.admin, url, finished);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.uuid).toBe(uuid);
    expect(done.available_assets).toContain('orthophoto.tif');

    expect((await t.admin.post(`${url}restart/`, { options: [{ name: 'rerun-from', value: 'nowhere' }] })).status).toBe(400);

    const folder = path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(done.id));
    expect((await readdir(folder)).sort()).toEqual(expect.arrayContaining(['assets', 'images']));
    expect((await t.admin.post(`${url}remove/`)).body).toEqual({ success: true });
    const until = Date.now() + 20_000;
    while ((await t.admin.get(url)).status !== 404 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect((await t.admin.get(url)).status).toBe(404);
    await expect(readdir(folder)).rejects.toThrow();
  }, 60_000);

  it('takes a chunked upload: an empty partial task, files in several requests and Dropzone chunks, then commit', async () => {
    const created = await t.admin.post(tasksUrl(), { partial: true, name: 'chunked' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ partial: true, images_count: 0, status: null });
    const url = `${tasksUrl()}${created.body.id}/`;
    expect((await t.admin.post(`${url}commit/`)).status).toBe(400);

    const first = await postForm(t.admin, `${url}upload/`, await imageForm([images[0]]));
    expect(first.body).toEqual({ success: true, uploaded: { 'IMG_0000.JPG': expect.any(Number) } });
    // The second image in two chunks, the way WebODM's uploader sends it.
    const bytes = await readFile(images[1]);
    const half = Math.floor(bytes.length / 2);
    for (const [index, piece] of [bytes.subarray(0, half), bytes.subarray(half)].entries()) {
      const form = new FormData();
      form.append('dzuuid', 'f00d-1');
      form.append('dzchunkindex', String(index));
      form.append('dztotalchunkcount', '2');
      form.append('dzchunkbyteoffset', String(index * half));
      form.append('images', new Blob([piece]), 'IMG_0001.JPG');
      const reply = await postForm(t.admin, `${url}upload/`, form);
      expect(reply.status).toBe(200);
    }
    // A second flight's photograph of the first one's name is kept beside it; sent again, it is not added twice.
    const secondFlight = new FormData();
    secondFlight.append('images', new Blob([await readFile(images[2])]), 'IMG_0000.JPG');
    for (let i = 0; i < 2; i++) {
      const again = new FormData();
      again.append('images', new Blob([await readFile(images[2])]), 'IMG_0000.JPG');
      expect((await postForm(t.admin, `${url}upload/`, i === 0 ? secondFlight : again)).body).toEqual({ success: true, uploaded: { 'IMG_0000_1.JPG': expect.any(Number) } });
    }
    const committed = await t.admin.post(`${url}commit/`);
    expect(committed.status).toBe(200);
    expect(committed.body).toMatchObject({ partial: false, images_count: 3 });
    const folder = path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(created.body.id), 'images');
    expect(await readFile(path.join(folder, 'IMG_0001.JPG'))).toEqual(bytes);
    expect(await readFile(path.join(folder, 'IMG_0000.JPG'))).toEqual(await readFile(images[0]));
    expect(await readFile(path.join(folder, 'IMG_0000_1.JPG'))).toEqual(await readFile(images[2]));
    const done = await waitForTask(t.admin, url, finished);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.images_count).toBe(3);
    expect((await postForm(t.admin, `${url}upload/`, await imageForm([images[2]]))).status).toBe(400);
  }, 60_000);

  // The files' round trip is the same on either database (the rows' is in the other tests): SQLite alone.
  it.runIf(backend === 'sqlite')('imports an all.zip (uploaded, then by URL), and refuses unsafe archives with a clear error', async () => {
    const source = (await t.admin.get(tasksUrl(), { status: TaskStatus.COMPLETED })).body[0];
    const all = await download(t.admin, `${tasksUrl()}${source.id}/download/all.zip`);
    const imported = await fetch(new URL(`${tasksUrl()}import?name=copy`, t.url), {
      method: 'POST',
      headers: { authorization: `JWT ${t.admin.token}`, 'content-type': 'application/zip' },
      body: all.bytes,
    });
    expect(imported.status).toBe(201);
    const task = (await imported.json()) as { id: number; status: number; pending_action: number };
    expect(task).toMatchObject({ status: TaskStatus.RUNNING, pending_action: 5 });
    const done = await waitForTask(t.admin, `${tasksUrl()}${task.id}/`, finished);
    expect(done).toMatchObject({ status: TaskStatus.COMPLETED, name: 'copy' });
    expect(done.available_assets).toEqual(source.available_assets);

    // By URL: from this very service (a download URL with the token in the query).
    const link = `${t.url}${tasksUrl()}${source.id}/download/all.zip?jwt=${t.admin.token}`;
    const byUrl = await t.admin.post(`${tasksUrl()}import`, { url: link });
    expect(byUrl.status).toBe(201);
    expect((await waitForTask(t.admin, `${tasksUrl()}${byUrl.body.id}/`, finished)).status).toBe(TaskStatus.COMPLETED);

    // A zip that climbs out of its folder, and a zip bomb (the test service allows 64 MB unpacked).
    const unsafe = path.join(work, 'unsafe.zip');
    const bomb = path.join(work, 'bomb.zip');
    python(
      `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("odm_orthophoto/odm_orthophoto.tif", b"II*\\0")
    z.writestr("../../escape.txt", b"out")
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("odm_orthophoto/odm_orthophoto.tif", "w", force_zip64=True) as f:
        for _ in range(100):
            f.write(bytes(2**20))`,
      unsafe,
      bomb,
    );
    // A zip that climbs out is refused at once, from its headers; a bomb fails the task once it is unpacked.
    const refused = await postForm(t.admin, `${tasksUrl()}import`, await imageForm([unsafe], {}, 'file'));
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/invalid relative path: ..\/..\/escape.txt/);
    const reply = await postForm(t.admin, `${tasksUrl()}import`, await imageForm([bomb], {}, 'file'));
    expect(reply.status).toBe(201);
    const failed = await waitForTask(t.admin, `${tasksUrl()}${reply.body.id}/`, finished);
    expect(failed.status).toBe(TaskStatus.FAILED);
    expect(failed.last_error).toMatch(/more than 67108864 bytes once extracted/);
    expect(failed.available_assets).toEqual([]);
    await expect(readFile(path.join(t.dataDir, 'media', 'project', 'escape.txt'))).rejects.toThrow();

    const dead = await t.admin.post(`${tasksUrl()}import`, { url: 'http://127.0.0.1:9/all.zip' });
    const deadTask = await waitForTask(t.admin, `${tasksUrl()}${dead.body.id}/`, finished);
    expect(deadTask.status).toBe(TaskStatus.FAILED);
    expect(deadTask.last_error).toMatch(/^Cannot download http:\/\/127\.0\.0\.1:9\/all\.zip: /);
    expect((await t.admin.post(`${tasksUrl()}import`, { url: 'example.com/all.zip' })).status).toBe(400);
  }, 180_000); // three imports, each building tiles with the engine: minutes on a machine busy with the suite

  it('takes a video and its DJI .srt as a survey: stored as sent, counted as photographs', async () => {
    const video = path.join(work, 'DJI_0200.MP4');
    python(
      `import sys, cv2, numpy as np
writer = cv2.VideoWriter(sys.argv[1], cv2.VideoWriter_fourcc(*"mp4v"), 10.0, (64, 48))
for k in range(5):
    writer.write(np.random.default_rng(k).integers(0, 255, (48, 64, 3), dtype=np.uint8))
writer.release()`,
      video,
    );
    const telemetry = path.join(work, 'DJI_0200.SRT');
    await writeFile(telemetry, '1\n00:00:00,000 --> 00:00:01,000\n[latitude: 45.5] [longitude: -73.5] [rel_alt: 30.0 abs_alt: 120.0]\n');
    const created = await createTask(t.admin, {}, [video, telemetry]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.images_count).toBe(2);
    const stored = await readdir(path.join(t.dataDir, 'media', 'project', String(projectId), 'task', String(created.body.id), 'images'));
    expect(stored.sort()).toEqual(['DJI_0200.MP4', 'DJI_0200.SRT']);
    expect((await t.admin.post(`${tasksUrl()}${created.body.id}/remove/`)).status).toBe(200);
  });

  it("offers 3D Tiles folders as zips under WebODM's asset names", async () => {
    const results = path.join(work, 'tiles3d.zip');
    python(
      `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("images.json", b"[]")
    z.writestr("3d_tiles/model/tileset.json", b'{"asset": {"version": "1.1"}}')
    z.writestr("3d_tiles/model/model.glb", b"glTF")
    z.writestr("3d_tiles/pointcloud/tileset.json", b'{"asset": {"version": "1.1"}}')
    z.writestr("3d_tiles/pointcloud/0-0-0-0.pnts", b"pnts")
    z.writestr("3d_tiles/pointcloud/1-0-1-0.pnts", b"pnts")`,
      results,
    );
    const reply = await postForm(t.admin, `${tasksUrl()}import`, await imageForm([results], {}, 'file'));
    expect(reply.status).toBe(201);
    const done = await waitForTask(t.admin, `${tasksUrl()}${reply.body.id}/`, finished);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.available_assets).toEqual(['all.zip', '3d_tiles_model.zip', '3d_tiles_pointcloud.zip']);
    const listed: Record<string, string[]> = {};
    for (const asset of ['3d_tiles_model.zip', '3d_tiles_pointcloud.zip']) {
      const zip = await download(t.admin, `${tasksUrl()}${done.id}/download/${asset}`);
      expect(zip.status).toBe(200);
      const file = path.join(work, asset);
      await writeFile(file, zip.bytes);
      listed[asset] = JSON.parse(python('import sys, json, zipfile; print(json.dumps(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))', file));
    }
    expect(listed['3d_tiles_model.zip']).toEqual(['model.glb', 'tileset.json']);
    expect(listed['3d_tiles_pointcloud.zip']).toEqual(['0-0-0-0.pnts', '1-0-1-0.pnts', 'tileset.json']);
    // A task without them neither lists nor serves them.
    const plain = path.join(work, 'plain.zip');
    python('import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w") as z: z.writestr("odm_texturing/odm_textured_model_geo.glb", b"glTF")', plain);
    const other = await waitForTask(t.admin, `${tasksUrl()}${(await postForm(t.admin, `${tasksUrl()}import`, await imageForm([plain], {}, 'file'))).body.id}/`, finished);
    expect(other.available_assets).toEqual(['all.zip', 'textured_model.zip', 'textured_model.glb']);
    expect((await download(t.admin, `${tasksUrl()}${other.id}/download/3d_tiles_model.zip`)).status).toBe(404);
  }, 60_000);

  it('follows the project permissions: view reads, change writes, delete removes; others see nothing', async () => {
    const { client: viewer, id: viewerId } = await t.createUser(`viewer-${backend}`);
    const { client: stranger } = await t.createUser(`stranger-${backend}`);
    const [task] = (await t.admin.get(tasksUrl(), { status: TaskStatus.COMPLETED })).body;
    const url = `${tasksUrl()}${task.id}/`;
    const viewerName = (await t.admin.get(`/api/admin/users/${viewerId}/`)).body.username;
    await t.admin.post(`/api/projects/${projectId}/edit/`, { permissions: [{ username: viewerName, permissions: ['view'] }] });

    expect((await stranger.get(url)).status).toBe(404);
    expect((await stranger.get(tasksUrl())).status).toBe(404);
    expect((await stranger.get(`${url}download/orthophoto.tif`)).status).toBe(404);
    // The reads a public task opens to everyone answer 404 for a private one, signed in or not, as WebODM's do.
    expect((await t.anonymous.get(url)).status).toBe(404);
    expect((await viewer.get(url)).status).toBe(200);
    expect((await download(viewer, `${url}download/orthophoto.tif`)).status).toBe(200);
    expect((await viewer.patch(url, { name: 'renamed' })).status).toBe(403);
    expect((await viewer.post(`${url}remove/`)).status).toBe(403);
    expect((await createTask(viewer)).status).toBe(403);
    expect((await t.admin.get(`/api/projects/9999/tasks/${task.id}/`)).status).toBe(404);
  });

  const rawPost = async (url: string, contentType: string, body: string) => {
    const reply = await fetch(new URL(url, t.url), { method: 'POST', headers: { authorization: `JWT ${t.admin.token}`, 'content-type': contentType }, body });
    return { status: reply.status, body: (await reply.json()) as unknown };
  };

  it('refuses bad input with a clear 400 and keeps what is stored', async () => {
    const before = (await t.admin.get(tasksUrl())).body.length;
    const notImage = path.join(work, 'notes.pdf');
    await writeFile(notImage, '%PDF-1.4 not an image');
    const truncated = path.join(work, 'IMG_CUT.JPG');
    await copyFile(images[0], truncated);
    await truncate(truncated, Math.floor((await readFile(images[0])).length * 0.6));
    const fake = path.join(work, 'FAKE.JPG');
    await writeFile(fake, 'this is text, not a JPEG at all');
    const notCloud = path.join(work, 'align.laz');
    await writeFile(notCloud, 'a survey to align to, but not a point cloud');
    const alignDem = path.join(work, 'aligned', 'align.tif');
    await mkdir(path.dirname(alignDem), { recursive: true });
    await writeFile(alignDem, Buffer.concat([Buffer.from([0x49, 0x49, 0x2a, 0x00]), Buffer.alloc(400)]));
    const notVideo = path.join(work, 'DJI_0100.MP4');
    await writeFile(notVideo, 'a text file named as a video');
    const binarySrt = path.join(work, 'DJI_0100.SRT');
    await writeFile(binarySrt, Buffer.from([0x00, 0x01, 0x02, 0xff]));

    const cases: [string, Promise<{ status: number; body: unknown }>, RegExp][] = [
      ['one image', createTask(t.admin, {}, [images[0]]), /at least 2 images/],
      ['no image', t.admin.post(tasksUrl(), { name: 'x' }), /at least 2 images/],
      ['not an image', createTask(t.admin, {}, [images[0], notImage]), /notes\.pdf is neither an image/],
      ['truncated JPEG', createTask(t.admin, {}, [images[0], truncated]), /IMG_CUT\.JPG is a truncated JPEG/],
      ['text named .JPG', createTask(t.admin, {}, [images[0], fake]), /FAKE\.JPG is not a JPEG/],
      ['text named .MP4', createTask(t.admin, {}, [images[0], notVideo]), /DJI_0100\.MP4 is not an MP4, MOV or AVI video/],
      ['binary .srt', createTask(t.admin, {}, [...images.slice(0, 2), binarySrt]), /DJI_0100\.SRT is not a text file/],
      ['align.laz not a cloud', createTask(t.admin, {}, [...images.slice(0, 2), notCloud]), /align\.laz is not a LAS or LAZ point cloud/],
      // An earlier survey to align to is not a photograph: one photograph is still too few.
      ['one image and an align file', createTask(t.admin, {}, [images[0], alignDem]), /at least 2 images/],
      ['unknown node', createTask(t.admin, { processing_node: '9999' }), /Invalid pk .{0,2}9999/],
      ['bad option value', createTask(t.admin, { options: JSON.stringify([{ name: 'mesh-octree-depth', value: 99 }]) }), /mesh-octree-depth: Invalid value 99/],
      ['options not JSON', createTask(t.admin, { options: '[{' }), /Invalid JSON/],
      ['options wrong shape', createTask(t.admin, { options: '{"a": 1}' }), /Expected a list/],
      ['multipart without a boundary', rawPost(tasksUrl(), 'multipart/form-data', '{"name": "x"}'), /Malformed multipart body: Multipart: Boundary not found/],
      ['import: multipart without a boundary', rawPost(`${tasksUrl()}import`, 'multipart/form-data', 'x'), /Malformed multipart body/],
    ];
    for (const [label, pending, message] of cases) {
      const reply = await pending;
      expect(reply.status, label).toBe(400);
      expect(JSON.stringify(reply.body), label).toMatch(message);
    }
    expect((await t.admin.get(tasksUrl())).body.length).toBe(before);

    // A node on a closed port never answers, so it is offline; a node with max_images 2 has no room for 3.
    const offline = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: 9 });
    const small = await startNode({ dataDir: path.join(work, 'small'), port: 0, host: '127.0.0.1', maxImages: 2, enginePath: FAKE_ENGINE, log: () => {} });
    try {
      const smallNode = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: small.port });
      await t.service.refresher.refreshAll();
      const offlineReply = await createTask(t.admin, { processing_node: String(offline.body.id) });
      expect(offlineReply.status).toBe(400);
      expect(offlineReply.body.processing_node[0]).toMatch(/is offline/);
      const full = await createTask(t.admin, { processing_node: String(smallNode.body.id) });
      expect(full.status).toBe(400);
      expect(full.body.processing_node[0]).toMatch(/takes at most 2 images; this task has 3/);
      await t.admin.delete(`/api/processingnodes/${smallNode.body.id}/`);
    } finally {
      await small.close();
      await t.admin.delete(`/api/processingnodes/${offline.body.id}/`);
    }
    expect((await t.admin.get(tasksUrl())).body.length).toBe(before);
    const taskDirs = await readdir(path.join(t.dataDir, 'media', 'project', String(projectId), 'task'));
    expect(taskDirs.length).toBe(before);
  });
});
