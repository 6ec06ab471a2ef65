// Tile benchmark: the time to build the pyramids of a finished Brighton Beach task (orthophoto, DSM), then random
// tiles of its orthophoto over loopback with 16 connections, from `aeromap serve` in a child process: from the
// pyramid, as 512 px mosaics, and DSM tiles in a style of the user's (drawn on demand by the engine, then cached).
//
//   npx tsx bench/tiles.ts [--images 18] [--requests 20000] [--concurrency 16]
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
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '16' },
  },
});
const REPO = fileURLToPath(new URL('..', import.meta.url));
const BRIGHTON = path.join(REPO, '..', 'shared', 'datasets', 'brighton_beach', 'images');
const ENGINE = path.join(REPO, 'engine', '.venv', 'bin', 'aeromap-engine');
const http = new HttpClient(Number(args.concurrency));

type Task = { id: number; status: number | null; last_error: string | null };
type TileJson = { minzoom: number; maxzoom: number; bounds: number[]; value_range?: number[] };
// tiles.json serves three zooms beyond the pyramid's deepest.
const NATIVE_BELOW_MAX = 3;

const tileOf = (lon: number, lat: number, z: number): [number, number] => {
  const rad = (lat * Math.PI) / 180;
  return [Math.floor(((lon + 180) / 360) * 2 ** z), Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * 2 ** z)];
};

/** Tile paths chosen at random among the layer's tiles at the pyramid's two deepest zooms (where a map spends
 * its time), or at one zoom. */
function randomTiles(layer: TileJson, count: number, zoom?: number): string[] {
  const [west, south, east, north] = layer.bounds;
  return Array.from({ length: count }, () => {
    const z = zoom ?? layer.maxzoom - NATIVE_BELOW_MAX - Math.floor(Math.random() * 2);
    const [x0, y0] = tileOf(west, north, z);
    const [x1, y1] = tileOf(east, south, z);
    const x = x0 + Math.floor(Math.random() * (x1 - x0 + 1));
    const y = y0 + Math.floor(Math.random() * (y1 - y0 + 1));
    return `${z}/${x}/${y}.png`;
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
  const native = layer.maxzoom - NATIVE_BELOW_MAX;
  const load = { requests: Number(args.requests), concurrency: Number(args.concurrency), timeLimitMs: 60_000 };
  const paths = randomTiles(layer, load.requests);
  console.log(`${args.requests} random orthophoto tiles at zooms ${native - 1}-${native}, ${args.concurrency} connections (target: 2,000 tiles/s, p99 under 20 ms)`);
  console.log(LATENCY_HEADER);
  console.log(latencyRow('orthophoto z/x/y (pyramid)', await measureLatency(http, (i) => `${base}/orthophoto/tiles/${paths[i]}`, token, load)));
  console.log(latencyRow('orthophoto z/x/y?size=512', await measureLatency(http, (i) => `${base}/orthophoto/tiles/${paths[i]}?size=512`, token, load)));

  // Each tile drawn once in a new style, one after the other: what a user who changes the colour ramp waits for.
  const dsm = await http.json<TileJson>(`${base}/dsm/tiles.json`, 'GET', token);
  const [low, high] = dsm.value_range ?? [0, 1];
  const style = `rescale=${low},${high + 1}&color_map=jet&hillshade=6`;
  const drawn: number[] = [];
  const [first, ...others] = new Set(randomTiles(dsm, 60, native - 1));
  const t0 = performance.now();
  await http.request(`${base}/dsm/tiles/${first}?${style}&size=512`, 'GET', token);
  console.log(`the first DSM tile in a new style, starting the engine's tile worker: ${(performance.now() - t0).toFixed(0)} ms`);
  for (const tile of others) {
    const t0 = performance.now();
    const { status } = await http.request(`${base}/dsm/tiles/${tile}?${style}&size=512`, 'GET', token);
    if (status !== 200) throw new Error(`a styled tile answered ${status}`);
    drawn.push(performance.now() - t0);
  }
  drawn.sort((a, b) => a - b);
  const at = (p: number) => drawn[Math.min(drawn.length - 1, Math.floor(p * drawn.length))].toFixed(0);
  console.log(`${drawn.length} DSM tiles of 512 px in a new style (jet, hillshade 6), each drawn on demand: median ${at(0.5)} ms, p90 ${at(0.9)} ms, slowest ${at(1)} ms (target: under 150 ms)`);
} finally {
  await http.close();
  await service.stop();
  await rm(work, { recursive: true, force: true });
}
