// The map's Plant Health section in Chromium, against the real service and engine: a multispectral orthophoto
// (red, green, blue and near infrared, named by their band descriptions) imported as a task; NDVI drawn with its
// histogram; a formula the bands cannot feed refused in words; the range moved with the keys and by dragging a
// handle, each time asking for new tiles; a thermal orthophoto (one LWIR band) drawn in °C, and beside the other
// right of a divider (side by side). The screenshots go to
// dist/screenshots.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { type TestService, startService } from '../service/helpers.ts';
import { LONG, importTask, orthophotoZip } from '../service/taskhelpers.ts';
import { accessibilityFailures, launchBrowser, openPage, screenshot } from './browser.ts';

/**
 * 100 m square at 0.5 m: crop in the west half (near infrared rising southwards: NDVI from 0.56 to 0.71), bare soil
 * in the east half (NDVI from 0 to 0.14).
 */
const FIELD = `rows = np.linspace(0, 1, 200)[:, None]
rgba = np.empty((4, 200, 200), np.uint8)
rgba[:3, :, :100] = np.array([40, 120, 40], np.uint8)[:, None, None]
rgba[3, :, :100] = (140 + 100 * rows).astype(np.uint8)
rgba[:3, :, 100:] = np.array([120, 110, 90], np.uint8)[:, None, None]
rgba[3, :, 100:] = np.random.default_rng(7).integers(120, 160, (200, 100))`;

/** 100 m square at 0.5 m: a field warming from 12 °C in the north to 24 °C in the south, a 40 °C roof in its middle. */
const THERMAL = `rows = np.linspace(12, 24, 200, dtype=np.float32)[:, None]
celsius = np.repeat(rows, 200, axis=1)
celsius[90:110, 90:110] = 40`;

/** The rescale of a tile URL, such as "0.01,0.71". */
const rescaleOf = (url: string) => new URL(url).searchParams.get('rescale');

