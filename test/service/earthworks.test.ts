// Volumes and contours measured by the real engine on a task's elevation models, through the API: a cone stockpile
// (radius 10 m, 5 m high: 523.6 m³) on a level DSM whose DTM is the level ground, imported as an all.zip. Every base
// on the DSM gives the cone's volume within 1 %, the DTM none; contours come back in each format; what cannot be
// measured is refused with a 400 that says why, and a private task's volume is nobody else's. A second survey of
// the ground, the stockpile gone and a pit dug (400 m³), differs from the first by both.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestService, startService } from './helpers.ts';
import { LONG, STOCKPILE_CONE, download, importTask, python, stockpileRing, stockpileZip } from './taskhelpers.ts';

const CONE = STOCKPILE_CONE;

describe('earthworks', () => {
  let t: TestService;
  let work: string;
  let base: string;
  let ring: number[][];

  /** Starts a job, polls it to the end, answers the downloaded bytes. */
  const finishedJob = async (url: string, body: Record<string, unknown>): Promise<{ bytes: Buffer; filename: string; type: string | null }> => {
    const started = await t.admin.post(url, body);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const { celery_task_id: id, filename } = started.body;
    let state: any;
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      state = (await t.admin.get(`/api/workers/check/${id}`)).body;
      if (state.ready) break;
    }
    expect(state).toEqual({ ready: true });
    const file = await download(t.admin, `/api/workers/get/${id}`);
    expect(file.status).toBe(200);
    return { bytes: file.bytes, filename, type: file.headers.get('content-type') };
  };
  const volume = async (body: Record<string, unknown>) => JSON.parse((await finishedJob(`${base}/volume`, body)).bytes.toString('utf8'));
  const area = () => ({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } });

  beforeAll(async () => {
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-earthworks-'));
    const project = (await t.admin.post('/api/projects/', { name: 'Quarry' })).body.id as number;
    const done = await importTask(t.admin, project, stockpileZip(work), 'Stockpile');
    expect(done.available_assets).toEqual(expect.arrayContaining(['dsm.tif', 'dtm.tif']));
    base = `/api/projects/${project}/tasks/${done.id}`;
    ring = stockpileRing(15, 48);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('measures the stockpile against every base on the DSM, and nothing on the DTM', async () => {
    // Every base against the exact volumes is the engine's test (engine/tests/test_earthworks.py); here, through
    // the API, one base of each kind: triangulated, fitted, level.
    for (const method of ['triangulate', 'plane', 'highest']) {
      const figures = await volume({ area: area(), method });
      expect(Math.abs(figures.net - CONE) / CONE, `${method}: ${JSON.stringify(figures)}`).toBeLessThan(0.01);
      expect(figures.volume).toBe(figures.net);
      expect(figures.cut).toBeCloseTo(figures.net, 1);
      expect(figures.fill).toBeLessThan(0.01 * CONE);
      expect(Math.abs(figures.area - Math.PI * 15 ** 2) / (Math.PI * 15 ** 2)).toBeLessThan(0.01);
      expect(figures.base).toBe(method);
    }
    // A base 1 m under the ground: the cone and the slab of ground above it.
    const custom = await volume({ area: area(), method: 'custom', base: 99 });
    expect(Math.abs(custom.net - (CONE + Math.PI * 15 ** 2)) / (CONE + Math.PI * 15 ** 2)).toBeLessThan(0.01);
    const terrain = await volume({ area: area(), method: 'plane', layer: 'dtm' });
    expect(Math.abs(terrain.net)).toBeLessThan(0.01);
  }, 120_000);

  it('draws contours as a file and as a zipped Shapefile', async () => {
    // The four formats read back are the engine's test; here a file and a zipped set of files.
    for (const [format, extension] of [['GPKG', 'gpkg'], ['ESRI Shapefile', 'zip']]) {
      const { bytes, filename } = await finishedJob(`${base}/dsm/contours`, { interval: 1, simplify: 0.05, format, epsg: 4326 });
      expect(filename).toBe(`Stockpile-dsm-contours.${extension}`);
      const file = path.join(work, filename);
      await writeFile(file, bytes);
      const source = extension === 'zip' ? `/vsizip/${file}/contours.shp` : file;
      // Rings about the cone at 101 to 104 m (the 100 m ground is level, and 105 m its very tip), read by GDAL.
      const read = JSON.parse(
        python(
          `import sys, json, numpy as np, pyogrio.raw
from pyproj import Transformer
_, _, geometry, _ = pyogrio.raw.read(sys.argv[1])
to_utm = Transformer.from_crs("EPSG:4326", "EPSG:32633", always_xy=True)
radii = {}
for wkb in geometry:
    xyz = np.frombuffer(wkb[9:], "<f8").reshape(-1, 3)
    x, y = to_utm.transform(xyz[:, 0], xyz[:, 1])
    radii[str(int(xyz[0, 2]))] = float(np.median(np.hypot(np.asarray(x) - 500000, np.asarray(y) - 5700000)))
print(json.dumps(radii))`,
          source,
        ),
      );
      for (const level of [101, 102, 103, 104]) expect(read[String(level)], `${format} ${level}`).toBeCloseTo(10 * (1 - (level - 100) / 5), 0);
    }
  }, 120_000);

  // The map's change layer measures the same through the API within `make test` (test/web/earthworks.e2e.test.ts).
  it.runIf(LONG)('measures what was dug between two surveys of the ground', async () => {
    const project = Number(base.split('/')[3]);
    const after = await importTask(t.admin, project, stockpileZip(await mkdtemp(path.join(work, 'after-')), true), 'After');
    const later = `/api/projects/${project}/tasks/${after.id}`;
    const reference = { reference_project: project, reference_task: Number(base.split('/').pop()) };
    // The stockpile taken away and the pit dug: both went down.
    const figures = JSON.parse((await finishedJob(`${later}/dsm/difference`, { ...reference, format: 'json', noise: 0.01 })).bytes.toString('utf8'));
    expect(Math.abs(figures.cut - (CONE + 400)) / (CONE + 400), JSON.stringify(figures)).toBeLessThan(0.01);
    expect(figures.fill).toBeLessThan(1);
    expect(figures.net).toBeCloseTo(-figures.cut, 1);
    const raster = await finishedJob(`${later}/dsm/difference`, { ...reference, noise: 0.01 });
    expect(raster.filename).toBe(`After-dsm-difference-from-task-${reference.reference_task}.tif`);
    const file = path.join(work, raster.filename);
    await writeFile(file, raster.bytes);
    const read = JSON.parse(
      python(
        `import sys, json, rasterio, numpy as np
with rasterio.open(sys.argv[1]) as r:
    v = r.read(1)
    print(json.dumps({"cut": float(r.tags()["CUT"]), "pit": float(np.nanmedian(v[(v < -1.9) & (v > -2.1)])), "crs": r.crs.to_string()}))`,
        file,
      ),
    );
    expect(read).toEqual({ cut: figures.cut, pit: expect.closeTo(-2, 2), crs: 'EPSG:32633' });
    // The DTM went down by the pit alone.
    const terrain = JSON.parse((await finishedJob(`${later}/dtm/difference`, { ...reference, format: 'json' })).bytes.toString('utf8'));
    expect(Math.abs(terrain.cut - 400) / 400).toBeLessThan(0.01);
    // A reference the caller may not read is not found.
    const other = (await t.admin.post('/api/projects/', { name: 'Elsewhere' })).body.id as number;
    expect((await t.admin.post(`${later}/dsm/difference`, { reference_project: other, reference_task: reference.reference_task })).status).toBe(404);
  }, 120_000);

  it('refuses what it cannot measure, saying why', async () => {
    const refused = async (url: string, body: Record<string, unknown>, detail: RegExp) => {
      const reply = await t.admin.post(url, body);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(JSON.stringify(reply.body)).toMatch(detail);
    };
    await refused(`${base}/volume`, { area: { type: 'Point', coordinates: [15, 51] } }, /GeoJSON Polygon/);
    await refused(`${base}/volume`, { area: area(), method: 'custom' }, /custom base needs its height/);
    await refused(`${base}/volume`, { area: area(), method: 'median' }, /method/);
    await refused(`${base}/volume`, { area: { type: 'Polygon', coordinates: [[[15, 51], [200, 51], [15, 52], [15, 51]]] } }, /longitude, latitude/);
    await refused(`${base}/dsm/contours`, { interval: 0 }, /interval/);
    await refused(`${base}/dsm/contours`, { interval: 1, format: 'KML' }, /format/);
    // Outside the model: the job fails and says so.
    const started = await t.admin.post(`${base}/volume`, { area: { type: 'Polygon', coordinates: [[[0, 0], [0.001, 0], [0, 0.001], [0, 0]]] } });
    let state: any;
    for (const until = Date.now() + 30_000; Date.now() < until && !state?.ready; await new Promise((r) => setTimeout(r, 200))) {
      state = (await t.admin.get(`/api/workers/check/${started.body.celery_task_id}`)).body;
    }
    expect(state).toEqual({ ready: true, error: expect.stringMatching(/outside the elevation model/) });
    // A private task: nobody else's to measure.
    expect((await t.anonymous.post(`${base}/volume`, { area: area() })).status).toBe(404);
  }, 60_000);
});
