// Heights straight from the task's DSM GeoTIFF: geotiff.js reads only the header, then the tile a point
// needs, over HTTP Range requests; proj4 takes map coordinates to the raster's projected CRS.
import { type GeoTIFFImage, fromUrl } from 'geotiff';
import proj4 from 'proj4';
import { epsgFromGeoKeys, proj4Definition } from './crs.ts';
import type { LonLat } from './geodesy.ts';
import { type Grid, type Station, type XY, isValid, stationsAlong, valueAt } from './raster.ts';

interface Level {
  image: GeoTIFFImage;
  originX: number;
  originY: number;
  res: number;
  resY: number;
  width: number;
  height: number;
}

export interface Dem {
  epsg: number;
  nodata: number | null;
  levels: Level[];
  toCrs: (point: LonLat) => XY;
}

const opened = new Map<string, Promise<Dem>>();

/** The DEM at the URL, opened once per page (its header and overview list are reused). */
export function openDem(url: string): Promise<Dem> {
  let dem = opened.get(url);
  if (!dem) {
    dem = loadDem(url);
    dem.catch(() => opened.delete(url));
    opened.set(url, dem);
  }
  return dem;
}

async function loadDem(url: string): Promise<Dem> {
  const tiff = await fromUrl(url);
  const first = await tiff.getImage(0);
  const epsg = epsgFromGeoKeys(first.getGeoKeys() ?? {});
  const definition = epsg === null ? null : proj4Definition(epsg);
  if (epsg === null || definition === null) {
    throw new Error(`The surface model is in a coordinate system this viewer cannot convert to (${epsg === null ? 'no EPSG code' : `EPSG:${epsg}`}).`);
  }
  const [originX, originY] = first.getOrigin();
  const levels: Level[] = [];
  const count = await tiff.getImageCount();
  for (let index = 0; index < count; index++) {
    const image = index === 0 ? first : await tiff.getImage(index);
    // Internal masks are images too (NewSubfileType bit 4); only reduced-resolution copies are levels.
    if (index > 0 && (Number(image.fileDirectory.getValue('NewSubfileType') ?? 0) & 4) !== 0) continue;
    const [resX, resY] = image.getResolution(first);
    levels.push({ image, originX, originY, res: Math.abs(resX), resY: Math.abs(resY), width: image.getWidth(), height: image.getHeight() });
  }
  levels.sort((p, q) => p.res - q.res);
  const converter = proj4('EPSG:4326', definition);
  return { epsg, nodata: first.getGDALNoData(), levels, toCrs: (point) => converter.forward(point) as XY };
}

async function readGrid(dem: Dem, level: Level, window: [number, number, number, number]): Promise<Grid> {
  const [col0, row0, col1, row1] = window;
  const bands = await level.image.readRasters({ window, samples: [0] });
  const values = bands[0];
  if (typeof values === 'number') throw new Error('The surface model returned no pixels.');
  return {
    values,
    width: col1 - col0,
    height: row1 - row0,
    originX: level.originX + col0 * level.res,
    originY: level.originY - row0 * level.resY,
    resX: level.res,
    resY: level.resY,
    nodata: dem.nodata,
  };
}

/** The height of the full-resolution pixel under the point; null outside the model or on nodata. */
export async function elevationAt(dem: Dem, point: LonLat): Promise<number | null> {
  const [x, y] = dem.toCrs(point);
  const level = dem.levels[0];
  const col = Math.floor((x - level.originX) / level.res);
  const row = Math.floor((level.originY - y) / level.resY);
  if (col < 0 || row < 0 || col >= level.width || row >= level.height) return null;
  const grid = await readGrid(dem, level, [col, row, col + 1, row + 1]);
  const value = grid.values[0];
  return isValid(grid, value) ? value : null;
}

/** Most pixels a profile reads in one window: a long line is read from a coarser level. */
const MAX_PROFILE_PIXELS = 4_000_000;

export interface ProfilePoint {
  /** Metres along the line (in the model's CRS). */
  distance: number;
  height: number | null;
}

/** Heights at `count` points evenly spaced along the path, from one read of the window it crosses. */
export async function profileAlong(dem: Dem, path: LonLat[], count: number): Promise<ProfilePoint[]> {
  const stations: Station[] = stationsAlong(path.map(dem.toCrs), count);
  const xs = stations.map(({ xy }) => xy[0]);
  const ys = stations.map(({ xy }) => xy[1]);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const level = dem.levels.find((l) => ((maxX - minX) / l.res + 2) * ((maxY - minY) / l.resY + 2) <= MAX_PROFILE_PIXELS) ?? dem.levels[dem.levels.length - 1];
  const clamp = (value: number, size: number) => Math.min(size, Math.max(0, value));
  const window: [number, number, number, number] = [
    clamp(Math.floor((minX - level.originX) / level.res), level.width),
    clamp(Math.floor((level.originY - maxY) / level.resY), level.height),
    clamp(Math.floor((maxX - level.originX) / level.res) + 1, level.width),
    clamp(Math.floor((level.originY - minY) / level.resY) + 1, level.height),
  ];
  if (window[2] <= window[0] || window[3] <= window[1]) return stations.map(({ distance }) => ({ distance, height: null }));
  const grid = await readGrid(dem, level, window);
  return stations.map(({ xy, distance }) => ({ distance, height: valueAt(grid, xy) }));
}
