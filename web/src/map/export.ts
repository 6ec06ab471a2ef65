// Exports of a task's layers through WebODM's API: which layers and formats a task offers, the request body for
// a CRS choice and a style (an elevation model's colours, the orthophoto's vegetation index as the map draws it),
// and running one (start, poll /api/workers/check until ready) to the URL its file downloads from.
import { type Task, api, taskPath } from '../api.ts';
import { LAYER_KINDS, type LayerKind } from './layers.ts';
import { type PlantStyle, decimalsFor, formatValue, plantQuery, unitOf } from './plant.ts';
import { type JobDone, type Started, waitForJob } from './jobs.ts';

export type ExportLayer = LayerKind | 'georeferenced_model';

export const EXPORT_LAYERS: { layer: ExportLayer; asset: string; label: string }[] = [
  ...LAYER_KINDS.map(({ kind, asset, label }) => ({ layer: kind, asset, label })),
  { layer: 'georeferenced_model', asset: 'georeferenced_model.laz', label: 'Point cloud' },
];

const RASTER_FORMATS = [
  { format: 'gtiff', label: 'GeoTIFF (values)' },
  { format: 'gtiff-rgb', label: 'GeoTIFF (as drawn: RGB)' },
  { format: 'jpg', label: 'JPEG' },
  { format: 'png', label: 'PNG' },
  { format: 'kmz', label: 'KMZ (Google Earth)' },
];
const POINT_FORMATS = [
  { format: 'laz', label: 'LAZ' },
  { format: 'las', label: 'LAS' },
  { format: 'ply', label: 'PLY' },
  { format: 'csv', label: 'CSV' },
];

export function exportLayers(task: Task): { layer: ExportLayer; label: string }[] {
  return EXPORT_LAYERS.filter(({ asset }) => task.available_assets.includes(asset));
}

/** An elevation model's contour lines, drawn by the service in WebODM's formats: `contours:` and the format. */
const CONTOUR_FORMATS = [
  { format: 'contours:GPKG', label: 'Contours: GeoPackage' },
  { format: 'contours:DXF', label: 'Contours: DXF (CAD)' },
  { format: 'contours:ESRI Shapefile', label: 'Contours: Shapefile (zipped)' },
  { format: 'contours:GeoJSON', label: 'Contours: GeoJSON' },
];

export function exportFormats(layer: ExportLayer): { format: string; label: string }[] {
  if (layer === 'georeferenced_model') return POINT_FORMATS;
  return layer === 'dsm' || layer === 'dtm' ? [...RASTER_FORMATS, ...CONTOUR_FORMATS] : RASTER_FORMATS;
}

export const isContours = (format: string) => format.startsWith('contours:');

/** Whether the format draws the raster in colour; `gtiff` keeps its values (an index: one band of them). */
const drawsColours = (format: string) => format !== 'gtiff' && !isContours(format);

/** Whether the format draws the layer in colour: an elevation model then takes a colour map and a hillshade. */
export const drawsElevation = (layer: ExportLayer, format: string) => (layer === 'dsm' || layer === 'dtm') && drawsColours(format);

export type CrsChoice = { kind: 'task' } | { kind: 'epsg'; code: string } | { kind: 'proj'; text: string };

export interface ExportStyle {
  colorMap: string;
  hillshade: boolean;
  /** The orthophoto's vegetation index, to export it as the map draws it; null: the orthophoto's own colours. */
  plant: PlantStyle | null;
  /** Contours: metres between them and the lines' tolerance, as typed. */
  contours: { interval: string; simplify: string };
}

export type ExportBody = Record<string, string | number>;

/** WebODM's hillshade exaggeration for an export drawn with one (0: none). */
const EXPORT_HILLSHADE = 6;

/** The body of POST .../{layer}/export (or .../contours), or what is wrong with the choice in words. */
export function exportBody(layer: ExportLayer, format: string, crs: CrsChoice, style: ExportStyle): ExportBody | { error: string } {
  const code = crs.kind === 'epsg' ? crs.code.trim().replace(/^epsg:/i, '') : null;
  if (code !== null && !/^\d{1,9}$/.test(code)) return { error: 'An EPSG code is a whole number, such as 32633 or 4326.' };
  if (isContours(format)) return contoursBody(format, code, crs.kind === 'proj', style.contours);
  const body: ExportBody = { format };
  if (code !== null) {
    body.epsg = code;
  } else if (crs.kind === 'proj') {
    if (!crs.text.trim()) return { error: 'Type a PROJ string, such as +proj=utm +zone=33 +datum=WGS84.' };
    body.proj = crs.text.trim();
  }
  if (drawsElevation(layer, format)) {
    body.color_map = style.colorMap;
    body.hillshade = String(style.hillshade ? EXPORT_HILLSHADE : 0);
  }
  if (layer === 'orthophoto' && style.plant) Object.assign(body, indexFields(style.plant, format));
  return body;
}

function contoursBody(format: string, epsg: string | null, proj: boolean, typed: ExportStyle['contours']): ExportBody | { error: string } {
  const interval = Number(typed.interval);
  const simplify = typed.simplify.trim() === '' ? 0 : Number(typed.simplify);
  if (!(interval > 0)) return { error: 'The contour interval is a number of metres above 0, such as 1 or 0.5.' };
  if (!(simplify >= 0)) return { error: 'The tolerance is a number of metres, 0 or more.' };
  if (proj) return { error: "Contours take an EPSG code or the task's own coordinate system." };
  return { format: format.slice('contours:'.length), interval, simplify, ...(epsg !== null ? { epsg: Number(epsg) } : {}) };
}

/**
 * WebODM's fields of an index export, with the values the map's tiles carry: formula and bands always; the colour
 * map and its range only where the format draws colours.
 */
function indexFields(plant: PlantStyle, format: string): Record<string, string> {
  const { formula, bands, rescale, color_map } = plantQuery(plant);
  return drawsColours(format) ? { formula, bands, rescale, color_map } : { formula, bands };
}

/**
 * What an index export holds, in words: "NDVI (bands auto), rdylgn over 0.18–0.84" where the format draws colours,
 * "NDVI (bands auto) values" where it keeps them. The range to a tenth of its span, enough to tell its ends apart.
 */
export function describeIndex(plant: PlantStyle, format: string): string {
  const name = `${plant.formula} (bands ${plant.bands})`;
  if (!drawsColours(format)) return `${name} values`;
  const [low, high] = plant.rescale;
  const decimals = decimalsFor((high - low) / 10);
  const unit = unitOf(plant.formula);
  return `${name}, ${plant.colorMap} over ${formatValue(low, decimals)}–${formatValue(high, decimals, unit)}`;
}

/** Where the finished export downloads from, and its file name. */
export type ExportDone = JobDone;

/** Starts an export (contours: their own route) and polls it to the end; a failed job throws its error. */
export async function runExport(task: Task, layer: ExportLayer, format: string, body: ExportBody, signal: AbortSignal, pollMs = 1000): Promise<ExportDone> {
  const route = isContours(format) ? 'contours' : 'export';
  const started = await api<Started>(`${taskPath(task.project, task.id)}/${layer}/${route}`, { method: 'POST', body, signal });
  return waitForJob(started, signal, pollMs);
}
