// End to end over HTTP with the real engine on real photographs: Brighton Beach images scaled down (EXIF kept),
// processed by the embedded node, then by a second `aeromap node` process added through the API. Every asset
// is downloaded and opened with the engine's own readers (rasterio, laspy, Pillow).
import { type ChildProcess, spawn } from 'node:child_process';
import { openAsBlob } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedNode } from '../../src/service/embedded-node.ts';
import { type TestService, startService } from './helpers.ts';
import { LONG, REPO, TaskStatus, brightonCopies, download, finished, imageForm, postForm, python, waitForTask } from './taskhelpers.ts';

const OPTIONS = [
  { name: 'dsm', value: true },
  { name: 'pc-las', value: true },
  { name: 'pc-csv', value: true },
  { name: 'orthophoto-png', value: true },
  // At a quarter of the full size, "ultra" keeps enough features to tie the images together.
  { name: 'feature-quality', value: 'ultra' },
  // A lighter dense cloud and mesh: the engine's suite checks their quality, this file the flow and the assets.
  { name: 'pc-quality', value: 'low' },
  { name: 'mesh-size', value: 50000 },
];

/** Opens each downloaded asset with the library its format calls for and reports what it holds. */
const OPEN_ASSETS = `
import json, sys, zipfile, rasterio, laspy
from PIL import Image
folder = sys.argv[1]
out = {}
for name in sys.argv[2:]:
    path = f"{folder}/{name}"
    if name.endswith(".tif"):
        with rasterio.open(path) as r:
            out[name] = {"crs": str(r.crs), "bands": r.count, "width": r.width}
    elif name.endswith(".png"):
        with Image.open(path) as img:
            out[name] = {"width": img.width, "mode": img.mode}
    elif name.endswith((".las", ".laz")):
        las = laspy.read(path)
        out[name] = {"points": len(las.points), "crs": str(las.header.parse_crs())}
    elif name.endswith(".ply"):
        head = open(path, "rb").read(400).decode("latin-1")
        out[name] = {"points": int(head.split("element vertex ")[1].split()[0])}
    elif name.endswith(".csv"):
        with open(path) as f:
            header = f.readline().strip()
            rows = sum(1 for _ in f)
        out[name] = {"header": header, "points": rows}
    elif name.endswith(".zip"):
        out[name] = {"files": sorted(zipfile.ZipFile(path).namelist())}
    elif name.endswith(".glb"):
        import trimesh
        scene = trimesh.load(path, force="scene")
        gltf = json.loads(open(path, "rb").read()[20:20 + int.from_bytes(open(path, "rb").read()[12:16], "little")])
        out[name] = {"faces": sum(len(g.faces) for g in scene.geometry.values()),
                     "textured": all(g.visual.kind == "texture" for g in scene.geometry.values()),
                     "rtc": gltf.get("extensions", {}).get("CESIUM_RTC", {}).get("center"),
                     "bytes": len(open(path, "rb").read())}
    elif name.endswith(".pdf"):
        out[name] = {"magic": open(path, "rb").read(5).decode("latin-1"), "bytes": len(open(path, "rb").read())}
    else:
        out[name] = {"bytes": len(open(path, "rb").read())}
print(json.dumps(out))
`;

