// A public task in a real Chromium, signed out: the real engine makes the task (four Brighton Beach photographs,
// scaled down), its owner shares it with the task page's Share control, and a browser that never signed in opens
// the link: the orthophoto's tiles on the map, the COPC point cloud in the 3D view, and the iframe pages framed by
// another site. Before it is shared, the same addresses answer 404. Screenshots go to dist/screenshots.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { type TestService, startService } from '../service/helpers.ts';
import { LONG, TaskStatus, brightonCopies, finished, imageForm, postForm, waitForTask } from '../service/taskhelpers.ts';
import { launchBrowser, openPage, screenshot } from './browser.ts';

const PHOTOS = ['DJI_0027.JPG', 'DJI_0028.JPG', 'DJI_0029.JPG', 'DJI_0030.JPG'];
// At a quarter of the full size, "ultra" keeps enough features to tie the photographs together.
const OPTIONS = [
  { name: 'feature-quality', value: 'ultra' },
  { name: 'pc-quality', value: 'lowest' },
];

/** How many distinct colours a PNG holds (in 5 bits a channel): a drawn orthophoto or cloud has many. */
async function colours(png: Buffer): Promise<number> {
  const { data } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const seen = new Set<number>();
  for (let i = 0; i < data.length; i += 3) seen.add((data[i] >> 3) * 1024 + (data[i + 1] >> 3) * 32 + (data[i + 2] >> 3));
  return seen.size;
}

/** The answers a page received for the URLs that match, by status. */
function answersTo(page: Page, pattern: RegExp): number[] {
  const statuses: number[] = [];
  page.on('response', (response) => pattern.test(response.url()) && statuses.push(response.status()));
  return statuses;
}

