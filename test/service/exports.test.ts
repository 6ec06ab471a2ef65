// WebODM's export API on ODM's products of Brighton Beach (its point cloud, with an orthophoto and a DSM gridded
// from it) imported as an all.zip: the asset's URL where nothing needs doing, jobs made by the real engine and
// polled through /api/workers/check, their files fetched from /api/workers/get and read back with rasterio and
// laspy, the requests that cannot be met refused with a 400 that says why, and WebODM's answers for unknown jobs.
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportJobs } from '../../src/service/exports/jobs.ts';
import { engineArguments, exportPlan } from '../../src/service/exports/request.ts';
import { type TestService, startService } from './helpers.ts';
// The describes below run in `make test-long` (CI's time on a slower machine).
import { LONG, REPO, download, importTask, python } from './taskhelpers.ts';

/** Runs engine/tests/brighton_products.py into dir and zips its products as ODM's all.zip. */
function brightonZip(dir: string): string {
  python(
    `import sys, zipfile
sys.path.insert(0, sys.argv[2])
from brighton_products import write_products
d = sys.argv[1]
paths = write_products(__import__("pathlib").Path(d) / "products")
with zipfile.ZipFile(f"{d}/all.zip", "w") as z:
    for path in paths.values():
        z.write(path, path.relative_to(f"{d}/products").as_posix())`,
    dir,
    path.join(REPO, 'engine', 'tests'),
  );
  return path.join(dir, 'all.zip');
}

