// Tile benchmark: the time to build the pyramids of a finished Brighton Beach task (orthophoto, DSM), then random
// tiles of its orthophoto over loopback with 16 connections, from `aeromap serve` in a child process.
//
//   npx tsx bench/tiles.ts [--images 18] [--requests 5000] [--concurrency 16]
//
// The task is processed once by the real engine on the embedded node (about a minute), with dsm.
import { execFileSync } from 'node:child_process';
import { openAsBlob } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HttpClient, LATENCY_HEADER, latencyRow, measureLatency, startService } from './lib/service.ts';

const { values: args } = parseArgs({
  options: {
    images: { type: 'string', default: '18' },
    requests: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '16' },
  },
});
const REPO = fileURLToPath(new URL('..', import.meta.url));
const BRIGHTON = path.join(REPO, '..', 'shared', 'datasets', 'brighton_beach', 'images');
const ENGINE = path.join(REPO, 'engine', '.venv', 'bin', 'aeromap-engine');
const http = new HttpClient(Number(args.concurrency));

type Task = { id: number; status: number | null; last_error: string | null };
type TileJson = { minzoom: number; maxzoom: number; bounds: number[] };

const tileOf = (lon: number, lat: number, z: number): [number, number] => {
  const rad = (lat * Math.PI) / 180;
  return [Math.floor(((lon + 180) / 360) * 2 ** z), Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * 2 ** z)];
};

/** Tile URLs chosen at random among the layer's tiles at its two deepest zooms (where a map spends its time). */
function randomTiles(base: string, layer: TileJson, count: number): string[] {
  const [west, south, east, north] = layer.bounds;
  return Array.from({ length: count }, () => {
    const z = layer.maxzoom - Math.floor(Math.random() * 2);
    const [x0, y0] = tileOf(west, north, z);
    const [x1, y1] = tileOf(east, south, z);
    const x = x0 + Math.floor(Math.random() * (x1 - x0 + 1));
    const y = y0 + Math.floor(Math.random() * (y1 - y0 + 1));
    return `${base}/orthophoto/tiles/${z}/${x}/${y}.png`;
  });
}

const work = await mkdtemp(path.join(tmpdir(), 'aeromap-bench-tiles-'));
const service = await startService({ DATA_DIR: work, AEROMAP_ADMIN_USERNAME: 'bench', AEROMAP_ADMIN_PASSWORD: 'bench', PASSWORD_ITERATIONS: '1000' });
try {
  const token = await http.login(service.url, 'bench', 'bench');
  const projectId = (await http.json<{ id: number }>(`${service.url}/api/projects/`, 'POST', token, { name: 'tiles' })).id;
  const form = new FormData();
  form.append('options', JSON.stringify([{ name: 'dsm', value: true }]));
  const names = (await readdir(BRIGHTON)).filter((name) => name.endsWith('.JPG')).sort().slice(0, Number(args.images));
  for (const name of names) form.append('images', await openAsBlob(path.join(BRIGHTON, name)), name);
  // The embedded node comes online within a refresh.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const created = await fetch(`${service.url}/api/projects/${projectId}/tasks/`, { method: 'POST', headers: { authorization: `JWT ${token}` }, body: form });
  const task = (await created.json()) as Task;
  const base = `${service.url}/api/projects/${projectId}/tasks/${task.id}`;
  for (let seen = task; seen.status !== 40; await new Promise((resolve) => setTimeout(resolve, 1000))) {
    seen = await http.json<Task>(`${base}/`, 'GET', token);
    if (seen.status === 30) throw new Error(`processing failed: ${seen.last_error}`);
  }
  const assets = path.join(work, 'media', 'project', String(projectId), 'task', String(task.id), 'assets');
  for (const [layer, raster, elevation] of [['orthophoto', 'odm_orthophoto/odm_orthophoto.tif', false], ['dsm', 'odm_dem/dsm.tif', true]] as const) {
    const t0 = performance.now();
    execFileSync(ENGINE, ['tiles', path.join(assets, raster), path.join(work, `${layer}.mbtiles`), ...(elevation ? ['--elevation'] : [])]);
    console.log(`pyramid of the ${layer.padEnd(10)} ${((performance.now() - t0) / 1000).toFixed(1)} s (target: both under 20 s)`);
  }
  const layer = await http.json<TileJson>(`${base}/orthophoto/tiles.json`, 'GET', token);
  const urls = randomTiles(base, layer, Number(args.requests));
  console.log(`${args.requests} random orthophoto tiles at zooms ${layer.maxzoom - 1}-${layer.maxzoom}, ${args.concurrency} connections (target: 2,000 tiles/s, p99 under 20 ms)`);
  console.log(LATENCY_HEADER);
  const load = { requests: urls.length, concurrency: Number(args.concurrency), timeLimitMs: 60_000 };
  console.log(latencyRow('GET .../orthophoto/tiles/z/x/y', await measureLatency(http, (i) => urls[i % urls.length], token, load)));
} finally {
  http.close();
  await service.stop();
  await rm(work, { recursive: true, force: true });
}
