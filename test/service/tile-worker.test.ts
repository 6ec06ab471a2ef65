// The service's side of the engine's tile worker, with the real engine: tiles drawn from a GeoTIFF made here, a
// style it cannot draw refused as a 400, nothing written where the raster holds nothing, and the worker started
// again after it stopped.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEnginePath } from '../../src/protocol/engine.ts';
import { HttpError } from '../../src/service/errors.ts';
import { type RenderRequest, TileWorker } from '../../src/service/tiles/worker.ts';
import { python } from './taskhelpers.ts';

// A 200 m square DSM in UTM 33N at 0.5 m, rising from 100 m in the west to 140 m in the east; and the XYZ tile
// at zoom 17 under its centre.
const MAKE_DSM = `
import sys, json, numpy as np, rasterio
from rasterio.transform import from_origin
from pyproj import Transformer
heights = np.tile(np.linspace(100, 140, 400, dtype=np.float32), (400, 1))[None]
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=400, height=400, count=1, dtype="float32",
                   crs="EPSG:32633", transform=from_origin(500000, 5200000, 0.5, 0.5), nodata=-9999) as out:
    out.write(heights)
mx, my = Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True).transform(500100, 5199900)
half, z = 20037508.342789244, 17
span = 2 * half / 2 ** z
print(json.dumps([z, int((mx + half) // span), int((half - my) // span)]))
`;

describe('the tile worker', () => {
  let work: string;
  let raster: string;
  let at: { z: number; x: number; y: number };
  const worker = new TileWorker(defaultEnginePath(), { timeoutMs: 30_000 });
  const request = (changes: Partial<RenderRequest>): RenderRequest => ({
    raster,
    elevation: true,
    ...at,
    size: 256,
    rescale: [100, 140],
    color_map: 'gray',
    hillshade: null,
    formula: null,
    bands: null,
    out: path.join(work, 'tile.png'),
    ...changes,
  });

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-tile-worker-'));
    raster = path.join(work, 'dsm.tif');
    const [z, x, y] = JSON.parse(python(MAKE_DSM, raster)) as number[];
    at = { z, x, y };
  });

  afterAll(async () => {
    worker.close();
    await rm(work, { recursive: true, force: true });
  });

  it('draws a tile of the raster in the style asked for', async () => {
    const out = path.join(work, 'a', 'tile.png');
    expect(await worker.render(request({ out, size: 512 }))).toBe(true);
    const [width, mode, grey] = JSON.parse(
      python('import sys, json\nfrom PIL import Image\nimg = Image.open(sys.argv[1])\nprint(json.dumps([img.width, img.mode, img.getpixel((0, 256))[0] < img.getpixel((511, 256))[0]]))', out),
    );
    expect([width, mode, grey]).toEqual([512, 'RGBA', true]); // darker in the west, where the ground is lower
  });

  it('refuses a colour map it does not know as a bad request, and draws nothing where the raster holds nothing', async () => {
    const refused = worker.render(request({ color_map: 'nope' }));
    await expect(refused).rejects.toBeInstanceOf(HttpError);
    await expect(refused).rejects.toMatchObject({ statusCode: 400 });
    const out = path.join(work, 'far.png');
    expect(await worker.render(request({ x: at.x + 5, out }))).toBe(false);
    await expect(readFile(out)).rejects.toThrow();
  });

  it('answers requests sent together, and starts again after it stopped', async () => {
    const outs = [1, 2, 3].map((i) => path.join(work, `many-${i}.png`));
    expect(await Promise.all(outs.map((out) => worker.render(request({ out }))))).toEqual([true, true, true]);
    worker.close();
    expect(await worker.render(request({ out: path.join(work, 'again.png') }))).toBe(true);
  });

  it('fails the pending tiles clearly when the engine cannot be started', async () => {
    const broken = new TileWorker(path.join(work, 'no-engine'));
    await expect(broken.render(request({}))).rejects.toThrow(/tile worker/);
    broken.close();
  });
});
