// Tile layers of a task (orthophoto, dsm, dtm), served from the MBTiles pyramids the engine made once: a tile in
// the default style is one indexed lookup in a read-only SQLite file, never a decoding of the GeoTIFF. Open files
// are kept, and known again by inode, so results that are replaced (a restart, an import) are read afresh.
import { execFile } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { engineFailure } from '../../protocol/engine.ts';
import { notFound } from '../errors.ts';
import type { TaskFolder } from '../layout.ts';
import { TILE, type TileLookup, drawFrom, drawOverview, emptyTile, worldPixel } from './images.ts';
import type { PlantIndex, TileStyle } from './query.ts';
import { TileCache } from './cache.ts';
import { type FormulaList, engineFormulas } from './formulas.ts';
import { type ExportCheck, type ExportCheckRequest, type RasterMetadata, type TilePoolOptions, TileWorkerPool } from './worker.ts';

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
 * command. A raster that cannot be tiled is logged and left without tiles: its tiles.json says so. An aborted
 * signal kills the engine and throws its reason.
 */
export async function buildMissingPyramids(
  assetsDir: string,
  enginePath: string,
  signal: AbortSignal,
  log: (message: string) => void,
): Promise<void> {
  for (const [layer, { raster, pyramid, elevation }] of Object.entries(TILE_LAYERS)) {
    signal.throwIfAborted();
    const source = path.join(assetsDir, raster);
    const target = path.join(assetsDir, pyramid);
    if (!(await exists(source)) || (await exists(target))) continue;
    const args = ['tiles', source, target, '--name', layer, ...(elevation ? ['--elevation'] : [])];
    try {
      await execFileAsync(enginePath, args, { timeout: 30 * 60_000, maxBuffer: 16 * 2 ** 20, signal });
    } catch (error) {
      signal.throwIfAborted();
      log(`cannot build the ${layer} tiles: ${engineFailure(error)}`);
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

export interface OpenPyramid {
  /** Changes when the file is replaced. */
  key: string;
  /** When the file was last seen to be this one. */
  checkedMs: number;
  info: PyramidInfo;
  lookup: TileLookup;
  close(): void;
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
  const [west, south, east, north] = info.bounds;
  const [x0, y0] = worldPixel(west, north, z).map((pixel) => Math.floor(pixel / TILE));
  const [x1, y1] = worldPixel(east, south, z).map((pixel) => Math.floor(pixel / TILE));
  return { x0, x1, y0, y1 };
}

/** Zooms served beyond the pyramid's, both ways (as WebODM): enlarged below its deepest, shrunk above its top. */
export const EXTRA_ZOOMS = 3;

/** The zooms a layer is served at. */
export function servedZooms(info: PyramidInfo): { minzoom: number; maxzoom: number } {
  return { minzoom: Math.max(0, info.minzoom - EXTRA_ZOOMS), maxzoom: info.maxzoom + EXTRA_ZOOMS };
}

const RECHECK_MS = 1000;

export class TilePyramids {
  private readonly open = new Map<string, OpenPyramid>();

  constructor(private readonly maxOpen = 64) {}

  /** The pyramid of a layer in an assets folder, or undefined when the task has none. */
  async get(assetsDir: string, layer: TileLayer): Promise<OpenPyramid | undefined> {
    const file = path.join(assetsDir, TILE_LAYERS[layer].pyramid);
    const recent = this.open.get(file);
    // A map asks for dozens of tiles a second: whether the file was replaced is looked at once a second.
    if (recent && performance.now() - recent.checkedMs < RECHECK_MS) return recent;
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const key = `${info.ino}:${info.mtimeMs}`;
    const cached = this.open.get(file);
    if (cached?.key === key) {
      cached.checkedMs = performance.now();
      // Most recently used last, so that the oldest is closed first.
      this.open.delete(file);
      this.open.set(file, cached);
      return cached;
    }
    cached?.close();
    const db = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
    const tile = db.prepare<[number, number, number], { tile_data: Buffer }>('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?');
    const pyramid: OpenPyramid = {
      key,
      checkedMs: performance.now(),
      info: readInfo(db),
      // MBTiles rows are in the TMS order: counted from the south.
      lookup: (z, x, y) => tile.get(z, x, 2 ** z - 1 - y)?.tile_data ?? null,
      close: () => db.close(),
    };
    this.open.set(file, pyramid);
    for (const [oldest, entry] of this.open) {
      if (this.open.size <= this.maxOpen) break;
      entry.close();
      this.open.delete(oldest);
    }
    return pyramid;
  }

  close(): void {
    for (const entry of this.open.values()) entry.close();
    this.open.clear();
  }
}

/** Recently made tiles (mosaics, enlargements) by key, the least recently used dropped beyond a byte budget. */
class RecentTiles {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string): Buffer | undefined {
    const data = this.entries.get(key);
    if (data) {
      this.entries.delete(key);
      this.entries.set(key, data);
    }
    return data;
  }

  set(key: string, data: Buffer): void {
    this.entries.set(key, data);
    this.bytes += data.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.length;
    }
  }
}

export interface TileRequest {
  layer: TileLayer;
  z: number;
  x: number;
  y: number;
  size: number;
  style: TileStyle | null;
}

export interface TileSettings extends TilePoolOptions {
  dataDir: string;
  /** Bound of the tiles kept on disk in users' styles (TILE_CACHE_MB). */
  cacheBytes: number;
}

export interface TileImage {
  data: Buffer;
  etag: string;
}

/**
 * Every tile of a layer: the pyramid's own by lookup; other sizes and zooms made from it (and kept a while in
 * memory); other styles drawn by the engine's tile worker from the GeoTIFF, kept on disk in the task's tile cache.
 * The worker also describes layers, and the engine lists the formulas of vegetation indices.
 */
export class TileService {
  readonly pyramids = new TilePyramids();
  private readonly recent = new RecentTiles(64 * 2 ** 20);
  private readonly worker: TileWorkerPool;
  private readonly cache: TileCache;
  private readonly drawing = new Map<string, Promise<Buffer | null>>();
  private formulaList: Promise<FormulaList> | undefined;

  constructor(
    private readonly enginePath: string,
    settings: TileSettings,
  ) {
    this.worker = new TileWorkerPool(enginePath, settings);
    this.cache = new TileCache(settings.dataDir, settings.cacheBytes);
  }

  /** The engine's formulas, asked once (again after a failure). */
  formulas(): Promise<FormulaList> {
    this.formulaList ??= engineFormulas(this.enginePath).catch((error: unknown) => {
      this.formulaList = undefined;
      throw error;
    });
    return this.formulaList;
  }

  /** The statistics and choices of a layer's raster, or of a vegetation index of the orthophoto. */
  metadata(folder: TaskFolder, layer: TileLayer, index: PlantIndex | null): Promise<RasterMetadata> {
    const { raster, elevation } = TILE_LAYERS[layer];
    return this.worker.describe({ raster: path.join(folder.assets, raster), elevation, formula: index?.formula ?? null, bands: index?.bands ?? null });
  }

  /** Whether an export can be made, and the product's own EPSG code (the engine's tile workers answer). */
  checkExport(request: ExportCheckRequest): Promise<ExportCheck> {
    return this.worker.checkExport(request);
  }

  async tile(folder: TaskFolder, pyramid: OpenPyramid, request: TileRequest): Promise<TileImage> {
    const { info } = pyramid;
    const { layer, z, x, y, size, style } = request;
    const served = servedZooms(info);
    const range = tileRange(info, z);
    if (z < served.minzoom || z > served.maxzoom || x < range.x0 || x > range.x1 || y < range.y0 || y > range.y1) {
      throw notFound('Outside of bounds');
    }
    const name = `${z}-${x}-${y}@${size}`;
    const etag = `"${pyramid.key}-${style?.key ?? 'default'}-${name}"`;
    let data: Buffer | null;
    if (style) {
      data = await this.drawn(folder, layer, style, name, { z, x, y, size });
    } else if (size === TILE && z >= info.minzoom && z <= info.maxzoom) {
      data = pyramid.lookup(z, x, y);
    } else {
      data = await this.made(`${pyramid.key}:${layer}:${name}`, pyramid, { z, x, y, size });
    }
    return { data: data ?? (await emptyTile(size)), etag };
  }

  /** The layer as a thumbnail at most `size` px a side, PNG or WebP; kept a while in memory. */
  async thumbnail(pyramid: OpenPyramid, size: number, format: 'png' | 'webp'): Promise<Buffer> {
    const key = `${pyramid.key}:thumbnail:${size}.${format}`;
    const known = this.recent.get(key);
    if (known) return known;
    const image = await drawOverview(pyramid.lookup, pyramid.info, size);
    const data = await (format === 'webp' ? image.webp({ quality: 80 }) : image.png({ compressionLevel: 6 })).toBuffer();
    this.recent.set(key, data);
    return data;
  }

  close(): void {
    this.pyramids.close();
    this.worker.close();
  }

  /** A tile of another size or zoom, from the pyramid's tiles at the zoom whose pixels match it best. */
  private async made(key: string, pyramid: OpenPyramid, at: { z: number; x: number; y: number; size: number }): Promise<Buffer | null> {
    const known = this.recent.get(key);
    if (known) return known;
    const { minzoom, maxzoom } = pyramid.info;
    const level = Math.min(maxzoom, Math.max(minzoom, at.z + Math.log2(at.size / TILE)));
    const data = await drawFrom(pyramid.lookup, level, at.z, at.x, at.y, at.size);
    if (data) this.recent.set(key, data);
    return data;
  }

  /** A tile in a style of the user's: from the tile cache, or drawn once (concurrent requests share the drawing). */
  private async drawn(folder: TaskFolder, layer: TileLayer, style: TileStyle, name: string, at: { z: number; x: number; y: number; size: number }) {
    const file = path.join(folder.tileCache, layer, style.key, `${name}.png`);
    const cached = await readFile(file).catch(() => undefined);
    if (cached) {
      this.cache.touch(file);
      return cached.length > 0 ? cached : null;
    }
    let drawing = this.drawing.get(file);
    if (!drawing) {
      drawing = this.draw(folder, layer, style, file, at).finally(() => this.drawing.delete(file));
      this.drawing.set(file, drawing);
    }
    return drawing;
  }

  private async draw(folder: TaskFolder, layer: TileLayer, style: TileStyle, file: string, at: { z: number; x: number; y: number; size: number }) {
    const { raster, elevation } = TILE_LAYERS[layer];
    const written = await this.worker.render({
      raster: path.join(folder.assets, raster),
      elevation,
      ...at,
      rescale: style.rescale,
      color_map: style.colorMap,
      hillshade: style.hillshade,
      formula: style.index?.formula ?? null,
      bands: style.index?.bands ?? null,
      out: file,
    });
    if (written) {
      const data = await readFile(file);
      await this.cache.add(file, data.length);
      return data;
    }
    // An empty file marks a tile where the raster holds nothing, so it is not drawn again.
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, '');
    await this.cache.add(file, 0);
    return null;
  }
}
