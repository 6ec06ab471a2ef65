// The ground-control editor in Chromium, on synthetic surveys rendered with targets painted on the ground at known
// coordinates (the engine's synthetic module writes their exact pixels beside the photographs): the surveyed points
// imported from a CSV file, each found in the photographs, clicked in zoomed views, made control points or
// checkpoints, and saved as gcp_list.txt, whose marks must match the truth within a pixel. Before processing the
// spots come from the GPS; the long test processes the survey, marks on the model's predictions, restarts from
// the structure-from-motion stage on the embedded node, and reads the checkpoints' errors on the task page.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { type TestService, startService } from '../service/helpers.ts';
import { LONG, TaskStatus, finished, imageForm, postForm, python, waitForTask } from '../service/taskhelpers.ts';
import { accessibilityFailures, launchBrowser, openPage, screenshot } from './browser.ts';

const SURVEYS = {
  // 48 m with three targets, 240 x 180 px photographs: quick to render, enough to mark.
  small: `SurveySpec(scene=SceneSpec(size_m=48.0, buildings=2, trees=6, control_points=3), lens=LensSpec(width=240, height=180),
    flight=FlightSpec(height_m=20.0, forward_overlap=0.6, side_overlap=0.5, yaw_jitter_deg=3.0, pitch_jitter_deg=2.0, roll_jitter_deg=1.0), seed=3)`,
  // The engine's synthetic survey: 85 m, eight targets, 18 photographs of 640 x 480 px at 8 cm.
  standard: `SurveySpec(scene=SceneSpec(size_m=85.0), lens=LensSpec(width=640, height=480),
    flight=FlightSpec(height_m=50.0, forward_overlap=0.75, side_overlap=0.7, yaw_jitter_deg=2.0, pitch_jitter_deg=1.0, roll_jitter_deg=1.0, position_jitter_m=0.3),
    truth_ortho_level=1, seed=1)`,
};

interface Truth {
  crs: string;
  gsd: number;
  /** Each point's surveyed coordinates and its exact pixel in every photograph that sees it (ODM's convention). */
  points: { name: string; xyz: number[]; pixels: Record<string, [number, number]> }[];
  images: string[];
}

function render(dir: string, survey: keyof typeof SURVEYS): Truth {
  const out = python(
    `import json, sys
from pathlib import Path
from aeromap_engine.synthetic import FlightSpec, LensSpec, SceneSpec, SurveySpec, generate
truth = generate(Path(sys.argv[1]), ${SURVEYS[survey]}, workers=2)
print(json.dumps({"crs": truth.crs, "gsd": truth.gsd_m, "images": sorted(str(p) for p in truth.images_dir.iterdir()),
    "points": [{"name": p.name, "xyz": [float(v) for v in p.position], "pixels": {i: [x, y] for i, x, y in p.observations}}
               for p in truth.control_points]}))`,
    dir,
  );
  return JSON.parse(out) as Truth;
}

/** A surveyor's export of the points: a header, then name, easting, northing, height. */
const pointsCsv = (truth: Truth) => ['Name,Easting,Northing,Elevation', ...truth.points.map((p) => [p.name, ...p.xyz.map((v) => v.toFixed(3))].join(','))].join('\n');