describe.runIf(LONG)('plant health in Chromium', () => {
  let t: TestService;
  let work: string;
  let browser: Browser;
  let mapUrl: string;
  let thermalMapUrl: string;
  let projectMapUrl: string;
  let thermalId: number;

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-web-plant-'));
    const projectId = (await t.admin.post('/api/projects/', { name: 'Farm' })).body.id as number;
    const zip = orthophotoZip(work, FIELD, 0.5, false, 'rgbn');
    const done = await importTask(t.admin, projectId, zip, 'Multispectral flight');
    mapUrl = `${t.url}/map/project/${projectId}/task/${done.id}/`;
    const thermalZip = orthophotoZip(await mkdtemp(path.join(work, 'thermal-')), THERMAL, 0.5, false, 'lwir');
    const thermalDone = await importTask(t.admin, projectId, thermalZip, 'Thermal flight');
    thermalMapUrl = `${t.url}/map/project/${projectId}/task/${thermalDone.id}/`;
    projectMapUrl = `${t.url}/map/project/${projectId}/`;
    thermalId = thermalDone.id;
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /**
   * Waits for the orthophoto's tiles in a range that `wanted` accepts, then for the map to have drawn them; answers
   * that range. A change made of several steps (three key presses) asks for tiles at each, so `wanted` names the last.
   */
  async function newRange(page: Page, wanted: (range: number[]) => boolean, change: () => Promise<void>): Promise<string> {
    const inRange = (url: string) => {
      const range = rescaleOf(url);
      return range !== null && wanted(range.split(',').map(Number));
    };
    const [response] = await Promise.all([
      // The first tiles of an index start the tile worker, which under the whole suite's load takes its time.
      page.waitForResponse((r) => r.url().includes('/orthophoto/tiles/') && inRange(r.url()), { timeout: 60_000 }),
      change(),
    ]);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 60_000 });
    return rescaleOf(response.url())!;
  }

  it('draws NDVI with its histogram, says why NDRE cannot be drawn, and redraws when the range moves', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    const tiles: { url: string; status: number }[] = [];
    page.on('response', (r) => r.url().includes('/orthophoto/tiles/') && tiles.push({ url: r.url(), status: r.status() }));
    await page.goto(mapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });

    // Four colour bands: the section starts with NDVI, read in the orthophoto's own order (its band descriptions).
    const first = await newRange(page, () => true, () => page.getByRole('checkbox', { name: 'Plant health' }).check());
    const index = page.getByRole('combobox', { name: 'Index' });
    expect(await index.inputValue()).toBe('NDVI');
    await page.getByText('Normalized Difference Vegetation Index shows the amount of green vegetation.').waitFor();
    expect(await page.getByRole('combobox', { name: 'Bands' }).locator('option').first().textContent()).toBe('Automatic (RGBN)');
    await page.getByRole('img', { name: /^Histogram of NDVI/ }).waitFor();
    expect(await page.getByRole('img', { name: /^Histogram of NDVI/ }).locator('rect').count()).toBe(255);
    // The 2nd to 98th percentiles: the soil's lowest to the crop's highest NDVI.
    const [low, high] = first.split(',').map(Number);
    expect(low).toBeGreaterThanOrEqual(0);
    expect(low).toBeLessThan(0.05);
    expect(high).toBeGreaterThan(0.65);
    expect(high).toBeLessThan(0.72);
    const ndviTiles = tiles.filter(({ url }) => url.includes('formula=NDVI'));
    expect(ndviTiles.length).toBeGreaterThan(0);
    expect(ndviTiles.every(({ url }) => /bands=auto/.test(url) && /color_map=rdylgn/.test(url))).toBe(true);

    // NDRE needs a red-edge band: refused in words, and the orthophoto goes back to its own colours.
    await index.selectOption('NDRE');
    await page.getByRole('alert').filter({ hasText: 'NDRE needs the Re band, which the orthophoto does not have (its bands are RGBN)' }).waitFor();
    expect(await page.getByRole('img', { name: /^Histogram of/ }).count()).toBe(0);
    expect(tiles.some(({ url }) => url.includes('formula=NDRE'))).toBe(false);
    await screenshot(page, 'plant-health-refused-desktop');

    // Back to NDVI, over the range first drawn (its tiles may come from the browser's cache); then the minimum moved
    // by keys and the maximum by dragging, each a new range of new tiles.
    await index.selectOption('NDVI');
    await page.getByRole('img', { name: /^Histogram of NDVI/ }).waitFor();
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const minimum = page.getByRole('slider', { name: 'Minimum' });
    const maximum = page.getByRole('slider', { name: 'Maximum' });
    const before = Number(await minimum.getAttribute('aria-valuenow'));
    expect(before).toBeCloseTo(low, 2);
    expect(Number(await maximum.getAttribute('aria-valuenow'))).toBeCloseTo(high, 2);
    // PageUp moves 10 of the histogram's 255 bins of the NDVI's 0 to 0.71 (0.028): three presses move 0.084.
    const keyed = await newRange(page, ([from]) => from > low + 0.07, async () => {
      await minimum.focus();
      for (let i = 0; i < 3; i++) await minimum.press('PageUp');
    });
    const [keyedLow, keyedHigh] = keyed.split(',').map(Number);
    expect(keyedLow).toBeLessThan(low + 0.1);
    expect(keyedHigh).toBe(high);
    expect(Number(await minimum.getAttribute('aria-valuenow'))).toBeCloseTo(keyedLow, 2);

    const box = (await maximum.boundingBox())!;
    const dragged = await newRange(page, ([, to]) => to < high - 0.05, async () => {
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width / 2 - 40, box.y + box.height / 2, { steps: 4 });
      await page.mouse.up();
    });
    const [draggedLow, draggedHigh] = dragged.split(',').map(Number);
    expect(draggedLow).toBe(keyedLow);
    expect(Number(await maximum.getAttribute('aria-valuenow'))).toBeCloseTo(draggedHigh, 2);
    expect(await page.getByTestId('plant-legend').locator('figcaption').textContent()).toMatch(/^NDVI \(0\.\d{3} – 0\.\d{3}\)$/);

    expect(tiles.filter(({ url }) => rescaleOf(url) === dragged).length).toBeGreaterThan(0);
    expect(tiles.filter(({ status }) => status !== 200 && status !== 304)).toEqual([]);
    await screenshot(page, 'plant-health-desktop');
    expect(await accessibilityFailures(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 180_000);

  it('draws a thermal orthophoto in °C on a magma ramp, with its legend', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    const tiles: { url: string; status: number }[] = [];
    page.on('response', (r) => r.url().includes('/orthophoto/tiles/') && tiles.push({ url: r.url(), status: r.status() }));
    await page.goto(thermalMapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });

    // A lone LWIR band: the section starts with the temperatures, over their 2nd to 98th percentiles.
    const range = await newRange(page, () => true, () => page.getByRole('checkbox', { name: 'Plant health' }).check());
    expect(await page.getByRole('combobox', { name: 'Index' }).inputValue()).toBe('Thermal C');
    expect(await page.getByRole('combobox', { name: 'Bands' }).locator('option').first().textContent()).toBe('Automatic (L)');
    const [low, high] = range.split(',').map(Number);
    expect(low).toBeGreaterThan(11.9);
    expect(low).toBeLessThan(13);
    expect(high).toBeGreaterThan(23.5); // the roof is 1 % of the field: above the 98th percentile
    expect(high).toBeLessThan(24.5);
    const drawn = tiles.filter(({ url }) => url.includes('formula=Thermal+C') || url.includes('formula=Thermal%20C'));
    expect(drawn.length).toBeGreaterThan(0);
    expect(drawn.every(({ url }) => /color_map=magma/.test(url))).toBe(true);
    const caption = await page.getByTestId('plant-legend').locator('figcaption').textContent();
    expect(caption).toMatch(/^Thermal C \(\d+\.\d °C – \d+\.\d °C\)$/);
    expect(await page.getByTestId('plant-legend').textContent()).toContain('°C');
    expect(tiles.filter(({ status }) => status !== 200 && status !== 304)).toEqual([]);
    await screenshot(page, 'plant-health-thermal-desktop');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows the thermal flight side by side with the multispectral one, right of a divider that moves', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    const thermalTiles: string[] = [];
    page.on('response', (r) => r.url().includes(`/tasks/${thermalId}/orthophoto/tiles/`) && r.status() === 200 && thermalTiles.push(r.url()));
    await page.goto(projectMapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    // Only the multispectral flight drawn on the map itself: the thermal one comes from the second map.
    await page.getByRole('checkbox', { name: 'Orthophoto' }).nth(1).uncheck();
    await page.getByRole('combobox', { name: 'Side by side' }).selectOption({ label: 'Thermal flight right of the divider' });
    const divider = page.getByRole('slider', { name: 'Divider: Thermal flight to its right' });
    expect(await divider.getAttribute('aria-valuenow')).toBe('50');
    await expect.poll(() => thermalTiles.length).toBeGreaterThan(0);
    await divider.focus();
    await divider.press('ArrowRight');
    await divider.press('ArrowRight');
    expect(await divider.getAttribute('aria-valuenow')).toBe('60');
    expect(await page.getByTestId('swipe-map').evaluate((el) => (el as HTMLElement).style.clipPath)).toBe('inset(0px 0px 0px 60%)');
    // The second map follows the first: zoomed out, it asks for coarser tiles.
    const zoomOf = (url: string) => Number(/\/tiles\/(\d+)\//.exec(url)![1]);
    const finest = Math.min(...thermalTiles.map(zoomOf));
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await expect.poll(() => Math.min(...thermalTiles.map(zoomOf))).toBeLessThan(finest);
    await screenshot(page, 'map-side-by-side-desktop');
    await page.getByRole('combobox', { name: 'Side by side' }).selectOption('');
    expect(await page.getByTestId('swipe-map').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
