// The web application end to end, in a real Chromium, against the real service and the real engine: sign in,
// create a project, upload Brighton Beach photographs (scaled down) through the chunked upload, watch the task
// complete, see the orthophoto drawn on the map, measure a distance, see the point cloud in 3D, download an
// asset, restart, cancel and remove a task, and the administration pages. Screenshots of every screen at desktop
// and phone sizes go to dist/screenshots.
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { ADMIN, type TestService, startService } from '../service/helpers.ts';
import { LONG, TaskStatus, brightonCopies, download, finished, python, waitForTask } from '../service/taskhelpers.ts';
import { type ViewportName, accessibilityFailures, launchBrowser, openPage, pixelOf, screenshot } from './browser.ts';

const PHOTOS = ['DJI_0027.JPG', 'DJI_0028.JPG', 'DJI_0029.JPG', 'DJI_0030.JPG', 'DJI_0031.JPG', 'DJI_0032.JPG'];

/** Colour statistics of a region of a PNG: how many distinct colours, and how far from one flat colour. */
async function pixelStats(png: Buffer) {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const colours = new Set<number>();
  const greys = new Set<number>();
  let sum = 0;
  let sumSq = 0;
  for (let i = 0; i < data.length; i += 3) {
    colours.add((data[i] >> 3) * 1024 + (data[i + 1] >> 3) * 32 + (data[i + 2] >> 3));
    if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) <= 6) greys.add(data[i + 1]);
    const grey = (data[i] + data[i + 1] + data[i + 2]) / 3;
    sum += grey;
    sumSq += grey * grey;
  }
  const n = info.width * info.height;
  return { colours: colours.size, greyLevels: greys.size, spread: Math.sqrt(sumSq / n - (sum / n) ** 2) };
}

/** The DSM's height at a longitude and latitude, read with rasterio (the engine's own reader). */
const SAMPLE_DSM = `
import sys, rasterio
from pyproj import Transformer
with rasterio.open(sys.argv[1]) as dsm:
    x, y = Transformer.from_crs("EPSG:4326", dsm.crs, always_xy=True).transform(float(sys.argv[2]), float(sys.argv[3]))
    print(next(dsm.sample([(x, y)]))[0])
`;

/** The DSM's heights at points of its CRS (x y pairs after the file's path); "nan" where it has none. */
const SAMPLE_DSM_XY = `
import sys, rasterio
with rasterio.open(sys.argv[1]) as dsm:
    xy = [(float(x), float(y)) for x, y in zip(sys.argv[2::2], sys.argv[3::2])]
    print(" ".join("nan" if v[0] == dsm.nodata else str(v[0]) for v in dsm.sample(xy)))
`;

/** A LAS/LAZ file given a laser's intensities: the height above the lowest point, stretched to 16 bits. */
const WITH_INTENSITY = `
import sys, laspy, numpy as np
cloud = laspy.read(sys.argv[1])
z = np.asarray(cloud.z)
cloud.intensity = ((z - z.min()) / max(np.ptp(z), 1e-6) * 60000).astype(np.uint16)
cloud.write(sys.argv[1])
`;

/** The centre of a LAS/LAZ file's bounds, in its CRS. */
const CLOUD_CENTRE = `
import sys, laspy
with laspy.open(sys.argv[1]) as cloud:
    low, high = cloud.header.mins, cloud.header.maxs
    print(" ".join(str((a + b) / 2) for a, b in zip(low, high)))
`;

/** Great-circle distance in metres (a sphere of the mean Earth radius is within 0.5 % of the ellipsoid). */
function haversine([lon1, lat1]: number[], [lon2, lat2]: number[]): number {
  const rad = Math.PI / 180;
  const a = Math.sin(((lat2 - lat1) * rad) / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lon2 - lon1) * rad) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.sqrt(a));
}

