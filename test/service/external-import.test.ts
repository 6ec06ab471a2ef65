// Products made elsewhere imported as a task (tasks/import/external, as WebODM): a stockpile's DSM and DTM (a
// cone of 523.6 m³ on level ground, UTM 33N), an orthophoto over it and ODM's real point cloud of Brighton Beach
// go through init, upload and commit to a COMPLETED task whose map layers, COPC, extent, CRS and volumes work as a
// processed task's. Wrong uploads are refused with a 400 that says why, and nothing is created for them.
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestService, startService } from './helpers.ts';
import { BRIGHTON, STOCKPILE_CONE, TaskStatus, download, finished, postForm, python, stockpileRing, stockpileZip, waitForTask } from './taskhelpers.ts';

describe('external import', () => {
  let t: TestService;
  let work: string;
  let project: number;
  let imports: string;

  const upload = async (uuid: string, field: string, file: string, name = path.basename(file)) => {
    const form = new FormData();
    form.append('uuid', uuid);
    form.append(field, await import('node:fs').then((fs) => fs.openAsBlob(file)), name);
    return postForm(t.admin, `${imports}/upload`, form);
  };
  const init = async () => {
    const reply = await t.admin.post(`${imports}/init`);
    expect(reply.status).toBe(200);
    return reply.body.uuid as string;
  };
  const taskCount = async () => (await t.admin.get(`/api/projects/${project}/tasks/`)).body.length;

  beforeAll(async () => {
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-external-'));
    project = (await t.admin.post('/api/projects/', { name: 'Quarry' })).body.id;
    imports = `/api/projects/${project}/tasks/import/external`;
    stockpileZip(work); // leaves dsm.tif and dtm.tif beside its zip
    python(
      `import sys, numpy as np, rasterio
from rasterio.transform import from_origin
rgba = np.full((4, 160, 160), 255, np.uint8)
rgba[0] = np.arange(160, dtype=np.uint8)
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=160, height=160, count=4, dtype="uint8", photometric="RGB",
                   alpha="YES", crs="EPSG:32633", transform=from_origin(499960, 5700040, 0.5, 0.5)) as out:
    out.write(rgba)
with rasterio.open(sys.argv[2], "w", driver="GTiff", width=50, height=50, count=3, dtype="float32",
                   crs="EPSG:32633", transform=from_origin(499960, 5700040, 1, 1)) as out:
    out.write(np.ones((3, 50, 50), np.float32))`,
      path.join(work, 'orthophoto.tif'),
      path.join(work, 'three-bands.tif'),
    );
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('imports a DSM, DTM, orthophoto and point cloud as a task that maps, streams and measures', async () => {
    const uuid = await init();
    const sent = [
      ['dsm', path.join(work, 'dsm.tif'), 'dsm.tif'],
      ['dtm', path.join(work, 'dtm.tif'), 'dtm.tif'],
      ['orthophoto', path.join(work, 'orthophoto.tif'), 'orthophoto.tif'],
      ['pointcloud', path.join(BRIGHTON, 'model.laz'), 'georeferenced_model.laz'],
    ];
    for (const [field, file, asset] of sent) {
      const reply = await upload(uuid, field, file);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body).toEqual({ uploaded: true, done: true, asset });
    }
    const committed = await t.admin.post(`${imports}/commit`, { uuid, name: 'Survey from elsewhere' });
    expect(committed.status, JSON.stringify(committed.body)).toBe(201);
    expect(committed.body).toMatchObject({ status: TaskStatus.RUNNING, pending_action: 5, name: 'Survey from elsewhere' });
    const base = `/api/projects/${project}/tasks/${committed.body.id}`;
    const done = await waitForTask(t.admin, `${base}/`, finished, 120_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.available_assets).toEqual(
      expect.arrayContaining(['orthophoto.tif', 'dsm.tif', 'dtm.tif', 'georeferenced_model.laz', 'all.zip']),
    );
    expect(done.epsg).toBe(32633);
    // The extent is the orthophoto's (80 m square), around a ring 15 m about the stockpile.
    const [west, south, east, north] = done.extent;
    const ring = stockpileRing(15, 48);
    for (const [lon, lat] of ring) expect(lon > west && lon < east && lat > south && lat < north).toBe(true);
    expect((east - west) * 111_320 * Math.cos((south * Math.PI) / 180)).toBeCloseTo(80, -1);
    expect(done.statistics.pointcloud.points).toBe(940393);

    for (const layer of ['orthophoto', 'dsm', 'dtm']) {
      const tiles = await t.admin.get(`${base}/${layer}/tiles.json`);
      expect(tiles.status, layer).toBe(200);
      expect(tiles.body.bounds[0]).toBeCloseTo(west, 3);
    }
    const copc = await download(t.admin, `${base}/assets/odm_georeferencing/odm_georeferenced_model.copc.laz`, { range: 'bytes=0-399' });
    expect(copc.status).toBe(206);
    expect(copc.bytes.subarray(0, 4).toString()).toBe('LASF');
    expect(copc.bytes.subarray(377, 381).toString()).toBe('copc');
    const laz = await download(t.admin, `${base}/download/georeferenced_model.laz`);
    expect(laz.bytes.length).toBe((await import('node:fs')).statSync(path.join(BRIGHTON, 'model.laz')).size);

    // The volume tool on the imported DSM finds the cone.
    const started = await t.admin.post(`${base}/volume`, {
      area: { type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } },
      method: 'plane',
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    let state: any;
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      state = (await t.admin.get(`/api/workers/check/${started.body.celery_task_id}`)).body;
      if (state.ready) break;
    }
    expect(state).toEqual({ ready: true });
    const figures = JSON.parse((await download(t.admin, `/api/workers/get/${started.body.celery_task_id}`)).bytes.toString());
    expect(Math.abs(figures.net - STOCKPILE_CONE) / STOCKPILE_CONE).toBeLessThan(0.01);
    // The staged uploads are gone once imported.
    expect(await readdir(path.join(t.dataDir, 'media', 'tmp', 'external', String(project)))).toEqual([]);
  }, 180_000);

  it('refuses wrong uploads and commits with a 400 that says why, creating nothing', async () => {
    const before = await taskCount();
    const uuid = await init();
    const dsm = path.join(work, 'dsm.tif');
    expect((await upload(uuid, 'file', dsm)).body.detail).toMatch(/one of orthophoto, dsm, dtm, pointcloud, texturedmodel/);
    expect((await upload(uuid, 'pointcloud', dsm)).body.detail).toMatch(/pointcloud must be a \.laz or \.las file/);
    for (const wrong of ['invalid', '62b5f00b-c225-4779-b7e2-b666ff2b97f6', '', '../../../etc']) {
      const reply = await upload(wrong, 'dsm', dsm);
      expect(reply.status, wrong).toBe(400);
      expect(reply.body.detail).toMatch(/Invalid uuid/);
      expect((await t.admin.post(`${imports}/commit`, { uuid: wrong })).status).toBe(400);
    }
    // An upload id of another project is not this one's.
    const other = (await t.admin.post('/api/projects/', { name: 'Other' })).body.id;
    const foreign = (await t.admin.post(`/api/projects/${other}/tasks/import/external/init`)).body.uuid;
    expect((await upload(foreign, 'dsm', dsm)).status).toBe(400);

    const empty = await t.admin.post(`${imports}/commit`, { uuid });
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toMatch(/nothing was uploaded/);

    const jpeg = path.join(work, 'photo.laz');
    await copyFile(path.join(BRIGHTON, 'images', 'DJI_0018.JPG'), jpeg);
    const notGeo = path.join(work, 'plain.tif');
    python(
      `import sys, numpy as np, rasterio
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=20, height=20, count=3, dtype="uint8") as out:
    out.write(np.zeros((3, 20, 20), np.uint8))`,
      notGeo,
    );
    const model = path.join(work, 'model.glb');
    await writeFile(model, '{"asset": {"version": "2.0"}}');
    for (const [field, file] of [['dsm', path.join(work, 'three-bands.tif')], ['orthophoto', notGeo], ['pointcloud', jpeg], ['texturedmodel', model]]) {
      expect((await upload(uuid, field, file)).status).toBe(200);
    }
    const refused = await t.admin.post(`${imports}/commit`, { uuid });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/dsm has 3 bands/);
    expect(refused.body.detail).toMatch(/orthophoto has no coordinate reference system/);
    expect(refused.body.detail).toMatch(/not a LAS or LAZ file/);
    expect(refused.body.detail).toMatch(/not a binary glTF/);
    expect(await taskCount()).toBe(before);
    expect(existsSync(path.join(t.dataDir, 'media', 'tmp', 'external', String(project), uuid))).toBe(true);
  }, 60_000);
});