/** Marks a point in up to `count` of the photographs the editor offers, clicking its true pixel in the zoomed view. */
async function markPoint(page: Page, point: Truth['points'][number], count: number): Promise<string[]> {
  await page.getByRole('button', { name: point.name, exact: true }).click();
  const strip = page.getByRole('region', { name: `Photographs of ${point.name}` });
  await strip.locator('.gcp-photos li').first().waitFor();
  const offered = await strip.locator('.gcp-photo-name').allTextContents();
  const chosen = offered.map((text) => text.replace(' ✓', '')).filter((image) => image in point.pixels).slice(0, count);
  for (const image of chosen) {
    await strip.getByRole('button', { name: image }).click();
    const view = strip.getByRole('img', { name: `${image} around ${point.name}: click the target's centre` });
    const [px, py] = point.pixels[image];
    // As a person would: zoomed out until the target is in the view.
    const shows = async () => {
      const [left, top, width, height] = (await view.getAttribute('data-window'))!.split(',').map(Number);
      return px + 0.5 > left && px + 0.5 < left + width && py + 0.5 > top && py + 0.5 < top + height ? [left, top, width, height] : null;
    };
    while (!(await shows())) await strip.getByRole('button', { name: 'Zoom out' }).click();
    const [left, top, width, height] = (await shows())!;
    await view.evaluate((img: HTMLImageElement) => img.complete || new Promise((resolve) => (img.onload = resolve)));
    await view.scrollIntoViewIfNeeded();
    const box = (await view.boundingBox())!;
    await page.mouse.click(box.x + ((px + 0.5 - left) / width) * box.width, box.y + ((py + 0.5 - top) / height) * box.height);
    await strip.getByText(new RegExp(`^${image}: marked at`)).waitFor();
  }
  return chosen;
}

/** Imports the points and marks them all, the last `checks` as checkpoints; answers how many marks each has. */
async function markSurvey(page: Page, truth: Truth, marksEach: number, checks: number): Promise<Record<string, number>> {
  await page.locator('input[type=file]').setInputFiles({ name: 'points.csv', mimeType: 'text/csv', buffer: Buffer.from(pointsCsv(truth)) });
  await page.getByLabel('Coordinate system').fill(truth.crs);
  await page.getByRole('button', { name: 'Import' }).click();
  const rows = page.getByRole('region', { name: 'Points' }).locator('tbody tr');
  await expect.poll(() => rows.count()).toBe(truth.points.length);
  const marked: Record<string, number> = {};
  for (const [index, point] of truth.points.entries()) {
    if (index >= truth.points.length - checks) await page.getByLabel(`Use of ${point.name}`).selectOption('check');
    marked[point.name] = (await markPoint(page, point, marksEach)).length;
  }
  return marked;
}

/** The saved gcp_list.txt's marks, each against the truth; answers the largest miss in pixels and the checkpoints. */
function compareList(text: string, truth: Truth) {
  const [header, ...lines] = text.trim().split('\n');
  let worst = 0;
  const checks = new Set<string>();
  for (const line of lines) {
    const [x, y, z, px, py, image, name, check] = line.split(/\s+/);
    const point = truth.points.find((p) => p.name === name)!;
    expect([x, y, z].map(Number)).toEqual(point.xyz.map((v) => Number(v.toFixed(3))));
    const [tx, ty] = point.pixels[image];
    worst = Math.max(worst, Math.hypot(Number(px) - tx, Number(py) - ty));
    if (check === 'check') checks.add(name);
  }
  return { header, worst, checks, marks: lines.length };
}