describe.runIf(LONG)('exports', () => {
  let t: TestService;
  let base: string;

  /** Starts an export, polls it to the end, and answers the downloaded file's path. */
  const exported = async (layer: string, body: Record<string, unknown>, name: string): Promise<{ file: string; filename: string }> => {
    const started = await t.admin.post(`${base}/${layer}/export`, body);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const { celery_task_id: id, filename } = started.body;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    let state: any;
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      state = (await t.anonymous.get(`/api/workers/check/${id}`)).body;
      if (state.ready) break;
    }
    expect(state).toEqual({ ready: true });
    const file = await download(t.anonymous, `/api/workers/get/${id}?filename=${encodeURIComponent(filename)}`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${filename}"`);
    const target = path.join(t.dataDir, name);
    await writeFile(target, file.bytes);
    return { file: target, filename };
  };

  beforeAll(async () => {
    t = await startService('sqlite');
    const project = (await t.admin.post('/api/projects/', { name: 'Brighton' })).body.id as number;
    const zip = brightonZip(t.dataDir);
    const done = await importTask(t.admin, project, zip, 'Brighton Beach', 120_000);
    base = `/api/projects/${project}/tasks/${done.id}`;
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  it('answers the download URL when the export is the asset itself', async () => {
    for (const [layer, body, url] of [
      ['orthophoto', {}, 'orthophoto.tif'],
      ['dsm', { format: 'gtiff', epsg: '32615' }, 'dsm.tif'],
      ['georeferenced_model', { epsg: 32615 }, 'georeferenced_model.laz'],
    ] as const) {
      const reply = await t.admin.post(`${base}/${layer}/export/`, body);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ url: `${base}/download/${url}`, filename: `Brighton-Beach-${url}` });
      expect((await download(t.admin, reply.body.url)).status).toBe(200);
    }
  });

  it('exports the orthophoto to EPSG:27700 and to a PROJ string', async () => {
    const proj = '+proj=tmerc +lat_0=46 +lon_0=-92 +k=1 +x_0=100000 +y_0=0 +ellps=GRS80 +units=m +no_defs';
    const british = await exported('orthophoto', { format: 'gtiff', epsg: 27700 }, 'british.tif');
    expect(british.filename).toBe('Brighton-Beach-orthophoto.tif');
    const local = await exported('orthophoto', { format: 'gtiff', proj }, 'local.tif');
    const check = `import sys, rasterio, pyproj
for path in sys.argv[1:3]:
    with rasterio.open(path) as f:
        print(f.crs.to_epsg(), pyproj.CRS(f.crs.to_wkt()).equals(pyproj.CRS(sys.argv[3]), ignore_axis_order=True), f.count, int((f.read(4) > 0).sum() > 50000))`;
    expect(python(check, british.file, local.file, proj).trim().split('\n')).toEqual(['27700 False 4 1', 'None True 4 1']);
  }, 120_000);

  it('exports the point cloud to EPSG:2056 as LAS, and the DSM as a coloured PNG', async () => {
    const cloud = await exported('georeferenced_model', { format: 'las', epsg: '2056' }, 'cloud.las');
    expect(cloud.filename).toBe('Brighton-Beach-georeferenced_model.las');
    const summary = `import sys, laspy
f = laspy.read(sys.argv[1])
print(f.header.parse_crs().to_epsg(), len(f.points) > 40000, round(float(f.x.min())) < -3_000_000)`;
    expect(python(summary, cloud.file).trim()).toBe('2056 True True');
    const dsm = await exported('dsm', { format: 'png' }, 'dsm.png');
    expect(dsm.filename).toBe('Brighton-Beach-dsm.png');
    const colours = `import sys, numpy as np
from PIL import Image
a = np.asarray(Image.open(sys.argv[1]))
seen = a[a[..., 3] > 0][:, :3]
print(a.shape[2], len(np.unique(seen, axis=0)) > 1000)`;
    expect(python(colours, dsm.file).trim()).toBe('4 True');
  }, 120_000);

  it('refuses with a 400 what cannot be exported', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['orthophoto', { format: 'laz' }, 'Unsupported format: laz'],
      ['georeferenced_model', { format: 'gtiff' }, 'Unsupported format: gtiff'],
      ['orthophoto', { epsg: 'abc' }, 'Invalid EPSG code: abc'],
      ['orthophoto', { epsg: 999999 }, 'Invalid EPSG code: 999999'],
      ['georeferenced_model', { proj: '+proj=nonsense' }, 'Invalid PROJ string'],
      ['orthophoto', { formula: 'VARI' }, 'Both formula and bands parameters are required'],
      ['orthophoto', { format: 'png', formula: 'NDVI', bands: 'RGB' }, 'NDVI needs the N band'],
      ['dsm', { formula: 'VARI', bands: 'RGB' }, 'apply to the orthophoto only'],
      ['dsm', { format: 'png', color_map: 'nope' }, 'unknown color_map nope'],
      ['dsm', { format: 'png', hillshade: '-1' }, 'Invalid hillshade value: -1'],
      ['orthophoto', { epsg: 4326, proj: '+proj=longlat' }, 'not both'],
    ];
    for (const [layer, body, message] of cases) {
      const reply = await t.admin.post(`${base}/${layer}/export`, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.detail, JSON.stringify(body)).toContain(message);
    }
    expect((await t.admin.post(`${base}/dtm/export`, {})).status).toBe(404);
  });

  it('checks the view permission, and answers for unknown jobs as WebODM does', async () => {
    // A task that is not public is nobody else's to export, signed in or not.
    expect((await t.anonymous.post(`${base}/orthophoto/export`, {})).status).toBe(404);
    const other = await t.createUser('stranger');
    expect((await other.client.post(`${base}/orthophoto/export`, {})).status).toBe(404);
    expect((await t.anonymous.get('/api/workers/check/bogus')).body).toEqual({ ready: false });
    expect((await t.anonymous.get('/api/workers/check/0b7c5a4e-2f1d-4c3b-9a8e-7d6c5b4a3f2e')).body).toEqual({ ready: false });
    expect((await t.anonymous.get('/api/workers/get/bogus')).body).toEqual({ error: 'Task not ready' });
  });

  it('reports a failed export as ready with its error', async () => {
    // The check passes (a CRS PROJ knows), the engine then finds the survey on the far side of that view's globe.
    const started = await t.admin.post(`${base}/orthophoto/export`, { format: 'gtiff', proj: '+proj=ortho +lat_0=-46 +lon_0=88 +ellps=WGS84' });
    expect(started.status).toBe(200);
    let state: any;
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      state = (await t.admin.get(`/api/workers/check/${started.body.celery_task_id}`)).body;
      if (state.ready) break;
    }
    expect(state.ready).toBe(true);
    expect(state.error).toContain('cannot be drawn in');
    const result = await t.admin.get(`/api/workers/get/${started.body.celery_task_id}`);
    expect(result.body).toEqual({ error: state.error });
  }, 60_000);
});