// In `make test-long`: the browser test (test/web/app.e2e.test.ts) takes the same path with the real engine.
describe.runIf(LONG)('tasks with the real engine', () => {
  let t: TestService;
  let work: string;
  let images: string[];
  let projectId: number;
  let embeddedId: number;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    // These tests outlast the five minutes a node stays online unasked: refresh it as the service does.
    t = await startService('sqlite', { nodeRefreshIntervalMs: 15_000 });
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-e2e-'));
    const embedded = await startEmbeddedNode({ port: 0, dataDir: path.join(work, 'node') }, t.service.db, t.service.refresher, () => {});
    closers.push(() => embedded.node.close());
    embeddedId = embedded.id;
    await t.service.refresher.refreshAll();
    const names = ['DJI_0027.JPG', 'DJI_0028.JPG', 'DJI_0029.JPG', 'DJI_0030.JPG'];
    images = await brightonCopies(path.join(work, 'images'), names, 1000);
    projectId = (await t.admin.post('/api/projects/', { name: 'Brighton Beach' })).body.id;
  }, 120_000);

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  const tasksUrl = () => `/api/projects/${projectId}/tasks/`;

  /** Downloads every available asset and opens it; answers what each holds. */
  async function openAssets(task: { id: number; available_assets: string[] }, folder: string) {
    for (const asset of task.available_assets) {
      const reply = await download(t.admin, `${tasksUrl()}${task.id}/download/${asset}`);
      expect(reply.status, asset).toBe(200);
      await writeFile(path.join(folder, asset), reply.bytes);
    }
    return JSON.parse(python(OPEN_ASSETS, folder, ...task.available_assets));
  }

  let first: { id: number; uuid: string; available_assets: string[] };

  it('processes real photographs through the API to a georeferenced orthophoto, DSM and point cloud', async () => {
    const created = await postForm(t.admin, tasksUrl(), await imageForm(images, { name: 'Brighton', options: JSON.stringify(OPTIONS) }));
    expect(created.status).toBe(201);
    const url = `${tasksUrl()}${created.body.id}/`;
    const statuses: (number | null)[] = [];
    const progress: number[] = [];
    const consoleLengths: number[] = [];
    const done = await waitForTask(t.admin, url, finished, 420_000, (seen) => {
      statuses.push(seen.status);
      progress.push(seen.running_progress);
    });
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.processing_node).toBe(embeddedId);
    expect(statuses).toContain(TaskStatus.RUNNING);
    expect(new Set(progress.filter((p) => p > 0 && p < 1)).size).toBeGreaterThan(2);
    const output = (await t.admin.get(`${url}output/`)).body as string;
    consoleLengths.push(output.split('\n').length);
    expect(output).toContain('Running stage opensfm');
    expect(done.available_assets).toEqual(
      expect.arrayContaining(['all.zip', 'orthophoto.tif', 'orthophoto.png', 'dsm.tif', 'georeferenced_model.las', 'georeferenced_model.laz', 'georeferenced_model.ply', 'georeferenced_model.csv', 'cameras.json', 'shots.geojson', 'textured_model.zip', 'textured_model.glb', 'report.pdf']),
    );
    // Brighton Beach (Duluth, Minnesota) lies near 46.84 N, 91.99 W: the extent must be there, and small.
    const [west, south, east, north] = done.extent;
    expect(west).toBeGreaterThan(-92.0);
    expect(east).toBeLessThan(-91.98);
    expect(south).toBeGreaterThan(46.83);
    expect(north).toBeLessThan(46.85);
    expect(east - west).toBeGreaterThan(0.0002);
    expect(done.statistics.reconstruction).toBeDefined();

    const opened = await openAssets(done, await mkdtemp(path.join(work, 'assets-')));
    expect(opened['orthophoto.tif']).toMatchObject({ crs: 'EPSG:32615', bands: 4 });
    expect(opened['dsm.tif']).toMatchObject({ crs: 'EPSG:32615', bands: 1 });
    expect(opened['orthophoto.png'].width).toBe(opened['orthophoto.tif'].width);
    const points = opened['georeferenced_model.las'].points;
    expect(points).toBeGreaterThan(10_000);
    expect(opened['georeferenced_model.laz'].points).toBe(points);
    expect(opened['georeferenced_model.ply'].points).toBe(points);
    expect(opened['georeferenced_model.csv'].points).toBe(points);
    expect(opened['georeferenced_model.las'].crs).toContain('32615');
    expect(opened['all.zip'].files.length).toBeGreaterThan(8);
    expect(opened['all.zip'].files).toEqual(expect.arrayContaining(['odm_texturing/odm_textured_model_geo.obj', 'odm_report/report.pdf']));
    // The textured model: OBJ, its materials and atlases in the zip, the GLB textured and placed by its offset.
    expect(opened['textured_model.zip'].files).toEqual(expect.arrayContaining(['odm_textured_model_geo.obj', 'odm_textured_model_geo.mtl']));
    expect(opened['textured_model.zip'].files.some((f: string) => f.endsWith('_map_Kd.png'))).toBe(true);
    expect(opened['textured_model.zip'].files.some((f: string) => f.endsWith('.glb'))).toBe(false);
    expect(opened['textured_model.glb']).toMatchObject({ textured: true });
    expect(opened['textured_model.glb'].faces).toBeGreaterThan(1000);
    const [rtcEast, rtcNorth] = opened['textured_model.glb'].rtc;
    expect(rtcEast).toBeGreaterThan(560_000); // UTM 15N at 92 W, 46.8 N
    expect(rtcNorth).toBeGreaterThan(5_180_000);
    // WebODM's 3D view reads the same model where WebODM serves it.
    const viewed = await download(t.admin, `${url}textured_model/?platform=mobile`);
    expect(viewed.status).toBe(200);
    expect(viewed.bytes.subarray(0, 4).toString()).toBe('glTF');
    expect(viewed.bytes.length).toBe(opened['textured_model.glb'].bytes);
    expect(opened['report.pdf'].magic).toBe('%PDF-');
    // WebODM's figures, from the report's sections.
    expect(done.statistics.pointcloud).toEqual({ points });
    expect(done.statistics.gsd).toBeGreaterThan(0.5);
    expect(done.statistics.area).toBeGreaterThan(100);
    first = done;
  }, 480_000);

  it('serves the orthophoto and DSM as tile layers from the pyramids the engine made', async () => {
    const base = `${tasksUrl()}${first.id}`;
    expect(first.available_assets).toContain('orthophoto.mbtiles');
    const tilejson = await t.admin.get(`${base}/orthophoto/tiles.json`);
    expect(tilejson.status).toBe(200);
    const layer = tilejson.body;
    expect(layer).toMatchObject({ tilejson: '2.1.0', scheme: 'xyz', name: 'Brighton', tiles: [`${base}/orthophoto/tiles/{z}/{x}/{y}.png`] });
    expect(layer.maxzoom).toBeGreaterThanOrEqual(23); // the native zoom (at least 20 for 5 cm pixels) and three more
    // The layer's bounds are the orthophoto's extent (both from the engine, by two routes).
    const extent = (await t.admin.get(`${base}/`)).body.extent as number[];
    layer.bounds.forEach((value: number, i: number) => expect(value).toBeCloseTo(extent[i], 4));
    const dsm = (await t.admin.get(`${base}/dsm/tiles.json`)).body;
    expect(dsm.value_range[0]).toBeLessThan(dsm.value_range[1]);
    expect(dsm.color_map).toBe('viridis');
    expect(await t.admin.get(`${base}/dtm/tiles.json`)).toMatchObject({ status: 404, body: { detail: 'This task has no dtm.' } });

    // The tile under the layer's centre at the native zoom (three below the deepest served), with ?jwt= as map
    // clients send it.
    const [lon, lat] = [(layer.bounds[0] + layer.bounds[2]) / 2, (layer.bounds[1] + layer.bounds[3]) / 2];
    const tileAt = (zoom: number) => {
      const rad = (lat * Math.PI) / 180;
      return [Math.floor(((lon + 180) / 360) * 2 ** zoom), Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * 2 ** zoom)];
    };
    const z = layer.maxzoom - 3;
    const [x, y] = tileAt(z);
    const imageOf = async (url: string) => {
      const reply = await fetch(new URL(url, t.url), { headers: { authorization: `JWT ${t.admin.token}` } });
      expect(reply.status, url).toBe(200);
      expect(reply.headers.get('content-type')).toBe('image/png');
      const file = path.join(work, 'tile.png');
      await writeFile(file, Buffer.from(await reply.arrayBuffer()));
      const script = 'import sys, json\nfrom PIL import Image\nimg = Image.open(sys.argv[1])\nprint(json.dumps([img.width, img.height, img.mode]))';
      return JSON.parse(python(script, file)) as [number, number, string];
    };
    const url = new URL(`${base}/orthophoto/tiles/${z}/${x}/${y}.png?jwt=${t.admin.token}`, t.url);
    const tile = await fetch(url);
    expect(tile.status).toBe(200);
    const png = Buffer.from(await tile.arrayBuffer());
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    const etag = tile.headers.get('etag') as string;
    expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect(await imageOf(`${base}/orthophoto/tiles/${z}/${x}/${y}.png`)).toEqual([256, 256, 'RGBA']);
    // WebODM's map: 512 px tiles (size= or @2x), zooms beyond the native one, and the DEM in a style of its own,
    // drawn by the engine from the GeoTIFF.
    expect(await imageOf(`${base}/orthophoto/tiles/${z - 1}/${x >> 1}/${y >> 1}.png?size=512&cache=42`)).toEqual([512, 512, 'RGBA']);
    expect(await imageOf(`${base}/orthophoto/tiles/${z}/${x}/${y}@2x.png`)).toEqual([512, 512, 'RGBA']);
    const [deepX, deepY] = tileAt(layer.maxzoom);
    expect(await imageOf(`${base}/orthophoto/tiles/${layer.maxzoom}/${deepX}/${deepY}.png`)).toEqual([256, 256, 'RGBA']);
    const [low, high] = dsm.value_range as number[];
    const styled = `${base}/dsm/tiles/${z}/${x}/${y}.png?rescale=${low},${high}&color_map=jet&hillshade=6&size=512`;
    expect(await imageOf(styled)).toEqual([512, 512, 'RGBA']);
    expect(await t.admin.get(`${base}/dsm/tiles/${z}/${x}/${y}.png?color_map=nope`)).toMatchObject({ status: 400, body: { detail: 'unknown color_map nope.' } });
    expect((await t.admin.get(`${base}/orthophoto/tiles/${z}/${x}/${y}.png?hillshade=2`)).status).toBe(400);
    const outside = await t.admin.get(`${base}/orthophoto/tiles/${z}/${x + 50}/${y}.png`);
    expect(outside).toMatchObject({ status: 404, body: { detail: 'Outside of bounds' } });
    expect((await t.admin.get(`${base}/orthophoto/tiles/${layer.maxzoom + 1}/${deepX * 2}/${deepY * 2}.png`)).status).toBe(404);
    // Nobody else reads the tiles of a task that is not public (404, as any other read of it).
    expect((await t.anonymous.get(`${base}/orthophoto/tiles/${z}/${x}/${y}.png`)).status).toBe(404);
  });

  it.runIf(LONG)('restarts from the orthophoto stage on the same node, reusing the earlier stages', async () => {
    const url = `${tasksUrl()}${first.id}/`;
    const restart = await t.admin.post(`${url}restart/`, { options: [...OPTIONS, { name: 'rerun-from', value: 'odm_orthophoto' }] });
    expect(restart.body).toEqual({ success: true });
    const done = await waitForTask(t.admin, url, finished, 240_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.uuid).toBe(first.uuid);
    const output = (await t.admin.get(`${url}output/`)).body as string;
    expect(output).toContain('Running stage odm_orthophoto');
    expect(output).not.toContain('Running stage opensfm');
  }, 300_000);

  it.runIf(LONG)('maps two flights whose photographs share names: every photograph is kept and placed', async () => {
    // The second flight's photographs (DJI_0031-34) carry the first one's names, as two cards' DJI_0001.JPG do.
    const second = await brightonCopies(path.join(work, 'second'), ['DJI_0031.JPG', 'DJI_0032.JPG', 'DJI_0033.JPG', 'DJI_0034.JPG'], 1000);
    const renamed = await Promise.all(second.map(async (file, i) => {
      const target = path.join(work, 'second', path.basename(images[i]!));
      await rename(file, target);
      return target;
    }));
    const options = [{ name: 'fast-orthophoto', value: true }, { name: 'feature-quality', value: 'ultra' }, { name: 'skip-report', value: true }];
    const created = await postForm(t.admin, tasksUrl(), await imageForm([...images, ...renamed], { name: 'Two flights', options: JSON.stringify(options) }));
    expect(created.status).toBe(201);
    expect(created.body.images_count).toBe(8);
    const url = `${tasksUrl()}${created.body.id}/`;
    const done = await waitForTask(t.admin, url, finished, 420_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect((await t.admin.get(`${url}output/`)).body as string).toMatch(/Registered 8 of 8 images/);
  }, 480_000);

  it('cancels a running task and removes it', async () => {
    const created = await postForm(t.admin, tasksUrl(), await imageForm(images.slice(0, 3), { options: JSON.stringify(OPTIONS) }));
    const url = `${tasksUrl()}${created.body.id}/`;
    await waitForTask(t.admin, url, (task) => task.status === TaskStatus.RUNNING, 180_000);
    await t.admin.post(`${url}cancel/`);
    expect((await waitForTask(t.admin, url, finished, 60_000)).status).toBe(TaskStatus.CANCELED);
    await t.admin.post(`${url}remove/`);
    const until = Date.now() + 60_000;
    while ((await t.admin.get(url)).status === 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    expect((await t.admin.get(url)).status).toBe(404);
  }, 330_000);

  it("imports the first task's all.zip into a new task, building the tile pyramids an ODM zip lacks", async () => {
    const zip = await download(t.admin, `${tasksUrl()}${first.id}/download/all.zip`);
    // Without its pyramids, as ODM and WebODM make all.zip.
    const original = path.join(work, 'all.zip');
    const withoutTiles = path.join(work, 'odm-all.zip');
    await writeFile(original, zip.bytes);
    python(
      'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:\n' +
        '    for item in src.infolist():\n        if not item.filename.endswith(".mbtiles"): dst.writestr(item, src.read(item))',
      original,
      withoutTiles,
    );
    const form = new FormData();
    form.append('name', 'Imported Brighton');
    form.append('file', await openAsBlob(withoutTiles), 'all.zip');
    const created = await postForm(t.admin, `${tasksUrl()}import`, form);
    expect(created.status).toBe(201);
    const done = await waitForTask(t.admin, `${tasksUrl()}${created.body.id}/`, finished, 180_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.available_assets).toEqual(first.available_assets);
    expect(done.extent).toEqual((await t.admin.get(`${tasksUrl()}${first.id}/`)).body.extent);
    expect(done.images_count).toBe(4);
    const tilejson = await t.admin.get(`${tasksUrl()}${done.id}/dsm/tiles.json`);
    expect(tilejson.status).toBe(200);
    expect(tilejson.body.value_range[0]).toBeLessThan(tilejson.body.value_range[1]);
  }, 240_000);

  it.runIf(LONG)('runs the same flow on a second node, a separate `aeromap node` process added through the API', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const child: ChildProcess = spawn(path.join(REPO, 'bin', 'aeromap'), ['node', '--port', String(port), '--host', '127.0.0.1', '--data-dir', path.join(work, 'second'), '--token', 'second-secret'], {
      stdio: 'ignore',
    });
    closers.push(async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    });
    // Started from the sources on a loaded machine, the node may take tens of seconds to listen.
    const answers = () => fetch(`http://127.0.0.1:${port}/info?token=second-secret`).then((r) => r.ok, () => false);
    await expect.poll(answers, { timeout: 120_000, interval: 250 }).toBe(true);
    const node = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port, token: 'second-secret' });
    expect(node.status).toBe(201);
    await t.service.refresher.refreshAll();
    expect((await t.admin.get(`/api/processingnodes/${node.body.id}/`)).body.online).toBe(true);

    const created = await postForm(
      t.admin,
      tasksUrl(),
      await imageForm(images, {
        processing_node: String(node.body.id),
        auto_processing_node: 'false',
        // The first test opened every product: here the orthophoto and the point cloud that the other node made
        // are enough, so the run ends with the orthophoto and makes its dense cloud at the lowest quality.
        options: JSON.stringify([
          { name: 'feature-quality', value: 'ultra' },
          { name: 'pc-las', value: true },
          { name: 'pc-quality', value: 'lowest' },
          { name: 'skip-3dmodel', value: true },
          { name: 'end-with', value: 'odm_orthophoto' },
        ]),
      }),
    );
    expect(created.status).toBe(201);
    const done = await waitForTask(t.admin, `${tasksUrl()}${created.body.id}/`, finished, 360_000);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done.processing_node).toBe(node.body.id);
    const opened = await openAssets(done, await mkdtemp(path.join(work, 'second-assets-')));
    expect(opened['orthophoto.tif']).toMatchObject({ crs: 'EPSG:32615', bands: 4 });
    expect(opened['georeferenced_model.las'].points).toBeGreaterThan(10_000);
  }, 600_000);
});