describe('the ground-control editor in Chromium', () => {
  let t: TestService;
  let work: string;
  let browser: Browser;
  let projectId: number;

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    t = await startService('sqlite', { nodeRefreshIntervalMs: 15_000 });
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-web-gcp-'));
    projectId = (await t.admin.post('/api/projects/', { name: 'Survey' })).body.id as number;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it.runIf(LONG)('marks the targets on the GPS predictions of photographs not yet processed, and saves them within a pixel', async () => {
    const truth = render(path.join(work, 'small'), 'small');
    // Uploaded and not committed: the photographs are there, no model yet.
    const created = (await t.admin.post(`/api/projects/${projectId}/tasks/`, { partial: true, name: 'Before processing' })).body;
    const upload = await postForm(t.admin, `/api/projects/${projectId}/tasks/${created.id}/upload/`, await imageForm(truth.images));
    expect(upload.status).toBe(200);

    const { page, errors } = await openPage(browser, 'phone', t.admin.token);
    await page.goto(`${t.url}/gcp/project/${projectId}/task/${created.id}/`);
    const marked = await markSurvey(page, truth, 2, 1);
    expect(Object.values(marked).every((count) => count === 2)).toBe(true);
    await page.getByText('Spots predicted from the photographs’ GPS: expect them metres off.').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved 6 marks of 3 points, 1 of them a checkpoint.' }).waitFor();
    // A phone's width: nothing runs off the page sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(page, 'gcp-editor-phone');
    expect(await accessibilityFailures(page)).toEqual([]);
    expect(errors).toEqual([]);

    const saved = await t.admin.get(`/api/projects/${projectId}/tasks/${created.id}/gcp/`);
    expect(saved.status).toBe(200);
    const compared = compareList(saved.body.gcp_list, truth);
    expect(compared.header).toBe(truth.crs);
    expect(compared.marks).toBe(6);
    expect(compared.worst).toBeLessThan(1);
    expect([...compared.checks]).toEqual([truth.points[2].name]);
  }, 240_000);

  it.runIf(LONG)('marks 5 control points and 3 checkpoints on the model, restarts, and shows the checkpoints within 1.5 GSD', async () => {
    const embedded = await startEmbeddedNode({ port: 0, dataDir: path.join(work, 'node') }, t.service.db, t.service.refresher, () => {});
    try {
      await t.service.refresher.refreshAll();
      const truth = render(path.join(work, 'standard'), 'standard');
      const options = [
        { name: 'dsm', value: true },
        { name: 'skip-3dmodel', value: true },
        { name: 'pc-copc', value: false },
        { name: 'feature-quality', value: 'ultra' },
        { name: 'min-num-features', value: 3000 },
        { name: 'pc-quality', value: 'low' },
      ];
      const created = await postForm(t.admin, `/api/projects/${projectId}/tasks/`, await imageForm(truth.images, { name: 'Targets', options: JSON.stringify(options) }));
      expect(created.status).toBe(201);
      const url = `/api/projects/${projectId}/tasks/${created.body.id}/`;
      const first = await waitForTask(t.admin, url, finished, 600_000);
      expect(first.status, first.last_error).toBe(TaskStatus.COMPLETED);
      expect(first.statistics.reconstruction.georef_source).not.toBe('gcp');

      const { page, errors } = await openPage(browser, 'desktop', t.admin.token);
      await page.goto(`${t.url}/gcp/project/${projectId}/task/${created.body.id}/`);
      const marked = await markSurvey(page, truth, 3, 3);
      expect(Object.values(marked).every((count) => count >= 2)).toBe(true);
      await page.getByText('Spots predicted from the task’s model.').waitFor();
      await screenshot(page, 'gcp-editor-desktop');
      await page.getByRole('button', { name: 'Save and restart' }).click();
      await page.waitForURL(`${t.url}/project/${projectId}/task/${created.body.id}/`);

      const saved = compareList((await t.admin.get(`${url}gcp/`)).body.gcp_list, truth);
      expect(saved.worst).toBeLessThan(1);
      expect(saved.checks.size).toBe(3);
      const done = await waitForTask(t.admin, url, finished, 600_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
      // Restarted from the structure-from-motion stage, on the node that kept the photographs' features.
      const output = (await t.admin.get(`${url}output/`)).body as string;
      expect(output).toContain('Running stage opensfm');
      expect(output).not.toContain('Running stage dataset');
      const reconstruction = done.statistics.reconstruction;
      expect(reconstruction.georef_source).toBe('gcp');
      const checks = reconstruction.checkpoint_residual_m;
      expect(checks.points).toHaveLength(3);
      expect(checks.rmse_horizontal).toBeLessThan(1.5 * truth.gsd);
      expect(checks.rmse_vertical).toBeLessThan(2 * truth.gsd);

      await page.reload();
      const quality = page.getByTestId('quality');
      await quality.getByText('Checkpoints (3)').waitFor();
      expect(await quality.textContent()).toContain(`RMS error ${checks.rmse_horizontal.toFixed(3)} m horizontal`);
      await screenshot(page, 'gcp-editor-restarted');
      expect(errors).toEqual([]);
    } finally {
      await embedded.node.close();
    }
  }, 1_500_000);
});
