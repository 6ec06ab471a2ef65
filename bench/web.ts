// Web application benchmark: what a browser downloads before the first screen (the initial JavaScript and CSS,
// raw and compressed), what each lazily loaded page adds (map, 3D, administration), and the first load in
// Chromium over loopback: from navigation to the dashboard drawn and usable, signed in, median of several loads.
//
//   npx tsx bench/web.ts [--loads 7]
//
// Targets (issue: web application): initial JavaScript at most 300 kB compressed, first screen interactive in
// under 1 s on loopback. Needs `make build` (dist/web) and Chromium (`make install`).
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { WEB_DIR, webAppBuilt } from '../src/service/web.ts';
import { launchBrowser } from '../test/web/browser.ts';
import { isolatedDatabase } from '../test/service/helpers.ts';
import { HttpClient, startService } from './lib/service.ts';

const { values: args } = parseArgs({ options: { loads: { type: 'string', default: '7' } } });

interface Sizes {
  raw: number;
  gzip: number;
  brotli: number;
}

async function sizesOf(files: string[]): Promise<Sizes> {
  const total = { raw: 0, gzip: 0, brotli: 0 };
  for (const file of files) {
    const bytes = await readFile(path.join(WEB_DIR, file));
    total.raw += bytes.length;
    total.gzip += gzipSync(bytes, { level: 9 }).length;
    total.brotli += brotliCompressSync(bytes).length;
  }
  return total;
}

/** The files index.html loads before anything runs: its module script, the modules it preloads, its CSS. */
async function initialFiles(): Promise<string[]> {
  const html = await readFile(path.join(WEB_DIR, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
  return [...new Set(refs)];
}

/** Each lazily loaded chunk, by the page module it starts with (map-page, model-page, admin). */
async function lazyChunks(initial: string[]): Promise<Map<string, string[]>> {
  const all = (await readdir(path.join(WEB_DIR, 'assets'))).map((f) => `assets/${f}`).filter((f) => /\.(js|mjs|css|wasm)$/.test(f));
  const groups = new Map<string, string[]>();
  for (const file of all.filter((f) => !initial.includes(f))) {
    const name = path.basename(file).replace(/-[\w-]{8}\.(m?js|css|wasm)$/, '');
    groups.set(name, [...(groups.get(name) ?? []), file]);
  }
  return groups;
}

const kB = (n: number) => `${(n / 1000).toFixed(1)} kB`;

async function firstLoads(loads: number): Promise<number[]> {
  const database = await isolatedDatabase('sqlite');
  const service = await startService({ DATA_DIR: database.dataDir, EMBEDDED_NODE: 'false', AEROMAP_ADMIN_USERNAME: 'bench', AEROMAP_ADMIN_PASSWORD: 'bench' });
  const client = new HttpClient(1);
  const browser = await launchBrowser();
  try {
    const token = await client.login(service.url, 'bench', 'bench');
    for (let i = 0; i < 5; i++) await client.json(`${service.url}/api/projects/`, 'POST', token, { name: `Survey ${i}`, description: 'bench' });
    const times: number[] = [];
    for (let i = 0; i < loads + 1; i++) {
      // A new context each time: an empty cache, as on a first visit.
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addInitScript((value) => localStorage.setItem('aeromap.token', value), token);
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${service.url}/dashboard/`);
      await page.getByRole('heading', { name: 'Survey 4' }).waitFor();
      await page.getByRole('button', { name: 'New project' }).click({ trial: true });
      const elapsed = performance.now() - started;
      if (i > 0) times.push(elapsed); // the first load warms the browser process, not the application
      await context.close();
    }
    return times;
  } finally {
    await browser.close();
    await service.stop();
  }
}

async function main() {
  if (!webAppBuilt()) throw new Error(`No build in ${WEB_DIR}: run make build`);
  const initial = await initialFiles();
  const first = await sizesOf(initial);
  console.log('web application bundle (dist/web), compressed sizes at gzip -9 and brotli');
  console.log(`${'part'.padEnd(34)}${'raw'.padStart(11)}${'gzip'.padStart(11)}${'brotli'.padStart(11)}`);
  const row = (name: string, s: Sizes) => console.log(`${name.padEnd(34)}${kB(s.raw).padStart(11)}${kB(s.gzip).padStart(11)}${kB(s.brotli).padStart(11)}`);
  row('initial (index.html loads)', first);
  for (const [name, files] of await lazyChunks(initial)) row(`  lazy: ${name}`, await sizesOf(files));
  console.log(`target: initial JavaScript and CSS <= 300 kB gzip: ${first.gzip <= 300_000 ? 'met' : 'NOT met'}`);

  const times = (await firstLoads(Number(args.loads))).sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`first load to an interactive dashboard, Chromium, loopback, empty cache: median ${median.toFixed(0)} ms, best ${times[0].toFixed(0)} ms, worst ${times[times.length - 1].toFixed(0)} ms (${times.length} loads)`);
  console.log(`target: under 1000 ms: ${median < 1000 ? 'met' : 'NOT met'}`);
}

await main();
