// Helpers of the task tests: real JPEG files (made by the engine's Pillow), multipart uploads, a processing
// node to register, and waiting for a task to reach a state.
import { execFileSync } from 'node:child_process';
import { openAsBlob } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { type RunningNode, startNode } from '../../src/node/index.ts';
import type { Client, Reply, TestService } from './helpers.ts';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** Tests left out of `make test` to keep it within CI's time run with AEROMAP_LONG_TESTS=1 (make test-long). */
export const LONG = process.env.AEROMAP_LONG_TESTS === '1';
export const ENGINE_PYTHON = path.join(REPO, 'engine', '.venv', 'bin', 'python');
export const FAKE_ENGINE = path.join(REPO, 'test', 'pyodm', 'fake_engine.py');
export const BRIGHTON = path.join(REPO, '..', 'shared', 'datasets', 'brighton_beach');

/** Runs a Python snippet with the engine's interpreter (Pillow, rasterio, laspy); answers its stdout. */
export function python(code: string, ...args: string[]): string {
  return execFileSync(ENGINE_PYTHON, ['-c', code, ...args], { encoding: 'utf8' });
}

/** `count` real JPEG photographs of noise, `size` pixels wide, in `dir`. */
export async function makeJpegs(dir: string, count: number, size = 64): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  python(
    `import sys, numpy as np
from PIL import Image
d, n, s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    Image.fromarray(np.random.default_rng(i).integers(0, 255, (s, s, 3), dtype=np.uint8)).save(f"{d}/IMG_{i:04d}.JPG", quality=80)`,
    dir,
    String(count),
    String(size),
  );
  return Array.from({ length: count }, (_, i) => path.join(dir, `IMG_${String(i).padStart(4, '0')}.JPG`));
}

/** Brighton Beach photographs scaled down to `width` pixels, their EXIF (GPS, camera) and XMP kept. */
export async function brightonCopies(dir: string, names: string[], width: number): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  python(
    `import sys
from PIL import Image
src, dst, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name in sys.argv[4:]:
    with Image.open(f"{src}/images/{name}") as img:
        small = img.resize((width, round(img.height * width / img.width)), Image.Resampling.LANCZOS)
        small.save(f"{dst}/{name}", quality=92, exif=img.info.get("exif", b""), xmp=img.info.get("xmp"))`,
    BRIGHTON,
    dir,
    String(width),
    ...names,
  );
  return names.map((name) => path.join(dir, name));
}

/**
 * An all.zip in ODM's layout with a small orthophoto in UTM (as the engine writes them: red, green, blue and alpha,
 * 8 bits) and its tile pyramid, made by the engine. `rgba` is Python that sets `rgba`, its (4, height, width)
 * values; `resolution` its pixel size in metres; `withModel` adds an empty glTF model. With `bands` 'rgbn' the four
 * bands are red, green, blue and near infrared instead, named by their descriptions (Red, Green, Blue, NIR) as a
 * multispectral camera's orthophoto names them. With 'lwir' the orthophoto is a thermal camera's: `rgba` sets
 * `celsius`, (height, width) float32 temperatures (NaN where there is none), written as the band LWIR and alpha.
 */