describe.runIf(LONG)('export jobs on disk', () => {
  it('are answered by any instance sharing DATA_DIR, fail when abandoned, and expire', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'aeromap-exports-'));
    const { log } = Fastify({ logger: false });
    const settings = { dataDir, enginePath: '/bin/cp', workers: 1, expiryMs: 3_600_000 };
    const source = path.join(dataDir, 'source.txt');
    await writeFile(source, 'made');
    const first = new ExportJobs(settings, log);
    const second = new ExportJobs(settings, log);
    try {
      const id = await first.start((output) => [source, output], 'copy.txt', 'txt');
      for (let i = 0; i < 50 && !(await second.state(id)).ready; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await second.state(id)).toEqual({ ready: true });
      const result = await second.result(id);
      expect(result && 'file' in result ? await readFile(result.file, 'utf8') : null).toBe('made');
      // A job whose instance stopped: its alive file goes stale, and it reads as failed.
      const stopped = path.join(dataDir, 'media', 'tmp', 'exports', '0b7c5a4e-2f1d-4c3b-9a8e-7d6c5b4a3f2e');
      await mkdir(stopped, { recursive: true });
      await writeFile(path.join(stopped, 'job.json'), JSON.stringify({ filename: 'x.tif', result: 'result.tif' }));
      await writeFile(path.join(stopped, 'alive'), '');
      expect(await second.state(path.basename(stopped))).toEqual({ ready: false });
      // A result the engine is still writing is not ready: only the done file, written once it exits, says so.
      await writeFile(path.join(stopped, 'result.tif'), 'half');
      expect(await second.state(path.basename(stopped))).toEqual({ ready: false });
      expect(await second.result(path.basename(stopped))).toBeNull();
      const old = new Date(Date.now() - 2 * 3_600_000);
      await utimes(path.join(stopped, 'alive'), old, old);
      expect(await second.state(path.basename(stopped))).toMatchObject({ ready: true, error: expect.stringContaining('interrupted') });
      await utimes(stopped, old, old);
      expect(await second.sweep()).toBe(1);
      expect(await second.state(path.basename(stopped))).toEqual({ ready: false });
      expect(await second.state(id)).toEqual({ ready: true });
    } finally {
      first.close();
      second.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe.runIf(LONG)('export requests', () => {
  it('take WebODM defaults and become the engine command line', () => {
    const plan = exportPlan('dsm', { format: 'jpg', rescale: '10%2C20' });
    expect(plan).toMatchObject({ colorMap: 'viridis', hillshade: 6, rescale: [10, 20], epsg: null });
    expect(engineArguments(plan, '/a/dsm.tif', '/b/result.jpg')).toEqual([
      'export', '/a/dsm.tif', '/b/result.jpg', '--kind', 'elevation', '--format', 'jpg', '--color-map=viridis', '--hillshade=6', '--rescale=10,20',
    ]);
    expect(exportPlan('georeferenced_model', { epsg: '' })).toMatchObject({ format: 'laz', epsg: null });
    expect(exportPlan('dsm', { format: 'gtiff', color_map: 'jet', hillshade: 3 })).toMatchObject({ colorMap: null, hillshade: null });
  });
});
