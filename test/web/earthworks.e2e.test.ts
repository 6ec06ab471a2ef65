// The map's volume tool in Chromium, against the real service and engine: a stockpile task (a cone of 523.6 m³ on
// level ground, with its DTM) imported; a hexagon drawn around the cone on the map with a plane base, then on the
// DTM; the map shows the same figures the API gives for the same polygon, within 1 % of the cone's volume; the DSM's
// contours exported from the map's Export dialog; the control point and checkpoint beside it, with their errors.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { type TestService, startService } from '../service/helpers.ts';
import { LONG, STOCKPILE_CONE, download, importTask, stockpileRing, stockpileZip } from '../service/taskhelpers.ts';
import { accessibilityFailures, launchBrowser, openPage, pixelOf, screenshot } from './browser.ts';

// In `make test-long`: test/service/earthworks.test.ts checks the same figures through the API.
describe.runIf(LONG)('volumes in Chromium', () => {
  let t: TestService;
  let work: string;
  let browser: Browser;
  let base: string;
  let mapUrl: string;
  let taskId: number;
  let projectId: number;

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-web-volume-'));
    projectId = (await t.admin.post('/api/projects/', { name: 'Quarry' })).body.id as number;
    const done = await importTask(t.admin, projectId, stockpileZip(work), 'Stockpile');
    taskId = done.id;
    base = `/api/projects/${projectId}/tasks/${done.id}`;
    mapUrl = `${t.url}/map/project/${projectId}/task/${done.id}/`;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** The API's net volume over a ring, polled to its end. */
  async function apiVolume(ring: number[][], body: Record<string, unknown>): Promise<number> {
    const started = await t.admin.post(`${base}/volume`, { area: { type: 'Polygon', coordinates: [ring] }, ...body });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      if ((await t.admin.get(`/api/workers/check/${started.body.celery_task_id}`)).body.ready) break;
    }
    const result = await download(t.admin, `/api/workers/get/${started.body.celery_task_id}`);
    return JSON.parse(result.bytes.toString('utf8')).net as number;
  }

  it('measures the stockpile on the DSM and nothing on the DTM, as the API does', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    await page.goto(mapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const hexagon = stockpileRing(15, 6);
    const result = page.getByTestId('measure-result');

    const draw = async () => {
      await page.getByRole('button', { name: 'Measure volume' }).click();
      for (const corner of hexagon.slice(0, 6)) await page.locator('#map canvas').click({ position: await pixelOf(page, corner) });
      await page.getByRole('button', { name: 'Finish' }).click();
      await expect.poll(() => result.getAttribute('data-kind'), { timeout: 30_000 }).toBe('volume');
      return Number(await result.getAttribute('data-value'));
    };

    await page.getByRole('combobox', { name: 'Base' }).selectOption('plane');
    const onDsm = await draw();
    expect(Math.abs(onDsm - STOCKPILE_CONE) / STOCKPILE_CONE).toBeLessThan(0.01);
    const same = await apiVolume(hexagon, { method: 'plane' });
    expect(Math.abs(onDsm - same) / same).toBeLessThan(0.005); // clicks land on whole pixels of the screen
    expect(await result.textContent()).toMatch(/Net volume: 52\d\.\d\d m³.*Cut: .*Fill: .*base: a plane fitted to the boundary heights.*Surface model \(DSM\) of Stockpile/);
    await screenshot(page, 'map-volume-desktop');

    await page.getByRole('button', { name: 'Clear measurement' }).click();
    await page.getByRole('combobox', { name: 'Model' }).selectOption('dtm');
    const onDtm = await draw();
    expect(Math.abs(onDtm)).toBeLessThan(0.01);
    expect(await result.textContent()).toMatch(/Terrain model \(DTM\)/);
    expect(await accessibilityFailures(page)).toEqual([]);

    // Contours of the DSM from the Export dialog: a GeoPackage of the rings about the cone, one a metre.
    await page.getByRole('button', { name: 'Export…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('combobox', { name: 'Layer' }).selectOption('dsm');
    await dialog.getByRole('combobox', { name: 'Format' }).selectOption('contours:GPKG');
    await dialog.getByRole('textbox', { name: 'Interval (m)' }).fill('1');
    await dialog.getByRole('button', { name: 'Export', exact: true }).click();
    const link = dialog.getByRole('link', { name: 'Stockpile-dsm-contours.gpkg' });
    await link.waitFor({ timeout: 30_000 });
    const gpkg = await download(t.admin, (await link.getAttribute('href'))!);
    expect(gpkg.bytes.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    await screenshot(page, 'map-contours-export-desktop');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 90_000);

  it('profiles a line across the cone: 5 m up and down again, drawn', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    await page.goto(mapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const [east, west] = stockpileRing(15, 2); // 15 m either side of the cone's centre
    await page.getByRole('button', { name: 'Elevation profile' }).click();
    for (const end of [west, east]) await page.locator('#map canvas').click({ position: await pixelOf(page, end) });
    await page.getByRole('button', { name: 'Finish' }).click();
    const result = page.getByTestId('measure-result');
    await expect.poll(() => result.getAttribute('data-kind'), { timeout: 20_000 }).toBe('profile');
    expect(Number(await result.getAttribute('data-value'))).toBeCloseTo(5, 0); // the cone's height, at 0.2 m cells
    expect(await result.textContent()).toMatch(/^Profile: 100\.00 m to 10[45]\.\d\d m over (29|30)\.\d\d m.*Surface model of Stockpile \(EPSG:32633\)/);
    const chart = result.getByRole('img', { name: /^Elevation profile over/ });
    expect(await chart.locator('polyline').count()).toBe(1);
    await screenshot(page, 'map-profile-desktop');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows the change since an earlier survey: the cone taken away and the pit dug, in red, with its cut', async () => {
    const dir = await mkdtemp(path.join(work, 'excavated-'));
    const later = await importTask(t.admin, projectId, stockpileZip(dir, true), 'Excavated');
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    await page.goto(`${t.url}/map/project/${projectId}/task/${later.id}/`);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const section = page.getByRole('region', { name: 'Change between surveys' });
    expect(await section.getByRole('combobox', { name: 'Earlier' }).locator('option:checked').textContent()).toBe('Stockpile');
    await section.getByRole('combobox', { name: 'Model' }).selectOption('dtm');
    await section.getByRole('button', { name: 'Show change' }).click();
    const result = page.getByTestId('change-result');
    await result.waitFor({ timeout: 30_000 });
    // On the terrain models only the pit changed: 20 x 10 m, 2 m deep.
    expect(Number(await result.getAttribute('data-cut'))).toBeCloseTo(400, 0);
    expect(Number(await result.getAttribute('data-fill'))).toBeCloseTo(0, 3);
    expect(await page.getByTestId('change-legend').locator('figcaption').textContent()).toBe('Excavated less Stockpile (DTM), m');
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const canvas = (await page.locator('#map canvas').boundingBox())!;
    const colourAt = async (lonLat: number[]) => {
      const { x, y } = await pixelOf(page, lonLat);
      const png = await page.screenshot({ clip: { x: canvas.x + x - 2, y: canvas.y + y - 2, width: 5, height: 5 } });
      const { data } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      return [0, 1, 2].map((band) => data.filter((_, i) => i % 3 === band).reduce((sum, v) => sum + v, 0) / 25);
    };
    const [pitRed, pitGreen, pitBlue] = await colourAt(stockpileRing(0, 4)[0]); // the pit's centre
    expect(pitRed - pitBlue).toBeGreaterThan(80);
    expect(pitRed - pitGreen).toBeGreaterThan(80);
    const [outRed, , outBlue] = await colourAt(stockpileRing(30, 4)[0]); // 30 m east: unchanged, not drawn
    expect(Math.abs(outRed - outBlue)).toBeLessThan(10);
    await screenshot(page, 'map-change-desktop');
    await section.getByRole('button', { name: 'Remove change' }).click();
    expect(await result.count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 90_000);

  it('shows the control point and the checkpoint with their errors, a click away', async () => {
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
    const points = JSON.parse((await download(t.admin, `${base}/download/ground_control_points.geojson`)).bytes.toString('utf8'));
    await page.goto(mapUrl);
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const toggle = page.getByRole('checkbox', { name: 'Ground control points' });
    await expect.poll(() => toggle.isEnabled()).toBe(true);
    expect(await toggle.isChecked()).toBe(true);
    const control = points.features.find((f: { properties: { id: string } }) => f.properties.id === 'GCP-A');
    await page.locator('#map canvas').click({ position: await pixelOf(page, control.geometry.coordinates) });
    const popup = page.locator('.control-popup');
    await popup.waitFor();
    // Its error: 3 cm east, 4 cm south, 2 cm up; the longest arrow (the checkpoint's 10 cm) drawn 100 times longer.
    expect(await popup.locator('p').allTextContents()).toEqual([
      'GCP-A: control point',
      'Error 5.0 cm across (3.0 cm east, -4.0 cm north), 2.0 cm up',
      'Marked in 2 photographs',
      'Arrows drawn 100 times their length',
    ]);
    await screenshot(page, 'map-control-points-desktop');
    await toggle.uncheck();
    await page.locator('#map[data-idle="true"]').waitFor({ timeout: 20_000 });
    const visibility = (layer: string) =>
      page.evaluate((id) => (window as unknown as { __aeromapMap: { getLayoutProperty(l: string, p: string): string } }).__aeromapMap.getLayoutProperty(id, 'visibility'), layer);
    expect([await visibility(`task-${taskId}-control`), await visibility(`task-${taskId}-control-arrows`)]).toEqual(['none', 'none']);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
