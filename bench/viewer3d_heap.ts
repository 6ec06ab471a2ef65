// The 3D view's memory while it streams a task's textured model from its 3D Tiles: a running Aeromap's task
// opened in Chromium, the model shown, then the view zoomed in step by step towards several places (the tiles
// of finer levels streamed in, those out of sight let go). After each step it prints the page's JavaScript heap
// (read from the browser's debugging protocol), the model tiles fetched so far and their bytes.
//
//   npx tsx bench/viewer3d_heap.ts --project 1 --task 1 [--url http://127.0.0.1:8000] [--username admin]
//                                  [--password ...] [--steps 6] [--screenshots DIR]
//
// With --screenshots, the view as shown and at each place zoomed in go to DIR as PNG, to be looked at.
//
// Target (issue: 3D): a 400-image survey's view streams with the JS heap under 1 GB. Needs `make build` and
// Chromium (`make install`); the task must have been processed with 3d-tiles.
import { parseArgs } from 'node:util';
import { launchBrowser, openPage } from '../test/web/browser.ts';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8000' },
    username: { type: 'string', default: 'admin' },
    password: { type: 'string', default: process.env.AEROMAP_ADMIN_PASSWORD ?? '' },
    project: { type: 'string' },
    task: { type: 'string' },
    steps: { type: 'string', default: '6' },
    screenshots: { type: 'string' },
  },
});
if (!args.project || !args.task) throw new Error('--project and --task name the task to open');

const signIn = await fetch(`${args.url}/api/token-auth/`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ username: args.username, password: args.password }),
});
if (!signIn.ok) throw new Error(`signing in answered ${signIn.status}`);
const { token } = (await signIn.json()) as { token: string };

const browser = await launchBrowser();
try {
  const { page, errors } = await openPage(browser, 'desktop', token);
  const session = await page.context().newCDPSession(page);
  const tiles = { count: 0, bytes: 0 };
  page.on('response', async (response) => {
    if (!/\/3d_tiles\/model\/tiles\/[^/]+\.glb$/.test(response.url())) return;
    tiles.count++;
    tiles.bytes += Number(response.headers()['content-length'] ?? 0) || (await response.body()).length;
  });
  const heap = async (): Promise<number> => {
    await session.send('HeapProfiler.collectGarbage');
    return ((await session.send('Runtime.getHeapUsage')) as { usedSize: number }).usedSize;
  };
  const shoot = async (name: string): Promise<void> => {
    if (args.screenshots) await page.locator('#viewer3d').screenshot({ path: `${args.screenshots}/${name}.png` });
  };
  const report = async (what: string): Promise<void> => {
    console.log(`${what.padEnd(28)} heap ${(await heap() / 2 ** 20).toFixed(0).padStart(5)} MB; model tiles fetched ${String(tiles.count).padStart(4)}, ${(tiles.bytes / 2 ** 20).toFixed(1)} MB`);
  };

  await page.goto(`${args.url}/3d/project/${args.project}/task/${args.task}/`);
  await page.locator('#viewer3d canvas').waitFor();
  await report('opened');
  await page.getByLabel('Textured model').check();
  await page.locator('#viewer3d[data-model-loaded="true"]').waitFor({ timeout: 300_000 });
  if ((await page.locator('#viewer3d').getAttribute('data-model-streamed')) !== 'true') throw new Error('the task has no 3D Tiles of its model: process it with 3d-tiles');
  await page.waitForTimeout(3000);
  await report('model shown');
  await shoot('shown');
  const box = (await page.locator('#viewer3d canvas').boundingBox())!;
  const places = [[0.5, 0.5], [0.3, 0.35], [0.7, 0.65], [0.35, 0.7]];
  for (const [n, [fx, fy]] of places.entries()) {
    await page.mouse.move(box.x + box.width * fx!, box.y + box.height * fy!);
    for (let step = 0; step < Number(args.steps); step++) {
      await page.mouse.wheel(0, -400);
      await page.waitForTimeout(1500);
    }
    await report(`zoomed in at place ${n + 1}`);
    await shoot(`zoomed-${n + 1}`);
    for (let step = 0; step < Number(args.steps); step++) {
      await page.mouse.wheel(0, 400);
      await page.waitForTimeout(500);
    }
  }
  await page.waitForTimeout(3000);
  await report('zoomed out again');
  if (errors.length) console.log(`page errors: ${errors.join('; ')}`);
} finally {
  await browser.close();
}