export function orthophotoZip(dir: string, rgba: string, resolution: number, withModel = false, bands: 'rgba' | 'rgbn' | 'lwir' = 'rgba'): string {
  python(
    `import sys, subprocess, zipfile, numpy as np, rasterio
from rasterio.enums import ColorInterp
from rasterio.transform import from_origin
d, engine, resolution = sys.argv[1], sys.argv[2], float(sys.argv[3])
tif, mbtiles = f"{d}/odm_orthophoto.tif", f"{d}/odm_orthophoto.mbtiles"
${rgba}
nir, lwir = sys.argv[5] == "rgbn", sys.argv[5] == "lwir"
place = {"crs": "EPSG:32615", "transform": from_origin(576000, 4565000, resolution, resolution)}
if lwir:
    with rasterio.open(tif, "w", driver="GTiff", width=celsius.shape[1], height=celsius.shape[0], count=2,
                       dtype="float32", nodata=float("nan"), **place) as out:
        out.colorinterp = [ColorInterp.gray, ColorInterp.alpha]
        out.set_band_description(1, "LWIR")
        out.write(np.stack([celsius, np.where(np.isfinite(celsius), 255, 0)]).astype(np.float32))
else:
    with rasterio.open(tif, "w", driver="GTiff", width=rgba.shape[2], height=rgba.shape[1], count=4, dtype="uint8",
                       photometric="RGB", **place, **({} if nir else {"alpha": "YES"})) as out:
        out.write(rgba)
        if nir:
            out.colorinterp = [ColorInterp.red, ColorInterp.green, ColorInterp.blue, ColorInterp.undefined]
            for number, description in enumerate(["Red", "Green", "Blue", "NIR"], 1):
                out.set_band_description(number, description)
subprocess.run([engine, "tiles", tif, mbtiles], check=True, stdout=subprocess.DEVNULL)
with zipfile.ZipFile(f"{d}/all.zip", "w") as z:
    z.write(tif, "odm_orthophoto/odm_orthophoto.tif")
    z.write(mbtiles, "odm_orthophoto/odm_orthophoto.mbtiles")
    if sys.argv[4] == "model":
        gltf = b'{"asset":{"version":"2.0"}}' + b" "
        z.writestr("odm_texturing/odm_textured_model_geo.glb", b"glTF" + (2).to_bytes(4, "little") +
                   (20 + len(gltf)).to_bytes(4, "little") + len(gltf).to_bytes(4, "little") + b"JSON" + gltf)`,
    dir,
    path.join(path.dirname(ENGINE_PYTHON), 'aeromap-engine'),
    String(resolution),
    withModel ? 'model' : 'none',
    bands,
  );
  return path.join(dir, 'all.zip');
}

/** A multipart form with the files under `images` and the given text fields. */
export async function imageForm(files: string[], fields: Record<string, string> = {}, field = 'images'): Promise<FormData> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  for (const file of files) form.append(field, await openAsBlob(file), path.basename(file));
  return form;
}