// In `make test-long`: test/service/public-tasks.test.ts checks what is open to anyone through the API.
describe.runIf(LONG)('a public task in Chromium, signed out', () => {
  let t: TestService;
  let work: string;
  let browser: Browser;
  let framer: Server;
  let framerUrl: string;
  let projectId: number;
  let taskId: number;
  const errors: string[] = [];
  const closers: (() => Promise<void>)[] = [];
  const pages = () => [`/public/task/${taskId}/map/`, `/public/task/${taskId}/3d/`, `/public/task/${taskId}/iframe/map/`, `/public/task/${taskId}/iframe/3d/`];

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    t = await startService('sqlite', { nodeRefreshIntervalMs: 15_000 });
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-public-'));
    const embedded = await startEmbeddedNode({ port: 0, dataDir: path.join(work, 'node') }, t.service.db, t.service.refresher, () => {});
    closers.push(() => embedded.node.close());
    await t.service.refresher.refreshAll();
    // Another site, which embeds the public pages that are made for it.
    framer = createServer((request, response) => {
      const src = new URL(request.url ?? '/', 'http://x').searchParams.get('src') ?? '';
      response.setHeader('content-type', 'text/html');
      response.end(`<!doctype html><title>Blog</title><h1>Our survey</h1><iframe id="embedded" src="${src}" width="900" height="560"></iframe>`);
    });
    framer.listen(0, '127.0.0.1');
    await once(framer, 'listening');
    // Another origin than the service's: localhost rather than 127.0.0.1.
    framerUrl = `http://localhost:${(framer.address() as AddressInfo).port}`;
    closers.push(() => new Promise((resolve) => framer.close(() => resolve())));
    browser = await launchBrowser();
    closers.push(() => browser.close());

    projectId = (await t.admin.post('/api/projects/', { name: 'Brighton Beach' })).body.id;
    const photos = await brightonCopies(path.join(work, 'photos'), PHOTOS, 1000);
    const created = await postForm(t.admin, `/api/projects/${projectId}/tasks/`, await imageForm(photos, { name: 'Shore', options: JSON.stringify(OPTIONS) }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    taskId = created.body.id;
    const done = await waitForTask(t.admin, `/api/projects/${projectId}/tasks/${taskId}/`, finished, 540_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.available_assets).toEqual(expect.arrayContaining(['orthophoto.tif', 'georeferenced_model.laz']));
  }, 600_000);

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('answers 404 for the public pages and reads of a task that is not public', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop');
    for (const url of pages()) expect((await page.goto(`${t.url}${url}`))?.status(), url).toBe(404);
    await page.goto(`${t.url}/`);
    const base = `/api/projects/${projectId}/tasks/${taskId}`;
    const reads = [`${base}/`, `${base}/orthophoto/tiles.json`, `${base}/thumbnail`, `${base}/assets/odm_georeferencing/odm_georeferenced_model.copc.laz`, `/public/task/${taskId}/json/`];
    const statuses = await page.evaluate((urls) => Promise.all(urls.map(async (url) => (await fetch(url)).status)), reads);
    expect(statuses).toEqual(reads.map(() => 404));
    errors.push(...pageErrors);
    await page.context().close();
  });

  it("shares the task from its page: public switch, link, embedding code, QR code; the list's thumbnail", async () => {
    const token = (await t.admin.post('/api/token-auth/', { username: 'admin', password: 'admin-password' })).body.token as string;
    const { page, errors: pageErrors } = await openPage(browser, 'desktop', token);
    await page.goto(`${t.url}/dashboard/`);
    const thumbnail = page.getByTestId('task-thumbnail');
    await thumbnail.waitFor();
    await expect.poll(() => thumbnail.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBeGreaterThan(40);
    await screenshot(page, 'public-dashboard-thumbnail-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'public-dashboard-thumbnail-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.goto(`${t.url}/project/${projectId}/task/${taskId}/`);
    const share = page.getByRole('region', { name: 'Share' });
    await share.getByLabel(/^Public/).check();
    const link = page.getByTestId('public-link');
    await expect.poll(() => link.inputValue()).toBe(`${t.url}/public/task/${taskId}/map/`);
    expect(await page.getByTestId('public-embed').inputValue()).toBe(
      `<iframe src="${t.url}/public/task/${taskId}/iframe/map/" width="800" height="600" style="border: 0" allowfullscreen></iframe>`,
    );
    const qr = page.getByTestId('public-qr');
    await expect.poll(() => qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBeGreaterThan(100);
    expect((await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/`)).body).toMatchObject({ public: true, public_edit: false });
    await share.getByLabel(/^Allow edits/).check();
    await expect.poll(async () => (await t.admin.get(`/api/projects/${projectId}/tasks/${taskId}/`)).body.public_edit).toBe(true);
    await share.scrollIntoViewIfNeeded();
    await screenshot(page, 'public-share-desktop');
    errors.push(...pageErrors);
    await page.context().close();
  }, 60_000);

  it('draws the shared map with its tiles for a browser that never signed in', async () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      const { page, errors: pageErrors } = await openPage(browser, viewport);
      const tiles = answersTo(page, /\/orthophoto\/tiles\/\d+\/\d+\/\d+/);
      const reply = await page.goto(`${t.url}/public/task/${taskId}/map/`);
      expect(reply?.status()).toBe(200);
      expect(reply?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
      await page.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
      expect(tiles.length).toBeGreaterThan(0);
      expect(tiles.every((status) => status === 200)).toBe(true);
      const box = (await page.locator('#map canvas').boundingBox())!;
      const centre = await page.screenshot({ clip: { x: box.x + box.width / 2 - 60, y: box.y + box.height / 2 - 60, width: 120, height: 120 } });
      expect(await colours(centre)).toBeGreaterThan(150);
      // Nobody is signed in: no session, and the sign-in page is not shown.
      expect((await page.context().cookies()).some((cookie) => cookie.name === 'aeromap_session')).toBe(false);
      expect(await page.getByRole('button', { name: 'Sign in' }).count()).toBe(0);
      await screenshot(page, `public-map-${viewport}`);
      errors.push(...pageErrors);
      await page.context().close();
    }
    expect(errors).toEqual([]);
  }, 180_000);

  it('streams the COPC point cloud into the shared 3D view', async () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      const { page, errors: pageErrors } = await openPage(browser, viewport);
      const ranges = answersTo(page, /copc\.laz/);
      expect((await page.goto(`${t.url}/public/task/${taskId}/3d/`))?.status()).toBe(200);
      await expect.poll(async () => Number(await page.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(1000);
      expect(ranges.length).toBeGreaterThan(0);
      expect(ranges.every((status) => status === 206 || status === 200)).toBe(true);
      expect(await colours(await page.locator('#viewer3d canvas').screenshot())).toBeGreaterThan(50);
      await screenshot(page, `public-3d-${viewport}`);
      errors.push(...pageErrors);
      await page.context().close();
    }
    expect(errors).toEqual([]);
  }, 180_000);

  it('lets another site frame the iframe pages, and only those', async () => {
    const { page, errors: pageErrors } = await openPage(browser, 'desktop');
    const blocked: string[] = [];
    page.on('console', (message) => /frame-ancestors|Refused to display/i.test(message.text()) && blocked.push(message.text()));
    const framed = async (url: string) => {
      await page.goto(`${framerUrl}/?src=${encodeURIComponent(`${t.url}${url}`)}`);
      return page.frameLocator('#embedded');
    };
    const map = await framed(`/public/task/${taskId}/iframe/map/`);
    await map.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
    expect(await map.locator('.app-header').count()).toBe(0);
    await screenshot(page, 'public-iframe-map-desktop');
    const model = await framed(`/public/task/${taskId}/iframe/3d/`);
    await expect.poll(async () => Number(await model.locator('#viewer3d').getAttribute('data-points')), { timeout: 60_000 }).toBeGreaterThan(1000);
    await screenshot(page, 'public-iframe-3d-desktop');
    expect(blocked).toEqual([]);
    // The other pages of the application refuse to be framed.
    await framed(`/public/task/${taskId}/map/`);
    await expect.poll(() => blocked.length, { timeout: 10_000 }).toBeGreaterThan(0);
    // That refusal is the one error expected here (the frames before it were checked above).
    errors.push(...pageErrors.filter((error) => !/frame-ancestors/.test(error)));
    await page.context().close();
    expect(errors).toEqual([]);
  }, 180_000);
});