describe('web application in Chromium', () => {
  let t: TestService;
  let work: string;
  let browser: Browser;
  let token: string;
  let projectId: number;
  let taskId: number;
  const errors: string[] = [];
  const accessibility: string[] = [];
  let checkedPages = 0;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    // These tests outlast the five minutes a node stays online unasked: refresh it as the service does.
    t = await startService('sqlite', { nodeRefreshIntervalMs: 15_000 });
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-web-'));
    const embedded = await startEmbeddedNode({ port: 0, dataDir: path.join(work, 'node') }, t.service.db, t.service.refresher, () => {});
    closers.push(() => embedded.node.close());
    await t.service.refresher.refreshAll();
    browser = await launchBrowser();
    closers.push(() => browser.close());
  }, 120_000);

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** A page at each size, signed in; the screenshot of each under `name`. */
  async function eachViewport(url: string, name: string, ready: (page: Page) => Promise<void>) {
    for (const viewport of ['desktop', 'phone'] as ViewportName[]) {
      const { page, errors: pageErrors } = await openPage(browser, viewport, token);
      await page.goto(`${t.url}${url}`);
      await ready(page);
      await screenshot(page, `${name}-${viewport}`);
      if (viewport === 'desktop') {
        accessibility.push(...(await accessibilityFailures(page)).map((failure) => `${url}: ${failure}`));
        checkedPages++;
      }
      errors.push(...pageErrors);
      await page.context().close();
    }
  }

  it('signs in, creates a project, uploads photographs and follows the task to its end', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop');
    await page.goto(`${t.url}/`);
    await screenshot(page, 'sign-in-desktop');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/Unable to log in/);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    // The token is in the session cookie, which no script of the page can read.
    token = (await page.context().cookies()).find((cookie) => cookie.name === 'aeromap_session')?.value ?? '';
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain(token);

    await page.getByRole('button', { name: 'New project' }).click();
    await page.getByLabel('Name').fill('Brighton Beach');
    await page.getByLabel('Description').fill('Shore survey, 6 photographs');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Brighton Beach' }).waitFor();
    projectId = (await t.admin.get('/api/projects/')).body.results[0].id;

    const photos = await brightonCopies(path.join(work, 'photos'), PHOTOS, 1000);
    await page.getByRole('button', { name: 'New task' }).click();
    await page.getByTestId('file-input').setInputFiles(photos);
    await expect.poll(() => page.getByTestId('file-count').textContent()).toMatch(/6\s*photographs/);
    await expect.poll(() => page.locator('.thumbnails img').count()).toBe(6);
    await page.getByLabel('Task name').fill('Shore');
    await page.getByLabel('Preset').selectOption({ label: 'DSM + DTM' });
    await page.getByText(/^Options \(/).click();
    // At a quarter of the full size, "ultra" keeps enough features to tie the photographs together.
    await page.getByLabel('feature-quality', { exact: true }).selectOption('ultra');
    // A lighter dense cloud: the engine's suite checks its quality, this file what the application shows of it.
    await page.getByLabel('pc-quality', { exact: true }).selectOption('low');
    // The textured model in 3D Tiles too, which the 3D view then streams.
    await page.getByLabel('3d-tiles', { exact: true }).check();
    await screenshot(page, 'new-task-desktop');
    await page.getByRole('button', { name: /Upload and process/ }).click();
    await page.getByRole('link', { name: 'Shore' }).waitFor({ timeout: 60_000 });

    const task = (await t.admin.get(`/api/projects/${projectId}/tasks/`)).body[0];
    taskId = task.id;
    expect(task.images_count).toBe(6);
    expect(task.options).toEqual(expect.arrayContaining([{ name: 'dsm', value: true }, { name: 'dtm', value: true }, { name: 'feature-quality', value: 'ultra' }, { name: 'pc-quality', value: 'low' }, { name: '3d-tiles', value: true }]));

    await page.getByRole('link', { name: 'Shore' }).click();
    await page.getByTestId('task-status').waitFor();
    await expect.poll(() => page.getByTestId('console').textContent(), { timeout: 120_000 }).toMatch(/Running stage/);
    await screenshot(page, 'task-running-desktop');
    const done = await waitForTask(t.admin, `/api/projects/${projectId}/tasks/${taskId}/`, finished, 540_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    await expect.poll(() => page.getByTestId('task-status').textContent(), { timeout: 10_000 }).toBe('Completed');
    await page.getByTestId('quality').waitFor();
    expect(await page.getByTestId('quality').textContent()).toMatch(/Photographs placed\s*6 of 6/);
    errors.push(...pageErrors);
    await page.context().close();
  }, 660_000);

  it('shows every screen at desktop and phone sizes', async () => {
    await eachViewport('/dashboard/', 'dashboard', (page) => page.getByRole('heading', { name: 'Brighton Beach' }).waitFor());
    await eachViewport(`/project/${projectId}/task/${taskId}/`, 'task', (page) => page.getByTestId('quality').waitFor());
    for (const section of ['users', 'groups', 'nodes', 'presets']) {
      await eachViewport(`/admin/${section}/`, `admin-${section}`, (page) => page.getByTestId(`admin-${section}-table`).waitFor());
    }
    expect(errors).toEqual([]);
  }, 120_000);

  it('draws the orthophoto on the map and measures a distance of known length', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/map/project/${projectId}/task/${taskId}/`);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
    await screenshot(page, 'map-desktop');
    // The orthophoto's pixels, not a blank canvas: a beach photographed from the air has many colours.
    const box = (await page.locator('#map canvas').boundingBox())!;
    const centre = await page.screenshot({ clip: { x: box.x + box.width / 2 - 100, y: box.y + box.height / 2 - 100, width: 200, height: 200 } });
    const drawn = await pixelStats(centre);
    expect(drawn.colours).toBeGreaterThan(200);
    expect(drawn.spread).toBeGreaterThan(5);

    // Two points 40 m apart near the middle of the task, clicked where the map draws them.
    const extent = (await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/`)).body.extent as number[];
    const mid = [(extent[0] + extent[2]) / 2, (extent[1] + extent[3]) / 2];
    const a = [mid[0] - 0.00026, mid[1]];
    const b = [mid[0] + 0.00026, mid[1]];
    const known = haversine(a, b);
    await page.getByRole('button', { name: 'Measure distance' }).click();
    for (const point of [a, b]) await page.locator('#map canvas').click({ position: await pixelOf(page, point) });
    await page.getByRole('button', { name: 'Finish' }).click();
    const result = page.getByTestId('measure-result');
    await expect.poll(() => result.getAttribute('data-kind')).toBe('distance');
    const measured = Number(await result.getAttribute('data-value'));
    // Clicks land on whole pixels: at this zoom a pixel is a few centimetres, far below 2 % of 40 m.
    expect(Math.abs(measured - known) / known).toBeLessThan(0.02);
    expect(await result.textContent()).toMatch(/^Distance: \d+(\.\d+)? m/);
    await screenshot(page, 'map-distance-desktop');

    // The height the map reads from the DSM in the browser is the DSM's own, read here with rasterio.
    await page.getByRole('button', { name: 'Elevation at a point' }).click();
    await page.locator('#map canvas').click({ position: await pixelOf(page, mid) });
    await expect.poll(() => result.getAttribute('data-kind'), { timeout: 30_000 }).toBe('elevation');
    const height = Number(await result.getAttribute('data-value'));
    const dsm = path.join(work, 'dsm.tif');
    await writeFile(dsm, (await download(t.admin, `/api/projects/${projectId}/tasks/${taskId}/download/dsm.tif`)).bytes);
    const sampled = Number(python(SAMPLE_DSM, dsm, String(mid[0]), String(mid[1])));
    expect(Math.abs(height - sampled)).toBeLessThan(0.3);
    await page.getByLabel('Surface model (DSM)').check();
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
    await screenshot(page, 'map-dsm-desktop');
    errors.push(...pageErrors);
    await page.context().close();
    await eachViewport(`/map/project/${projectId}/task/${taskId}/`, 'map', (p) => p.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 }));
    expect(errors).toEqual([]);
  }, 180_000);

  it('streams the point cloud into the 3D view, with the textured model', async () => {
    await eachViewport(`/3d/project/${projectId}/task/${taskId}/`, '3d', async (page) => {
      await expect.poll(async () => Number(await page.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(10_000);
      const canvas = await page.locator('#viewer3d canvas').screenshot();
      expect((await pixelStats(canvas)).colours).toBeGreaterThan(100);
    });
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/3d/project/${projectId}/task/${taskId}/`);
    await expect.poll(async () => Number(await page.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(10_000);
    // An area: three corners clicked on the cloud around the middle of the view.
    await page.getByRole('button', { name: 'Area' }).click();
    const canvas = (await page.locator('#viewer3d canvas').boundingBox())!;
    for (const [dx, dy] of [[-120, 40], [120, 40], [0, -60]]) {
      await page.locator('#viewer3d canvas').click({ position: { x: canvas.width / 2 + dx, y: canvas.height / 2 + dy } });
    }
    const result = page.getByTestId('measure-result');
    await expect.poll(() => result.getAttribute('data-kind')).toBe('area');
    expect(Number(await result.getAttribute('data-value'))).toBeGreaterThan(1);
    await screenshot(page, '3d-area-desktop');
    // A profile across the cloud: where it has points, the top of them lies on the DSM.
    await page.getByRole('button', { name: 'Profile' }).click();
    for (const dx of [-160, 160]) await page.locator('#viewer3d canvas').click({ position: { x: canvas.width / 2 + dx, y: canvas.height / 2 + 30 } });
    await expect.poll(() => result.getAttribute('data-kind')).toBe('profile');
    await page.getByRole('img', { name: /Elevation profile over/ }).waitFor();
    const line = await page.evaluate(() => {
      const { session } = (window as unknown as { __aeromapViewer: { session: { state: { value: { picks: number[][]; profile: { distance: number; height: number | null }[] } }; toCrs(v: number[]): number[] } } }).__aeromapViewer;
      return { ends: session.state.value.picks.map((p) => session.toCrs(p)), profile: session.state.value.profile };
    });
    const [start, end] = line.ends;
    const length = Math.hypot(end![0]! - start![0]!, end![1]! - start![1]!);
    const stations = line.profile.map(({ distance }) => [start![0]! + ((end![0]! - start![0]!) * distance) / length, start![1]! + ((end![1]! - start![1]!) * distance) / length]);
    const dsmFile = path.join(work, 'dsm-profile.tif');
    await writeFile(dsmFile, (await download(t.admin, `/api/projects/${projectId}/tasks/${taskId}/download/dsm.tif`)).bytes);
    const dsmHeights = python(SAMPLE_DSM_XY, dsmFile, ...stations.flat().map(String)).trim().split(' ').map(Number);
    const gaps = line.profile.flatMap(({ height }, k) => (height !== null && Number.isFinite(dsmHeights[k]) ? [Math.abs(height - dsmHeights[k]!)] : []));
    expect(gaps.length).toBeGreaterThan(line.profile.length / 2);
    const sorted = [...gaps].sort((a, b) => a - b);
    console.log(`3D profile against the DSM over ${length.toFixed(1)} m: ${gaps.length} stations, median ${sorted[Math.floor(gaps.length / 2)]!.toFixed(3)} m, 90th percentile ${sorted[Math.floor(gaps.length * 0.9)]!.toFixed(3)} m`);
    expect(sorted[Math.floor(gaps.length / 2)]).toBeLessThan(0.1);
    await screenshot(page, '3d-profile-desktop');
    // A clip box: what lay outside it is neither drawn nor picked any more; inside, it still is.
    const pickAt = (dx: number, dy: number) => page.evaluate(([x, y]) => {
      const viewer = (window as unknown as { __aeromapViewer: { session: { viewer: { pick(x: number, y: number): unknown } } } }).__aeromapViewer.session.viewer;
      return viewer.pick(x!, y!) !== null;
    }, [canvas.width / 2 + dx, canvas.height / 2 + dy]);
    expect(await pickAt(-150, 30)).toBe(true);
    await page.getByRole('button', { name: 'Clip box' }).click();
    for (const [dx, dy] of [[-60, -30], [60, 60]]) await page.locator('#viewer3d canvas').click({ position: { x: canvas.width / 2 + dx, y: canvas.height / 2 + dy } });
    await expect.poll(() => result.getAttribute('data-kind')).toBe('clip');
    expect(await pickAt(-150, 30)).toBe(false);
    expect(await pickAt(0, 15)).toBe(true);
    await screenshot(page, '3d-clip-desktop');
    await page.getByRole('button', { name: /Show all/ }).click();
    expect(await pickAt(-150, 30)).toBe(true);
    // The view saved is where the 3D view opens next time, kept in the task's scene in the CRS.
    const camera = () => page.evaluate(() => (window as unknown as { __aeromapViewer: { camera: { position: { toArray(): number[] } } } }).__aeromapViewer.camera.position.toArray());
    await page.keyboard.press('Escape');
    await page.locator('#viewer3d').focus();
    for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowLeft');
    const turned = await camera();
    await page.getByRole('button', { name: 'Save view' }).click();
    await page.getByText(/View saved/).waitFor();
    const view = (await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/3d/scene`)).body.view as { position: number[] };
    expect(view.position[0]).toBeGreaterThan(1000); // easting, not the view's local frame
    await page.reload();
    await expect.poll(async () => Number(await page.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(10_000);
    const reopened = await camera();
    for (const axis of [0, 1, 2]) expect(reopened[axis]).toBeCloseTo(turned[axis]!, 1);
    // The cameras drawn where the photographs were taken: one clicked shows its photograph.
    await page.getByLabel('Cameras').check();
    const camerasInView = async () => {
      const drawn = await page.evaluate(() => (window as unknown as { __aeromapViewer: { session: { cameraPixels(): { filename: string; x: number; y: number }[] } } }).__aeromapViewer.session.cameraPixels());
      return drawn.filter((c) => c.x > 300 && c.x < canvas.width - 20 && c.y > 20 && c.y < canvas.height - 20);
    };
    // shots.geojson is read when the box is first checked.
    await expect.poll(async () => (await camerasInView()).length, { timeout: 20_000 }).toBeGreaterThan(0);
    const inView = await camerasInView();
    await page.locator('#viewer3d canvas').click({ position: { x: inView[0]!.x, y: inView[0]!.y } });
    const photo = page.getByRole('img', { name: `Photograph ${inView[0]!.filename}` });
    await expect.poll(() => photo.evaluate((img) => (img as HTMLImageElement).naturalWidth), { timeout: 20_000 }).toBeGreaterThan(100);
    await screenshot(page, '3d-cameras-desktop');
    // The model streamed from its 3D Tiles (tile by tile from the task's assets), not downloaded whole: with the
    // cloud hidden, it fills the middle of the view framed on the cloud.
    const tileRequests: number[] = [];
    page.on('response', (response) => {
      if (/\/assets\/3d_tiles\/model\/tiles\/[^/]+\.glb$/.test(response.url())) tileRequests.push(response.status());
    });
    await page.getByLabel('Cameras').uncheck();
    await page.getByLabel('Textured model').check();
    await page.locator('#viewer3d[data-model-loaded="true"]').waitFor({ timeout: 120_000 });
    expect(await page.locator('#viewer3d').getAttribute('data-model-streamed')).toBe('true');
    expect(tileRequests.length).toBeGreaterThan(0);
    expect(tileRequests.every((status) => status === 200)).toBe(true);
    await page.getByLabel('Point cloud').uncheck();
    await page.waitForTimeout(500);
    const middle = await pixelStats(await page.screenshot({ clip: { x: canvas.x + canvas.width / 2 - 100, y: canvas.y + canvas.height / 2 - 100, width: 200, height: 200 } }));
    console.log(`the streamed model: ${tileRequests.length} tiles fetched; the middle of the view ${middle.colours} colours, spread ${middle.spread.toFixed(1)}`);
    expect(middle.colours).toBeGreaterThan(200);
    await screenshot(page, '3d-model-desktop');
    errors.push(...pageErrors);
    await page.context().close();
    expect(errors).toEqual([]);
  }, 300_000);

  it.runIf(LONG)('imports the task\'s orthophoto, DSM, point cloud and model as products made elsewhere, and maps, measures and shows them', async () => {
    const products = { orthophoto: 'orthophoto.tif', dsm: 'dsm.tif', pointcloud: 'georeferenced_model.laz', texturedmodel: 'textured_model.glb' };
    for (const asset of Object.values(products)) {
      await writeFile(path.join(work, `external-${asset}`), (await download(t.admin, `/api/projects/${projectId}/tasks/${taskId}/download/${asset}`)).bytes);
    }
    python(WITH_INTENSITY, path.join(work, 'external-georeferenced_model.laz'));
    // A project of its own, removed at the end: the tests after this one count the first project's tasks.
    const elsewhere = (await t.admin.post('/api/projects/', { name: 'Elsewhere' })).body.id as number;
    try {
      const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
      await page.goto(`${t.url}/dashboard/`);
      await page.getByRole('article', { name: 'Elsewhere' }).getByRole('button', { name: 'Import' }).click();
      await page.getByLabel('Products made elsewhere').check();
      await page.getByLabel('Orthophoto (GeoTIFF)').setInputFiles(path.join(work, 'external-orthophoto.tif'));
      await page.getByLabel('Surface model, DSM (GeoTIFF)').setInputFiles(path.join(work, 'external-dsm.tif'));
      await page.getByLabel('Point cloud (LAS, LAZ)').setInputFiles(path.join(work, 'external-georeferenced_model.laz'));
      await page.getByLabel('Textured model (GLB)').setInputFiles(path.join(work, 'external-textured_model.glb'));
      await page.getByLabel(/^Name/).fill('Brighton from elsewhere');
      await screenshot(page, 'import-products-desktop');
      await page.getByRole('dialog').getByRole('button', { name: 'Import' }).click();
      await page.getByText('Brighton from elsewhere').waitFor();
      const [listed] = (await t.admin.get(`/api/projects/${elsewhere}/tasks/`)).body;
      const imported = await waitForTask(t.admin, `/api/projects/${elsewhere}/tasks/${listed.id}/`, finished, 120_000);
      expect(imported.status, imported.last_error).toBe(TaskStatus.COMPLETED);
      expect(imported.available_assets).toEqual(expect.arrayContaining(Object.values(products)));

      // The map draws the imported orthophoto, and its tools read the imported DSM.
      await page.goto(`${t.url}/map/project/${elsewhere}/task/${imported.id}/`);
      await page.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
      const box = (await page.locator('#map canvas').boundingBox())!;
      const centre = await page.screenshot({ clip: { x: box.x + box.width / 2 - 100, y: box.y + box.height / 2 - 100, width: 200, height: 200 } });
      expect((await pixelStats(centre)).colours).toBeGreaterThan(200);
      const [west, south, east, north] = imported.extent as number[];
      const mid = [(west + east) / 2, (south + north) / 2];
      const result = page.getByTestId('measure-result');
      await page.getByRole('button', { name: 'Elevation at a point' }).click();
      await page.locator('#map canvas').click({ position: await pixelOf(page, mid) });
      await expect.poll(() => result.getAttribute('data-kind'), { timeout: 30_000 }).toBe('elevation');
      const sampled = Number(python(SAMPLE_DSM, path.join(work, 'external-dsm.tif'), String(mid[0]), String(mid[1])));
      expect(Math.abs(Number(await result.getAttribute('data-value')) - sampled)).toBeLessThan(0.3);
      // A volume over a triangle around the middle, above a level base 2 m under the ground there (a base of the
      // boundary's heights would follow each pixel the clicks land on): the same figure the API gives for it.
      const base = Math.round(sampled) - 2;
      const triangle = [[mid[0] - 0.0002, mid[1] - 0.0001], [mid[0] + 0.0002, mid[1] - 0.0001], [mid[0], mid[1] + 0.00015]];
      await page.getByRole('button', { name: 'Clear measurement' }).click();
      await page.getByRole('combobox', { name: 'Base' }).selectOption('custom');
      await page.getByLabel('Height (m)').fill(String(base));
      await page.getByRole('button', { name: 'Measure volume' }).click();
      for (const corner of triangle) await page.locator('#map canvas').click({ position: await pixelOf(page, corner) });
      await page.getByRole('button', { name: 'Finish' }).click();
      await expect.poll(() => result.getAttribute('data-kind'), { timeout: 60_000 }).toBe('volume');
      const drawn = Number(await result.getAttribute('data-value'));
      await screenshot(page, 'map-imported-volume-desktop');
      console.log(`volume drawn on the imported DSM: ${await result.textContent()}`);
      const started = await t.admin.post(`/api/projects/${elsewhere}/tasks/${imported.id}/volume`, {
        area: { type: 'Polygon', coordinates: [[...triangle, triangle[0]]] },
        method: 'custom',
        base,
      });
      let state: { ready?: boolean } = {};
      for (const until = Date.now() + 60_000; !state.ready && Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
        state = (await t.admin.get(`/api/workers/check/${started.body.celery_task_id}`)).body;
      }
      const api = JSON.parse((await download(t.admin, `/api/workers/get/${started.body.celery_task_id}`)).bytes.toString());
      console.log(`the API's volume over the same triangle: ${JSON.stringify(api)}`);
      expect(api.net).toBeGreaterThan(100);
      expect(Math.abs(drawn - api.net) / api.net).toBeLessThan(0.02); // clicks land on whole pixels

      // The 3D view streams the imported point cloud.
      await page.goto(`${t.url}/3d/project/${elsewhere}/task/${imported.id}/`);
      await expect.poll(async () => Number(await page.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(10_000);
      // Its intensities (a laser's, given to it above) coloured in grey: the menu offers them, and the cloud turns
      // to many levels of grey.
      await page.getByRole('combobox', { name: 'Colour' }).selectOption('intensity');
      await page.waitForTimeout(500);
      const view = (await page.locator('#viewer3d canvas').boundingBox())!;
      const middle = await pixelStats(await page.screenshot({ clip: { x: view.x + view.width / 2 - 100, y: view.y + view.height / 2 - 100, width: 200, height: 200 } }));
      expect(middle.greyLevels).toBeGreaterThan(30);
      await screenshot(page, '3d-imported-intensity-desktop');
      await page.getByRole('combobox', { name: 'Colour' }).selectOption('rgb');
      // The imported model lies on the imported cloud: its bounds' centre (placed by its CESIUM_RTC centre) near
      // the cloud's, in the CRS both share.
      await page.getByLabel('Textured model').check();
      await page.locator('#viewer3d[data-model-loaded="true"]').waitFor({ timeout: 120_000 });
      const model = (await page.locator('#viewer3d').getAttribute('data-model-centre'))!.split(',').map(Number);
      const cloud = python(CLOUD_CENTRE, path.join(work, 'external-georeferenced_model.laz')).split(' ').map(Number);
      console.log(`imported model centre ${model.join(', ')}; cloud centre ${cloud.join(', ')}`);
      expect(Math.hypot(model[0] - cloud[0], model[1] - cloud[1])).toBeLessThan(10);
      expect(Math.abs(model[2] - cloud[2])).toBeLessThan(10);
      await screenshot(page, '3d-imported-desktop');
      errors.push(...pageErrors);
      await page.context().close();
      expect(errors).toEqual([]);
    } finally {
      expect((await t.admin.delete(`/api/projects/${elsewhere}/`)).status).toBe(204);
    }
  }, 300_000);

  it('downloads an asset, restarts, cancels and removes the task', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/project/${projectId}/task/${taskId}/`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Orthophoto (GeoTIFF)' }).click()]);
    const tiff = await readFile((await download.path())!);
    expect(tiff.subarray(0, 4).toString('latin1')).toMatch(/^(II\*\0|MM\0\*|II\+\0)/);
    expect(tiff.length).toBeGreaterThan(100_000);

    await page.getByLabel('Restart from stage').selectOption('opensfm');
    await page.getByRole('button', { name: 'Restart' }).click();
    await expect.poll(async () => (await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/`)).body.status, { timeout: 60_000 }).toBe(TaskStatus.RUNNING);
    const restarted = (await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/`)).body;
    expect(restarted.options).toEqual(expect.arrayContaining([{ name: 'rerun-from', value: 'opensfm' }]));
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel task' }).click();
    await expect.poll(() => page.getByTestId('task-status').textContent(), { timeout: 60_000 }).toBe('Canceled');
    await screenshot(page, 'task-canceled-desktop');

    await page.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove task' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await expect.poll(async () => (await t.admin.get(`/api/projects/${projectId}/tasks/`)).body.length, { timeout: 30_000 }).toBe(0);
    errors.push(...pageErrors);
    await page.context().close();
    expect(errors).toEqual([]);
  }, 180_000);

  it('keeps an upload going through dropped connections, and resumes it after a reload with only the missing files', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    // A second flight's photograph with a name of the first's: both are sent and kept.
    const [other] = await brightonCopies(path.join(work, 'second'), ['DJI_0033.JPG'], 1000);
    const sameName = path.join(work, 'second', PHOTOS[1]!);
    await rename(other!, sameName);
    const photos = [...PHOTOS.map((name) => path.join(work, 'photos', name)), sameName];
    let phase: 'first' | 'resumed' = 'first';
    let dropped = 0;
    const resent: string[] = [];
    await page.route('**/upload/', async (route) => {
      const name = /filename="([^"]+)"/.exec(route.request().postDataBuffer()?.toString('latin1') ?? '')?.[1];
      if (phase === 'resumed') resent.push(name ?? '');
      // One connection drops once; another never gets through until the page is reloaded.
      else if (name === PHOTOS[0] && dropped++ === 0) return route.abort('connectionreset');
      else if (name === PHOTOS[3]) return route.abort('connectionreset');
      return route.continue();
    });
    await page.goto(`${t.url}/dashboard/`);
    await page.getByRole('button', { name: 'New task' }).click();
    await page.getByTestId('file-input').setInputFiles(photos);
    await page.getByLabel('Task name').fill('Interrupted');
    // The retry message shows while a chunk waits to be sent again, until a chunk gets through or the tries run out:
    // watched from the start, since on a loaded machine the other files may outlast the refused file's tries.
    const retrying = page.getByText(/trying again/).first().waitFor({ timeout: 60_000 }).then(() => screenshot(page, 'upload-retrying-desktop'));
    await page.getByRole('button', { name: /Upload and process/ }).click();
    const sent = () => page.evaluate(() => {
      const key = Object.keys(localStorage).find((k) => k.startsWith('aeromap.upload.'));
      return key ? (JSON.parse(localStorage.getItem(key)!).done as string[]).length : -1;
    });
    await expect.poll(sent, { timeout: 60_000 }).toBe(6);
    await retrying;

    phase = 'resumed';
    await page.reload();
    await page.getByText(/was interrupted \(6 of 7 files sent\)/).waitFor();
    await page.getByRole('button', { name: 'Resume it' }).click();
    await page.getByTestId('file-input').setInputFiles(photos);
    await expect.poll(() => page.getByTestId('file-count').textContent()).toMatch(/6 already sent/);
    await screenshot(page, 'upload-resume-desktop');
    await page.getByRole('button', { name: 'Resume upload' }).click();
    const tasks = async () => (await t.admin.get(`/api/projects/${projectId}/tasks/`)).body as { id: number; partial: boolean; images_count: number }[];
    await expect.poll(async () => (await tasks())[0]?.partial, { timeout: 30_000 }).toBe(false);
    const [task] = await tasks();
    expect(task.images_count).toBe(7);
    expect(dropped).toBeGreaterThan(1);
    // Only the missing file goes out again (twice where a request of a loaded machine failed and was retried).
    expect([...new Set(resent)]).toEqual([PHOTOS[3]]);
    await t.admin.post(`/api/projects/${projectId}/tasks/${task.id}/remove/`, {});
    errors.push(...pageErrors);
    await page.context().close();
    expect(errors).toEqual([]);
  }, 180_000);

  it('renames, finds, shares and deletes a project', async () => {
    const surveyor = (await t.createUser('surveyor')).client;
    expect((await surveyor.get(`/api/projects/${projectId}/`)).status).toBe(404);
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/dashboard/`);
    await page.getByRole('article', { name: 'Brighton Beach' }).getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('Brighton Beach 2026');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    const card = page.getByRole('article', { name: 'Brighton Beach 2026' });
    await card.waitFor();

    await card.getByRole('button', { name: 'Share' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Username').fill('surveyor');
    await dialog.getByLabel('Access', { exact: true }).selectOption('view');
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await screenshot(page, 'share-desktop');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    const shared = await surveyor.get(`/api/projects/${projectId}/`);
    expect(shared.status).toBe(200);
    expect(shared.body).toMatchObject({ name: 'Brighton Beach 2026', permissions: ['view'] });

    await page.getByLabel('Search projects').fill('no such survey');
    await page.getByText('No project matches').waitFor();
    await page.getByLabel('Search projects').fill('2026');
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete project' }).click();
    // The search asks the API: under "2026" nothing is left, and without a search there is no project at all.
    await page.getByText('No project matches').waitFor();
    await page.getByLabel('Search projects').fill('');
    await page.getByText('No project yet').waitFor();
    expect((await t.admin.get(`/api/projects/${projectId}/`)).status).toBe(404);
    errors.push(...pageErrors);
    await page.context().close();
    expect(errors).toEqual([]);
  }, 60_000);

  it('meets the serious and critical accessibility rules on every screen (axe-core)', () => {
    expect(checkedPages).toBeGreaterThanOrEqual(8);
    expect(accessibility).toEqual([]);
  });

  it('brings the sign-in page back when the token has expired', async () => {
    const [header, , signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    const expired = `${header}.${Buffer.from(JSON.stringify({ ...claims, exp: 1 })).toString('base64url')}.${signature}`;
    const { page } = await openPage(browser, 'desktop', expired);
    await page.goto(`${t.url}/dashboard/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.context().close();
  });

  it('signs out: the session cookie is gone, and the API no longer takes the browser for the user', async () => {
    const { page, errors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/dashboard/`);
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    expect((await page.request.get(`${t.url}/api/projects/`)).status()).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await expect.poll(async () => (await page.context().cookies()).some((cookie) => cookie.name === 'aeromap_session')).toBe(false);
    expect((await page.request.get(`${t.url}/api/projects/`)).status()).toBe(403);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.context().close();
    expect(errors).toEqual([]);
  });
});
