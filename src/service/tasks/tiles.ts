// Tile layers of a task (orthophoto, dsm, dtm), served from the MBTiles pyramids the engine made once: a tile is
// one indexed lookup in a read-only SQLite file, never a decoding of the GeoTIFF. Open files are kept, and
// known again by inode, so results that are replaced (a restart, an import) are read afresh.
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { notFound } from '../errors.ts';

const execFileAsync = promisify(execFile);

/** Each layer's raster and the pyramid made from it, under the assets folder. */
export const TILE_LAYERS = {
  orthophoto: { raster: 'odm_orthophoto/odm_orthophoto.tif', pyramid: 'odm_orthophoto/odm_orthophoto.mbtiles', elevation: false },
  dsm: { raster: 'odm_dem/dsm.tif', pyramid: 'odm_dem/dsm.mbtiles', elevation: true },
  dtm: { raster: 'odm_dem/dtm.tif', pyramid: 'odm_dem/dtm.mbtiles', elevation: true },
} as const;
export type TileLayer = keyof typeof TILE_LAYERS;

const exists = (file: string) => stat(file).then((info) => info.isFile(), () => false);

/**
 * Builds the pyramids that results from elsewhere lack (an ODM or WebODM all.zip) with the engine's `tiles`
 * command. A raster that cannot be tiled is logged and left without tiles: its tiles.json says so.
 */
export async function buildMissingPyramids(assetsDir: string, enginePath: string, log: (message: string) => void): Promise<void> {
  for (const [layer, { raster, pyramid, elevation }] of Object.entries(TILE_LAYERS)) {
    const source = path.join(assetsDir, raster);
    const target = path.join(assetsDir, pyramid);
    if (!(await exists(source)) || (await exists(target))) continue;
    const args = ['tiles', source, target, '--name', layer, ...(elevation ? ['--elevation'] : [])];
    try {
      await execFileAsync(enginePath, args, { timeout: 30 * 60_000, maxBuffer: 16 * 2 ** 20 });
    } catch (error) {
      const output = (error as { stdout?: string }).stdout?.trim().split('\n').at(-1) ?? '';
      log(`cannot build the ${layer} tiles: ${output || (error as Error).message}`);
    }
  }
}

export interface PyramidInfo {
  minzoom: number;
  maxzoom: number;
  bounds: [number, number, number, number];
  center: [number, number, number];
  valueRange: [number, number] | null;
  colorMap: string | null;
}

interface OpenPyramid {
  key: string;
  db: SqliteDatabase.Database;
  tile: SqliteDatabase.Statement<[number, number, number], { tile_data: Buffer }>;
  info: PyramidInfo;
}

const numbers = (text: string | undefined) => (text ?? '').split(',').map(Number);

function readInfo(db: SqliteDatabase.Database): PyramidInfo {
  const rows = db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[];
  const meta = Object.fromEntries(rows.map((row) => [row.name, row.value]));
  const bounds = numbers(meta.bounds) as PyramidInfo['bounds'];
  const minzoom = Number(meta.minzoom);
  const maxzoom = Number(meta.maxzoom);
  const center: PyramidInfo['center'] = meta.center
    ? (numbers(meta.center) as PyramidInfo['center'])
    : [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, minzoom];
  const range = meta.value_range ? (numbers(meta.value_range) as [number, number]) : null;
  return { minzoom, maxzoom, bounds, center, valueRange: range, colorMap: meta.color_map ?? null };
}

/** The tile's x and y range at zoom z that the WGS84 bounds cover. */
function tileRange(info: PyramidInfo, z: number) {
  const n = 2 ** z;
  const column = (lon: number) => Math.floor(((lon + 180) / 360) * n);
  const row = (lat: number) => {
    const rad = (lat * Math.PI) / 180;
    return Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n);
  };
  const [west, south, east, north] = info.bounds;
  return { x0: column(west), x1: column(east), y0: row(north), y1: row(south) };
}

export class TilePyramids {
  private readonly open = new Map<string, OpenPyramid>();

  constructor(private readonly maxOpen = 64) {}

  /** The pyramid of a layer in an assets folder, or undefined when the task has none. */
  async get(assetsDir: string, layer: TileLayer): Promise<OpenPyramid | undefined> {
    const file = path.join(assetsDir, TILE_LAYERS[layer].pyramid);
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const key = `${info.ino}:${info.mtimeMs}`;
    const cached = this.open.get(file);
    if (cached?.key === key) {
      // Most recently used last, so that the oldest is closed first.
      this.open.delete(file);
      this.open.set(file, cached);
      return cached;
    }
    cached?.db.close();
    const db = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
    const pyramid: OpenPyramid = {
      key,
      db,
      tile: db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?'),
      info: readInfo(db),
    };
    this.open.set(file, pyramid);
    for (const [oldest, entry] of this.open) {
      if (this.open.size <= this.maxOpen) break;
      entry.db.close();
      this.open.delete(oldest);
    }
    return pyramid;
  }

  /** The PNG of tile (z, x, y), null for a tile inside the layer that holds no data; a 404 outside it. */
  static tile(pyramid: OpenPyramid, z: number, x: number, y: number): Buffer | null {
    const { info } = pyramid;
    const range = tileRange(info, z);
    if (z < info.minzoom || z > info.maxzoom || x < range.x0 || x > range.x1 || y < range.y0 || y > range.y1) {
      throw notFound('Outside of bounds');
    }
    return pyramid.tile.get(z, x, 2 ** z - 1 - y)?.tile_data ?? null;
  }

  close(): void {
    for (const entry of this.open.values()) entry.db.close();
    this.open.clear();
  }
}