/** POSTs a multipart form with the client's token. */
export async function postForm(client: Client, url: string, form: FormData): Promise<Reply> {
  const response = await fetch(new URL(url, client.baseUrl), {
    method: 'POST',
    headers: client.token ? { authorization: `JWT ${client.token}` } : {},
    body: form,
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.includes('json');
  return { status: response.status, body: json && text ? JSON.parse(text) : text, headers: response.headers };
}

/** Downloads a URL of the service into memory (small test assets only). */
export async function download(client: Client, url: string, headers: Record<string, string> = {}) {
  const response = await fetch(new URL(url, client.baseUrl), {
    headers: { ...headers, ...(client.token ? { authorization: `JWT ${client.token}` } : {}) },
  });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Polls a task until `done` holds (or the time runs out, when the last reply is shown). */
export async function waitForTask(
  client: Client,
  url: string,
  done: (task: any) => boolean,
  timeoutMs = 60_000,
  seen: (task: any) => void = () => {},
): Promise<any> {
  const until = Date.now() + timeoutMs;
  let last: Reply | undefined;
  while (Date.now() < until) {
    last = await client.get(url);
    if (last.status === 200) {
      seen(last.body);
      if (done(last.body)) return last.body;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect.fail(`task ${url} did not get there in time: ${JSON.stringify(last?.body)}`);
}

export const TaskStatus = { QUEUED: 10, RUNNING: 20, FAILED: 30, COMPLETED: 40, CANCELED: 50 } as const;
export const finished = (task: { status: number | null; pending_action: number | null }) =>
  task.pending_action === null && [30, 40, 50].includes(task.status ?? 0);

/** A processing node in this process running the quick stand-in engine, registered with the service. */
export async function fakeNode(t: TestService, dataDir: string): Promise<{ node: RunningNode; nodeId: number }> {
  const node = await startNode({ dataDir, port: 0, host: '127.0.0.1', token: 'node-secret', enginePath: FAKE_ENGINE, log: () => {} });
  const created = await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port, token: 'node-secret' });
  expect(created.status).toBe(201);
  await t.service.refresher.refreshAll();
  return { node, nodeId: created.body.id };
}

/** A task made from the images by the service's nodes, once COMPLETED. */
export async function completedTask(client: Client, projectId: number, images: string[], fields: Record<string, string> = {}) {
  const created = await postForm(client, `/api/projects/${projectId}/tasks/`, await imageForm(images, fields));
  expect(created.status).toBe(201);
  const done = await waitForTask(client, `/api/projects/${projectId}/tasks/${created.body.id}/`, finished);
  expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
  return done;
}

/** The stockpile's volume: a cone of radius 10 m, 5 m high. */
export const STOCKPILE_CONE = (Math.PI * 10 ** 2 * 5) / 3;
/** The control point stockpileZip's ground_control_points.geojson places, in UTM 33N. */
export const STOCKPILE_CONTROL = [500015, 5700015];

/**
 * A stockpile's DSM (a cone 10 m in radius and 5 m high on level ground at 100 m, centred at 500000, 5700000 in UTM
 * 33N) and DTM (the ground) at 0.2 m, zipped as ODM's all.zip. `excavated`: the same ground after the stockpile was
 * taken away and a pit dug where it stood, 20 m east to west, 10 m north to south and 2 m deep (400 m³). Beside
 * them, ODM's ground_control_points.geojson: STOCKPILE_CONTROL, 15 m north-east of the cone, and a checkpoint.
 */
export function stockpileZip(dir: string, excavated = false): string {
  python(
    `import json, sys, zipfile, numpy as np, rasterio
from pyproj import Transformer
from rasterio.transform import from_origin
d = sys.argv[1]
n = 400
centres = (np.arange(n) + 0.5) * 0.2 - 40
x, y = np.meshgrid(centres, -centres)
cone = 5 * np.clip(1 - np.hypot(x, y) / 10, 0, None)
if sys.argv[2] == "excavated":
    cone = np.where((np.abs(x) < 10) & (np.abs(y) < 5), -2.0, 0.0)
with zipfile.ZipFile(f"{d}/all.zip", "w") as z:
    for name, heights in (("dsm", 100 + cone), ("dtm", 100 + np.minimum(cone, 0))):
        path = f"{d}/{name}.tif"
        with rasterio.open(path, "w", driver="GTiff", width=n, height=n, count=1, dtype="float32", nodata=-9999,
                           crs="EPSG:32633", transform=from_origin(499960, 5700040, 0.2, 0.2)) as out:
            out.write(heights.astype(np.float32), 1)
        z.write(path, f"odm_dem/{name}.tif")
    to_wgs84 = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
    points = [("GCP-A", 500015, 5700015, (0.03, -0.04, 0.02), False), ("CHK-1", 499985, 5699985, (0.1, 0.0, -0.05), True)]
    z.writestr("odm_georeferencing/ground_control_points.geojson", json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [*to_wgs84.transform(x, y), 100.0]},
         "properties": {"id": name, "error_x": e[0], "error_y": e[1], "error_z": e[2], "checkpoint": check, "used": not check,
                        "observations_count": 2, "observations_list": "IMG_1.JPG,IMG_2.JPG"}}
        for name, x, y, e, check in points]}))`,
    dir,
    excavated ? 'excavated' : 'stockpile',
  );
  return path.join(dir, 'all.zip');
}

/** A closed ring of `corners` corners `radius` metres about the stockpile, in WGS84 (longitude, latitude). */
export function stockpileRing(radius: number, corners: number): number[][] {
  const out = python(
    `import sys, json, numpy as np
from pyproj import Transformer
a = np.linspace(0, 2 * np.pi, int(sys.argv[2]) + 1)
r = float(sys.argv[1])
lon, lat = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True).transform(500000 + r * np.cos(a), 5700000 + r * np.sin(a))
print(json.dumps(np.column_stack([lon, lat]).tolist()))`,
    String(radius),
    String(corners),
  );
  return JSON.parse(out);
}

/** Imports an all.zip as a task of the project and waits for it to complete; answers the task. */
export async function importTask(client: Client, projectId: number, zip: string, name: string, timeoutMs?: number): Promise<any> {
  const imported = await postForm(client, `/api/projects/${projectId}/tasks/import`, await imageForm([zip], { name }, 'file'));
  const done = await waitForTask(client, `/api/projects/${projectId}/tasks/${imported.body.id}/`, finished, timeoutMs);
  expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
  return done;
}
