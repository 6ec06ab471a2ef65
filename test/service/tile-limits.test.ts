// Tiles in users' styles under load: a pool of tile workers draws side by side (told by the times each worker
// writes into its tiles) and answers 503 with Retry-After once its queue is full; the tiles kept on disk stay
// within their bound however many rescale values are asked for. The engine is a stand-in here, a script that
// takes DRAW_MS per tile, one at a time per process, as the engine's worker does.
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/service/errors.ts';
import { taskFolder } from '../../src/service/layout.ts';
import { tileStyle } from '../../src/service/tiles/query.ts';
import { type RenderRequest, TileWorkerPool } from '../../src/service/tiles/worker.ts';
import { TileService } from '../../src/service/tiles/service.ts';

const DRAW_MS = 300;
const TILE_BYTES = 10_000;

/** Answers one request at a time; each tile holds the worker's pid and when it started and ended drawing it. */
const FAKE_WORKER = `#!${process.execPath}
const { writeFileSync, mkdirSync } = require('node:fs');
const path = require('node:path');
const lines = [];
let busy = false;
function next() {
  if (busy || lines.length === 0) return;
  busy = true;
  const request = JSON.parse(lines.shift());
  const start = Date.now();
  setTimeout(() => {
    const stamp = JSON.stringify({ pid: process.pid, start, end: Date.now() });
    mkdirSync(path.dirname(request.out), { recursive: true });
    writeFileSync(request.out, stamp.padEnd(${TILE_BYTES}));
    process.stdout.write(JSON.stringify({ id: request.id, written: true }) + '\\n');
    busy = false;
    next();
  }, ${DRAW_MS});
}
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => { lines.push(line); next(); });
`;

type Stamp = { pid: number; start: number; end: number };
const stampOf = async (file: string): Promise<Stamp> => JSON.parse((await readFile(file, 'utf8')).trim());

describe('tile workers and the tile cache', () => {
  let work: string;
  let engine: string;
  const request = (out: string): RenderRequest => ({
    raster: 'dsm.tif',
    elevation: true,
    z: 1,
    x: 0,
    y: 0,
    size: 256,
    rescale: [0, 1],
    color_map: null,
    hillshade: null,
    formula: null,
    bands: null,
    out,
  });

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-tile-limits-'));
    engine = path.join(work, 'engine');
    await writeFile(engine, FAKE_WORKER);
    await chmod(engine, 0o755);
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('draws two slow tiles side by side, in two workers', async () => {
    const pool = new TileWorkerPool(engine, { workers: 2, queue: 0 });
    try {
      const outs = ['a.png', 'b.png'].map((name) => path.join(work, name));
      expect(await Promise.all(outs.map((out) => pool.render(request(out))))).toEqual([true, true]);
      const [a, b] = await Promise.all(outs.map(stampOf));
      expect(a.pid).not.toBe(b.pid);
      expect(a.start < b.end && b.start < a.end).toBe(true);
    } finally {
      pool.close();
    }
  });

  it('answers 503 with Retry-After once every worker is busy and the queue is full', async () => {
    const pool = new TileWorkerPool(engine, { workers: 1, queue: 1 });
    try {
      const drawn = [pool.render(request(path.join(work, 'c.png'))), pool.render(request(path.join(work, 'd.png')))];
      const refused = pool.render(request(path.join(work, 'e.png')));
      await expect(refused).rejects.toBeInstanceOf(HttpError);
      await expect(refused).rejects.toMatchObject({ statusCode: 503, headers: { 'retry-after': '2' } });
      expect(await Promise.all(drawn)).toEqual([true, true]);
      // One worker: the queued tile was drawn after the first.
      const [c, d] = await Promise.all(['c.png', 'd.png'].map((name) => stampOf(path.join(work, name))));
      expect(d.start).toBeGreaterThanOrEqual(c.end);
    } finally {
      pool.close();
    }
  });

  it('keeps the tiles of many rescale values within the cache bound, dropping the least recently used', async () => {
    const dataDir = path.join(work, 'data');
    const folder = taskFolder(dataDir, 1, 1);
    const pyramidFile = path.join(folder.assets, 'odm_dem', 'dsm.mbtiles');
    await mkdir(path.dirname(pyramidFile), { recursive: true });
    const db = new SqliteDatabase(pyramidFile);
    db.exec('CREATE TABLE metadata (name TEXT, value TEXT); CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)');
    const meta = db.prepare('INSERT INTO metadata VALUES (?, ?)');
    for (const [name, value] of [['bounds', '-180,-85,180,85'], ['minzoom', '0'], ['maxzoom', '2']]) meta.run(name, value);
    db.close();
    const cacheBytes = 5 * TILE_BYTES;
    const tiles = new TileService(engine, { dataDir, cacheBytes, workers: 2, queue: 64 });
    try {
      const pyramid = (await tiles.pyramids.get(folder.assets, 'dsm'))!;
      const draw = (rescale: string) =>
        tiles.tile(folder, pyramid, { layer: 'dsm', z: 1, x: 0, y: 0, size: 256, style: tileStyle('dsm', { rescale }) });
      await draw('0,1');
      for (let max = 2; max <= 20; max++) {
        await draw(`0,${max}`);
        await draw('0,1'); // used again and again: kept
      }
      const files = (await readdir(folder.tileCache, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
      const sizes = await Promise.all(files.map((entry) => stat(path.join(entry.parentPath, entry.name)).then((info) => info.size)));
      expect(sizes.reduce((sum, size) => sum + size, 0)).toBeLessThanOrEqual(cacheBytes);
      expect(files.length).toBe(5);
      expect(files.map((entry) => path.basename(entry.parentPath))).toContain(tileStyle('dsm', { rescale: '0,1' })!.key);
    } finally {
      tiles.close();
    }
  });
});
