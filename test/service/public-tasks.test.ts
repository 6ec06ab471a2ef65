// Public tasks, as WebODM has them: a task (or a project) made public opens the task, its downloads, assets, tiles,
// thumbnail, photographs and 3D scene to anyone, signed in or not; public_edit lets anyone save its 3D scene. A task
// that is not public answers 404 to strangers on the same URLs, and the public pages answer 404 for it.
import { rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_BACKENDS, type Client, type Role, type TestService, createCallers, startService } from './helpers.ts';
import { TaskStatus, download, finished, imageForm, makeJpegs, orthophotoZip, postForm, waitForTask } from './taskhelpers.ts';

/** A 256 px orthophoto, red growing eastwards: its thumbnail cannot be one flat colour. */
const GRADIENT = 'rgba = np.full((4, 256, 256), 255, np.uint8); rgba[0] = np.arange(256, dtype=np.uint8)';

describe.each(QUICK_BACKENDS)('public tasks (%s)', (backend) => {
  let t: TestService;
  let callers: Record<Role, Client>;
  let project: number;
  let completed: number;
  let photographed: number;
  let photos: string[];
  const tasks = () => `/api/projects/${project}/tasks`;

  beforeAll(async () => {
    t = await startService(backend);
    callers = await createCallers(t);
    const { owner } = callers;
    project = (await owner.post('/api/projects/', { name: 'Shore' })).body.id;
    await owner.post(`/api/projects/${project}/edit/`, { permissions: [{ groupname: 'surveyors', permissions: ['view'] }] });
    const work = path.join(t.dataDir, 'work');
    photos = await makeJpegs(path.join(work, 'photos'), 2, 300);
    const imported = await postForm(owner, `${tasks()}/import`, await imageForm([orthophotoZip(work, GRADIENT, 0.5)], { name: 'done' }, 'file'));
    const done = await waitForTask(owner, `${tasks()}/${imported.body.id}/`, finished);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    completed = done.id;
    photographed = (await owner.post(`${tasks()}/`, { partial: true, name: 'photos' })).body.id;
    expect((await postForm(owner, `${tasks()}/${photographed}/upload/`, await imageForm(photos))).status).toBe(200);
  }, 120_000);
  afterAll(() => t?.close());

  /** Every read a public task opens, on the completed task. */
  const reads = () => [
    `${tasks()}/${completed}/`,
    `${tasks()}/${completed}/download/orthophoto.tif`,
    `${tasks()}/${completed}/assets/odm_orthophoto/odm_orthophoto.tif`,
    `${tasks()}/${completed}/orthophoto/tiles.json`,
    `${tasks()}/${completed}/orthophoto/bounds`,
    `${tasks()}/${completed}/orthophoto/metadata`,
    `${tasks()}/${completed}/thumbnail`,
    `${tasks()}/${completed}/3d/scene`,
    `/public/task/${completed}/json/`,
  ];
  const statuses = async (client: Client, urls: string[]) => Promise.all(urls.map(async (url) => (await client.get(url)).status));
  const setPublic = async (fields: { public?: boolean; public_edit?: boolean }, id = completed) => {
    const reply = await callers.owner.patch(`${tasks()}/${id}/`, fields);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body;
  };

  it('keeps a private task from strangers: 404 on every public URL, signed in or not', async () => {
    const urls = [...reads(), `/public/task/${completed}/map/`, `/public/task/${completed}/iframe/3d/`, `${tasks()}/${photographed}/images/download/IMG_0000.JPG`];
    expect(await statuses(t.anonymous, urls)).toEqual(urls.map(() => 404));
    expect(await statuses(callers.other, urls)).toEqual(urls.map(() => 404));
    // Its viewers read it as before, but for the public pages, which know public tasks only.
    expect(await statuses(callers.member, reads().slice(0, -1))).toEqual(reads().slice(0, -1).map(() => 200));
  });

  it('lets only "change" make a task public, through PATCH', async () => {
    expect((await t.anonymous.patch(`${tasks()}/${completed}/`, { public: true })).status).toBe(403);
    expect((await callers.member.patch(`${tasks()}/${completed}/`, { public: true })).status).toBe(403);
    expect((await callers.other.patch(`${tasks()}/${completed}/`, { public: true })).status).toBe(404);
    expect((await t.anonymous.get(`${tasks()}/${completed}/`)).status).toBe(404);
    const changed = await setPublic({ public: true });
    expect(changed).toMatchObject({ public: true, public_edit: false, potree_scene: {} });
  });

  it('opens a public task to anyone, and nothing else', async () => {
    await setPublic({ public: true });
    expect(await statuses(t.anonymous, reads())).toEqual(reads().map(() => 200));
    expect(await statuses(callers.other, reads())).toEqual(reads().map(() => 200));
    const json = (await t.anonymous.get(`/public/task/${completed}/json/`)).body;
    expect(json).toMatchObject({ id: completed, project, public: true, status: TaskStatus.COMPLETED });
    // The tile URL the layer gives is open too.
    const layer = (await t.anonymous.get(`${tasks()}/${completed}/orthophoto/tiles.json`)).body;
    const bounds = (await t.anonymous.get(`${tasks()}/${completed}/orthophoto/bounds`)).body;
    expect(bounds).toEqual({ url: layer.tiles[0], bounds: layer.bounds });
    // Everything else keeps its rules: the console, changes, actions, the task list.
    expect((await t.anonymous.get(`${tasks()}/${completed}/output/`)).status).toBe(403);
    expect((await t.anonymous.patch(`${tasks()}/${completed}/`, { name: 'mine' })).status).toBe(403);
    expect((await t.anonymous.post(`${tasks()}/${completed}/remove/`)).status).toBe(403);
    expect((await t.anonymous.get(`${tasks()}/`)).status).toBe(403);
    expect((await callers.other.get(`${tasks()}/${completed}/output/`)).status).toBe(404);
    expect((await callers.other.post(`${tasks()}/${completed}/restart/`)).status).toBe(404);
    expect((await t.anonymous.get(`/api/projects/${project}/`)).status).toBe(403);
    // A token that fails is refused even where none is needed, as WebODM does; but a browser's stale session
    // cookie is no session there, so that a shared link opens for someone who signed in long ago.
    expect((await t.anonymous.withToken('not.a.token').get(`${tasks()}/${completed}/`)).status).toBe(403);
    const stale = { headers: { cookie: 'aeromap_session=not.a.token' } };
    expect((await t.anonymous.request('GET', `${tasks()}/${completed}/`, stale)).status).toBe(200);
    expect((await t.anonymous.request('GET', `${tasks()}/${completed}/orthophoto/tiles.json`, stale)).status).toBe(200);
    expect((await t.anonymous.request('GET', `${tasks()}/`, stale)).status).toBe(403);
    expect((await t.anonymous.request('GET', `${tasks()}/${photographed}/`, stale)).status).toBe(404);
    await setPublic({ public: false });
    expect(await statuses(t.anonymous, reads())).toEqual(reads().map(() => 404));
  });

  it('opens every task of a public project', async () => {
    expect((await callers.member.patch(`/api/projects/${project}/`, { public: true })).status).toBe(403);
    const reply = await callers.owner.patch(`/api/projects/${project}/`, { public: true });
    expect(reply.body).toMatchObject({ public: true, public_edit: false });
    expect(await statuses(t.anonymous, reads())).toEqual(reads().map(() => 200));
    await callers.owner.patch(`/api/projects/${project}/`, { public: false });
    expect(await statuses(t.anonymous, reads())).toEqual(reads().map(() => 404));
  });

  it('draws the thumbnail from the orthophoto, PNG or WebP, at most `size` pixels', async () => {
    await setPublic({ public: true });
    const url = `${tasks()}/${completed}/thumbnail`;
    const png = await download(t.anonymous, `${url}?size=64`);
    expect(png.headers.get('content-type')).toBe('image/png');
    const { data, info } = await sharp(png.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(Math.max(info.width, info.height)).toBe(64);
    // Red grows eastwards: the left edge is darker than the right one.
    const red = (x: number) => data[(Math.floor(info.height / 2) * info.width + x) * info.channels];
    expect(red(info.width - 2) - red(1)).toBeGreaterThan(150);
    const webp = await download(t.anonymous, url, { accept: 'image/webp,*/*' });
    expect(webp.headers.get('content-type')).toBe('image/webp');
    expect((await sharp(webp.bytes).metadata()).format).toBe('webp');
    expect((await download(t.anonymous, `${url}?size=0`)).status).toBe(400);
    expect((await download(t.anonymous, `${url}?size=1025`)).status).toBe(400);
    // The partial task has no orthophoto.
    expect((await callers.owner.get(`${tasks()}/${photographed}/thumbnail`)).status).toBe(404);
  });

  it('serves the photographs by name, whole or in small, and nothing outside them', async () => {
    const base = `${tasks()}/${photographed}/images`;
    const whole = await download(callers.member, `${base}/download/IMG_0001.JPG`);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-disposition')).toContain('attachment');
    expect(whole.bytes.length).toBeGreaterThan(1000);
    const small = await download(callers.member, `${base}/thumbnail/IMG_0001.JPG?size=100&quality=50`);
    expect(small.headers.get('content-type')).toBe('image/jpeg');
    expect(await sharp(small.bytes).metadata()).toMatchObject({ format: 'jpeg', width: 100, height: 100 });
    expect((await download(callers.member, `${base}/thumbnail/IMG_0001.JPG?quality=101`)).status).toBe(400);
    // A link in the folder that leads out of it, another task's files, the console, hidden files.
    const folder = path.join(t.dataDir, 'media', 'project', String(project), 'task', String(photographed));
    await symlink('/etc/passwd', path.join(folder, 'images', 'escape.JPG'));
    await writeFile(path.join(folder, 'images', '.hidden.JPG'), 'x');
    for (const name of ['escape.JPG', '.hidden.JPG', '..%2Fconsole.txt', '%2E%2E%2F%2E%2E%2F..%2Fetc%2Fpasswd', '..%5C..%5Cconsole.txt', 'missing.JPG']) {
      expect((await download(callers.owner, `${base}/download/${name}`)).status, name).toBe(404);
      expect((await download(callers.owner, `${base}/thumbnail/${name}`)).status, name).toBe(404);
    }
    expect((await download(callers.owner, `${base}/download/../../${completed}/download/orthophoto.tif`)).status).toBe(404);
    // Public: anyone; a stranger otherwise.
    expect((await download(t.anonymous, `${base}/download/IMG_0001.JPG`)).status).toBe(404);
    await setPublic({ public: true }, photographed);
    expect((await download(t.anonymous, `${base}/thumbnail/IMG_0001.JPG`)).status).toBe(200);
    // A compacted task keeps no photographs.
    await rm(path.join(folder, 'images'), { recursive: true });
    expect((await download(t.anonymous, `${base}/download/IMG_0001.JPG`)).status).toBe(404);
    expect((await download(t.anonymous, `${base}/thumbnail/IMG_0001.JPG`)).status).toBe(404);
  });

  it("frames and marks a photograph as WebODM's image viewer asks: centre, zoom and circled points", async () => {
    // 300 x 200, black on the left half and white on the right.
    const file = path.join(t.dataDir, 'work', 'halves.jpg');
    const halves = Buffer.alloc(300 * 200 * 3);
    for (let i = 0; i < 300 * 200; i++) if (i % 300 >= 150) halves.fill(255, i * 3, i * 3 + 3);
    await sharp(halves, { raw: { width: 300, height: 200, channels: 3 } }).jpeg({ quality: 95 }).toFile(file);
    const task = (await callers.owner.post(`${tasks()}/`, { partial: true, name: 'halves' })).body.id;
    expect((await postForm(callers.owner, `${tasks()}/${task}/upload/`, await imageForm([file]))).status).toBe(200);
    const view = async (query: string) => {
      const reply = await download(callers.owner, `${tasks()}/${task}/images/thumbnail/halves.jpg?${query}`);
      expect(reply.status, `${query}: ${reply.bytes.toString().slice(0, 200)}`).toBe(200);
      const { data, info } = await sharp(reply.bytes).raw().toBuffer({ resolveWithObject: true });
      /** Mean of the channel `c` over columns [x0, x1) of the whole height, 0 to 255. */
      const mean = (x0: number, x1: number, c = 0) => {
        let sum = 0;
        for (let y = 0; y < info.height; y++) for (let x = x0; x < x1; x++) sum += data[(y * info.width + x) * info.channels + c];
        return sum / (info.height * (x1 - x0));
      };
      return { info, mean, pixel: (x: number, y: number) => [...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3)] };
    };
    const whole = await view('size=300');
    expect([whole.info.width, whole.info.height]).toEqual([300, 200]);
    expect(whole.mean(0, 140)).toBeLessThan(10);
    expect(whole.mean(160, 300)).toBeGreaterThan(245);
    // zoom 2 shows half the width about the centre: the right half only, or the left.
    expect((await view('center_x=0.75&zoom=2')).mean(0, 300)).toBeGreaterThan(245);
    expect((await view('center_x=0.25&zoom=2')).mean(0, 300)).toBeLessThan(10);
    // A centre past the edge: the white quarter at the left, black beyond the photograph.
    const past = await view('center_x=1.25');
    expect(past.mean(0, 70)).toBeGreaterThan(245);
    expect(past.mean(80, 300)).toBeLessThan(10);
    // A red circle of 10 % of the longer side (30 px) about the white half's centre: red on it, white inside.
    const marked = await view('draw_point=0.75,0.5&point_color=ff0000&point_radius=10');
    const [r, g, b] = marked.pixel(225 + 30, 100);
    expect(r).toBeGreaterThan(200);
    expect(Math.max(g, b)).toBeLessThan(80);
    expect(marked.pixel(225, 100).every((v) => v > 245)).toBe(true);
    // Two points: the second's colour is its own.
    const two = await view('draw_point=0.75,0.5&draw_point=0.25,0.5&point_color=ff0000&point_color=%2300ff00&point_radius=10&point_radius=10');
    expect(two.pixel(75 + 30, 100)[1]).toBeGreaterThan(200);
    for (const bad of ['zoom=7', 'center_x=2', 'draw_point=0.5', 'draw_point=a,b', 'point_radius=-1']) {
      const reply = await callers.owner.get(`${tasks()}/${task}/images/thumbnail/halves.jpg?${bad}`);
      expect(reply.status, bad).toBe(400);
    }
  });

  it('keeps a Potree scene per task, saved by "change" or, on a public task with public_edit, by anyone', async () => {
    await setPublic({ public: false, public_edit: false });
    const scene = `${tasks()}/${completed}/3d/scene`;
    const cameraview = `${tasks()}/${completed}/3d/cameraview`;
    expect((await callers.owner.get(scene)).body).toEqual({});
    expect((await callers.owner.post(scene, { version: 1.7 })).status).toBe(400);
    expect((await callers.owner.post(scene, { type: 'Other' })).status).toBe(400);
    expect((await callers.owner.post(scene, ['Potree'])).status).toBe(400);
    expect((await callers.owner.post(scene, { type: 'Potree', version: 1.7, measurements: [{ name: 'a' }], view: { ignored: true }, pointclouds: [1] })).status).toBe(200);
    expect((await callers.owner.get(scene)).body).toEqual({ type: 'Potree', version: 1.7, measurements: [{ name: 'a' }] });
    expect((await callers.owner.post(cameraview, {})).status).toBe(400);
    expect((await callers.owner.post(cameraview, { position: [1, 2, 3], target: [0, 0, 0] })).status).toBe(200);
    expect((await callers.owner.get(scene)).body).toEqual({ type: 'Potree', version: 1.7, measurements: [{ name: 'a' }], view: { position: [1, 2, 3], target: [0, 0, 0] } });
    // A scene grows by merging: past 1 MB it is refused, whatever each request's size.
    const half = 'x'.repeat(600_000);
    expect((await callers.owner.post(scene, { type: 'Potree', blob: half })).status).toBe(200);
    expect((await callers.owner.post(scene, { type: 'Potree', other: half })).status).toBe(400);
    expect((await callers.owner.post(scene, { type: 'Potree', blob: null })).status).toBe(200);
    const write = { type: 'Potree', note: 'public' };
    // Private: a viewer may read but not write; a stranger sees nothing.
    expect((await callers.member.get(scene)).status).toBe(200);
    expect((await callers.member.post(scene, write)).status).toBe(403);
    expect((await callers.other.post(scene, write)).status).toBe(404);
    expect((await t.anonymous.post(scene, write)).status).toBe(404);
    // Public: anyone reads it; writing still needs "change" until public_edit.
    await setPublic({ public: true });
    expect((await t.anonymous.get(scene)).body.view).toEqual({ position: [1, 2, 3], target: [0, 0, 0] });
    expect((await t.anonymous.post(scene, write)).status).toBe(403);
    expect((await callers.other.post(cameraview, { position: [0, 0, 1] })).status).toBe(403);
    await setPublic({ public_edit: true });
    expect((await t.anonymous.post(scene, write)).status).toBe(200);
    expect((await callers.other.post(cameraview, { position: [0, 0, 1] })).status).toBe(200);
    expect((await t.anonymous.get(scene)).body).toMatchObject({ note: 'public', blob: null, view: { position: [0, 0, 1] } });
    // public_edit without public opens nothing.
    await setPublic({ public: false });
    expect((await t.anonymous.post(scene, write)).status).toBe(404);
  });
});
