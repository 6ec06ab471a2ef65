// WebODM's Plant Health layer on a real orthophoto (RGB with its alpha band, as the engine writes them, half crop
// and half bare soil): a vegetation index drawn by the engine in tiles of their own, the layer's metadata with
// WebODM's algorithms and the index's statistics, and the queries refused with a 400 that says why.
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEnginePath } from '../../src/protocol/engine.ts';
import { engineFormulas } from '../../src/service/tiles/formulas.ts';
import { tileStyle } from '../../src/service/tiles/query.ts';
import { type TestService, startService } from './helpers.ts';
import { importTask, orthophotoZip } from './taskhelpers.ts';

/** The orthophoto: 100 m square at 0.25 m, crop (60, 160, 60) in its west half and grey soil in its east half. */
const FIELD = `rgba = np.full((4, 400, 400), 255, np.uint8)
rgba[:3, :, :200] = np.array([60, 160, 60], np.uint8)[:, None, None]
rgba[:3, :, 200:] = 128`;

describe('plant health tiles and metadata', () => {
  let t: TestService;
  let base: string;
  /** The tile under a point of the crop, a quarter of the way across from the west, and that point's pixel. */
  let tile: string;
  let crop: [number, number];

  /** The crop's pixel (RGBA) in the tile drawn for that query, and the tile's ETag. */
  const pixelsOf = async (query: string) => {
    const reply = await fetch(new URL(`${base}/orthophoto/tiles/${tile}.png${query}`, t.url), { headers: { authorization: `JWT ${t.admin.token}` } });
    expect(reply.status, query).toBe(200);
    const { data, info } = await sharp(Buffer.from(await reply.arrayBuffer())).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const offset = (crop[1] * info.width + crop[0]) * 4;
    return { crop: [...data.subarray(offset, offset + 4)], etag: reply.headers.get('etag') };
  };

  beforeAll(async () => {
    t = await startService('sqlite');
    const project = (await t.admin.post('/api/projects/', { name: 'Farm' })).body.id as number;
    const done = await importTask(t.admin, project, orthophotoZip(t.dataDir, FIELD, 0.25), 'field');
    base = `/api/projects/${project}/tasks/${done.id}`;
    const layer = (await t.admin.get(`${base}/orthophoto/tiles.json`)).body;
    const [west, south, east, north] = layer.bounds as number[];
    const z = layer.maxzoom - 3; // the pyramid's own deepest zoom
    const lat = (((south + north) / 2) * Math.PI) / 180;
    const x = ((west + (east - west) / 4 + 180) / 360) * 2 ** z;
    const y = ((1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2) * 2 ** z;
    tile = `${z}/${Math.floor(x)}/${Math.floor(y)}`;
    crop = [Math.floor((x % 1) * 256), Math.floor((y % 1) * 256)];
  }, 120_000);
  afterAll(() => t?.close());

  it("draws a vegetation index in tiles of its own, cached apart from the orthophoto's colours", async () => {
    const plain = await pixelsOf('');
    const vari = await pixelsOf('?formula=VARI&bands=auto&color_map=rdylgn');
    const gli = await pixelsOf('?formula=GLI&bands=RGB&color_map=rdylgn');
    expect(plain.crop).toEqual([60, 160, 60, 255]);
    // VARI of the crop is 100 / 160: on RdYlGn over -1..1, a green of the ramp's upper part.
    const [red, green, blue, alpha] = vari.crop;
    expect(alpha).toBe(255);
    expect(green).toBeGreaterThan(red + 50);
    expect([red, green, blue]).not.toEqual([60, 160, 60]);
    expect(new Set([plain.etag, vari.etag, gli.etag]).size).toBe(3);
    const formulas = await engineFormulas(defaultEnginePath());
    const key = (formula: string) => tileStyle('orthophoto', { formula, bands: 'auto' }, formulas)?.key;
    expect(key('VARI')).not.toBe(key('GLI'));
    expect(key('VARI')).toBe(key('VARI'));
  });

  it('describes the orthophoto, and its index with WebODM\'s algorithms', async () => {
    const plain = (await t.admin.get(`${base}/orthophoto/metadata`)).body;
    expect(Object.keys(plain.statistics)).toEqual(['1', '2', '3']);
    expect(plain).toMatchObject({ algorithms: [], color_maps: [], auto_bands: { filter: '', match: null }, scheme: 'xyz' });
    expect(plain.tiles).toEqual([`${base}/orthophoto/tiles/{z}/{x}/{y}.png`]);

    const index = await t.admin.get(`${base}/orthophoto/metadata`, { formula: 'VARI', bands: 'auto' });
    expect(index.status).toBe(200);
    expect(index.body.auto_bands).toEqual({ filter: 'RGB', match: true });
    expect(index.body.algorithms).toContainEqual(expect.objectContaining({ id: 'VARI', filters: ['RGB'], help: expect.stringContaining('Visual Atmospheric') }));
    expect(index.body.color_maps.map((c: { key: string }) => c.key)).toContain('rdylgn');
    const stats = index.body.statistics['1'];
    expect([stats.min, stats.max]).toEqual([-1, 1]);
    expect(stats.percentiles[0]).toBeCloseTo(0, 3); // the soil
    expect(stats.percentiles[1]).toBeCloseTo(100 / 160, 3); // the crop: (G - R) / (G + R - B)
    expect(index.body.tiles).toEqual([`${base}/orthophoto/tiles/{z}/{x}/{y}.png?formula=VARI&bands=auto`]);
    const tilejson = (await t.admin.get(`${base}/orthophoto/tiles.json`, { formula: 'VARI', bands: 'auto', color_map: 'rdylgn' })).body;
    expect(tilejson.tiles).toEqual([`${base}/orthophoto/tiles/{z}/{x}/{y}.png?formula=VARI&bands=auto&color_map=rdylgn`]);
  });

  it('refuses an index it cannot draw, saying why', async () => {
    const refused = async (query: Record<string, string>) => {
      const tileReply = await t.admin.get(`${base}/orthophoto/tiles/${tile}.png`, query);
      const metadataReply = await t.admin.get(`${base}/orthophoto/metadata`, query);
      expect(metadataReply).toMatchObject({ status: 400, body: { detail: tileReply.body.detail } });
      expect(tileReply.status).toBe(400);
      return tileReply.body.detail as string;
    };
    expect(await refused({ formula: 'NDVI', bands: 'auto' })).toBe('NDVI needs the N band, which the orthophoto does not have (its bands are RGB).');
    expect(await refused({ formula: 'NDVI', bands: 'RGBN' })).toBe("bands RGBN names 4 bands, but the orthophoto's bands are RGB.");
    expect(await refused({ formula: 'VARI' })).toBe('formula and bands go together: give both, or neither.');
    expect(await refused({ bands: 'RGB' })).toBe('formula and bands go together: give both, or neither.');
    expect(await refused({ formula: 'NDVX', bands: 'RGB' })).toMatch(/^Unknown formula NDVX: the formulas are NDVI, NDYI, .*VARI/);
    expect(await refused({ formula: 'VARI', bands: 'RGX' })).toMatch(/^Unknown bands RGX: give auto, .* R, G, B, N, Re, L/);
    expect((await t.admin.get(`${base}/orthophoto/tiles/${tile}.png`, { formula: 'VARI', bands: 'auto', hillshade: 2 })).status).toBe(400);
  });
});
