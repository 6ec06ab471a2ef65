// Tiles made from the pyramid's own: mosaics for 512 px and @2x, enlargements beyond the native zoom and
// reductions above the top, checked pixel by pixel on tiles of known colours; and the query WebODM's map sends.
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/service/errors.ts';
import { type TileLookup, drawFrom, emptyTile } from '../../src/service/tiles/images.ts';
import { tileSize, tileStyle } from '../../src/service/tiles/query.ts';

type Rgba = [number, number, number, number];

const solid = (colour: Rgba) =>
  sharp({ create: { width: 256, height: 256, channels: 4, background: { r: colour[0], g: colour[1], b: colour[2], alpha: colour[3] / 255 } } })
    .png()
    .toBuffer();

async function pixels(png: Buffer): Promise<{ width: number; at: (x: number, y: number) => number[] }> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, at: (x, y) => [...data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 4)] };
}

describe('tiles made from the pyramid', () => {
  // A pyramid with two zooms: at 10 one tile (grey); at 11 its four children, red, green, blue and transparent.
  const tiles = new Map<string, Buffer>();
  const lookup: TileLookup = (z, x, y) => tiles.get(`${z}/${x}/${y}`) ?? null;
  beforeAll(async () => {
    tiles.set('10/5/7', await solid([128, 128, 128, 255]));
    tiles.set('11/10/14', await solid([255, 0, 0, 255]));
    tiles.set('11/11/14', await solid([0, 255, 0, 255]));
    tiles.set('11/10/15', await solid([0, 0, 255, 255]));
  });

  it('puts the four tiles under a 512 px tile in their places', async () => {
    const image = await pixels((await drawFrom(lookup, 11, 10, 5, 7, 512)) as Buffer);
    expect(image.width).toBe(512);
    expect(image.at(10, 10)).toEqual([255, 0, 0, 255]);
    expect(image.at(500, 10)).toEqual([0, 255, 0, 255]);
    expect(image.at(10, 500)).toEqual([0, 0, 255, 255]);
    expect(image.at(500, 500)[3]).toBe(0);
  });

  it('enlarges the right quarter of the deepest tile beyond the native zoom', async () => {
    // Zoom 12, x 21, y 28 lies in the north-east quarter of 11/10/14, whose quarter is red throughout.
    const enlarged = await pixels((await drawFrom(lookup, 11, 12, 21, 28, 256)) as Buffer);
    expect(enlarged.at(0, 0)).toEqual([255, 0, 0, 255]);
    expect(enlarged.at(255, 255)).toEqual([255, 0, 0, 255]);
    expect(await drawFrom(lookup, 11, 12, 23, 31, 256)).toBeNull(); // under the transparent child: nothing held
  });

  it('shrinks the top tile into its place above the pyramid', async () => {
    // Zoom 9, x 2, y 3: tile 10/5/7 is its south-east quarter.
    const above = await pixels((await drawFrom(lookup, 10, 9, 2, 3, 256)) as Buffer);
    expect(above.at(200, 200)).toEqual([128, 128, 128, 255]);
    expect(above.at(50, 50)[3]).toBe(0);
  });

  it('answers null where the pyramid holds nothing, and empty tiles are transparent', async () => {
    expect(await drawFrom(lookup, 11, 10, 6, 7, 512)).toBeNull();
    const empty = await pixels(await emptyTile(512));
    expect(empty.width).toBe(512);
    expect(empty.at(100, 100)[3]).toBe(0);
  });
});

describe('the tile query', () => {
  it('reads the size from size= and @2x', () => {
    expect(tileSize({}, '12')).toBe(256);
    expect(tileSize({ size: 512 }, '12.png')).toBe(512);
    expect(tileSize({}, '12@2x.png')).toBe(512);
    expect(tileSize({ size: 512 }, '12@2x')).toBe(1024);
  });

  it('takes no style parameter as the pyramid style, whatever else the map sends', () => {
    expect(tileStyle('dsm', { cache: '123' } as never)).toBeNull();
  });

  it('names each style by its parameters, and refuses what cannot be drawn', () => {
    const jet = tileStyle('dsm', { rescale: '150,170.5', color_map: 'JET', hillshade: 6 });
    expect(jet).toMatchObject({ rescale: [150, 170.5], colorMap: 'jet', hillshade: 6 });
    expect(tileStyle('dsm', { rescale: '150,170.5', color_map: 'jet', hillshade: 6 })?.key).toBe(jet?.key);
    expect(tileStyle('dsm', { rescale: '150,171', color_map: 'jet', hillshade: 6 })?.key).not.toBe(jet?.key);
    expect(() => tileStyle('dsm', { rescale: '5,1' })).toThrow(HttpError);
    expect(() => tileStyle('orthophoto', { color_map: 'jet' })).toThrow(/dsm and dtm/);
    expect(tileStyle('orthophoto', { rescale: '20,200' })?.rescale).toEqual([20, 200]);
  });

  it('reads a vegetation index from formula and bands, checked against the engine\'s formulas', () => {
    const formulas = { formulas: ['NDVI', 'VARI'], bands: ['R', 'G', 'B', 'N', 'Re'] };
    const ndre = tileStyle('orthophoto', { formula: 'NDVI', bands: 'GRReN', color_map: 'RdYlGn' }, formulas);
    expect(ndre).toMatchObject({ index: { formula: 'NDVI', bands: 'GRReN' }, colorMap: 'rdylgn', rescale: null });
    expect(tileStyle('orthophoto', { formula: 'VARI', bands: 'auto' }, formulas)?.key).not.toBe(ndre?.key);
    // WebODM's map leaves empty parameters in its URLs: they ask for nothing.
    expect(tileStyle('orthophoto', { formula: '', bands: '' })).toBeNull();
    expect(tileStyle('orthophoto', { bands: '', rescale: '0,255' })?.index).toBeNull();
    expect(() => tileStyle('orthophoto', { formula: 'VARI', bands: '' }, formulas)).toThrow(/go together/);
    expect(() => tileStyle('dsm', { formula: 'VARI', bands: 'RGB' }, formulas)).toThrow(/apply to the orthophoto, not to the dsm/);
    expect(() => tileStyle('orthophoto', { formula: 'VARI', bands: 'RGBRe2' }, formulas)).toThrow(/Unknown bands RGBRe2/);
    expect(() => tileStyle('orthophoto', { formula: 'VARI', bands: 'RRG' }, formulas)).toThrow(/Unknown bands RRG/);
  });
});
