// What an export request asks, read as WebODM reads it (app/api/tasks.py, Export): the layer's formats, an EPSG
// code or a PROJ string, and for colour exports the colour map, hillshade, rescale and a vegetation index of the
// orthophoto. Pure: bad input is a 400 that says what is wrong, in WebODM's words where it has them.
import { type Static, Type } from '@sinclair/typebox';
import { HttpError } from '../errors.ts';
import { downloadName } from '../tasks/assets.ts';

export type ExportProduct = 'orthophoto' | 'elevation' | 'pointcloud';

/** The layers that export, the asset each is made from, and how the engine reads it. */
export const EXPORT_LAYERS = {
  orthophoto: { asset: 'orthophoto.tif', product: 'orthophoto' },
  dsm: { asset: 'dsm.tif', product: 'elevation' },
  dtm: { asset: 'dtm.tif', product: 'elevation' },
  georeferenced_model: { asset: 'georeferenced_model.laz', product: 'pointcloud' },
} as const satisfies Record<string, { asset: string; product: ExportProduct }>;
export type ExportLayer = keyof typeof EXPORT_LAYERS;

const RASTER_FORMATS = ['gtiff', 'gtiff-rgb', 'jpg', 'png', 'kmz'] as const;
const POINT_FORMATS = ['laz', 'las', 'ply', 'csv'] as const;
type ExportFormat = (typeof RASTER_FORMATS)[number] | (typeof POINT_FORMATS)[number];
const EXTENSIONS: Record<ExportFormat, string> = {
  gtiff: 'tif',
  'gtiff-rgb': 'tif',
  jpg: 'jpg',
  png: 'png',
  kmz: 'kmz',
  laz: 'laz',
  las: 'las',
  ply: 'ply',
  csv: 'csv',
};
/** WebODM's style of an elevation model drawn in colour when the request names none. */
const DEM_COLOR_MAP = 'viridis';
const DEM_HILLSHADE = 6;

const Text = (maxLength: number, description: string) => Type.Optional(Type.String({ maxLength, description }));

export const ExportBody = Type.Object({
  format: Text(16, `Rasters: ${RASTER_FORMATS.join(', ')} (default gtiff); the point cloud: ${POINT_FORMATS.join(', ')} (default laz)`),
  epsg: Type.Optional(Type.Union([Type.Integer(), Type.String({ maxLength: 32 })], { description: "The EPSG code of the CRS to write (default: the task's own)" })),
  proj: Text(4096, 'A PROJ string (or WKT) of the CRS to write, instead of epsg'),
  formula: Text(64, 'Orthophoto: a vegetation index (such as VARI), with bands'),
  bands: Text(16, 'Orthophoto: the band order the formula reads (such as RGB), or auto'),
  rescale: Text(64, 'low,high: the values the colours span (colour formats)'),
  color_map: Text(64, 'The colour map of an elevation model (default viridis) or of an index'),
  hillshade: Type.Optional(Type.Union([Type.Number(), Type.String({ maxLength: 32 })], { description: 'Elevation models: the hillshade exaggeration (default 6; 0 for none)' })),
});
export type ExportBody = Static<typeof ExportBody>;

export interface ExportPlan {
  layer: ExportLayer;
  product: ExportProduct;
  format: ExportFormat;
  epsg: number | null;
  proj: string | null;
  formula: string | null;
  bands: string | null;
  rescale: [number, number] | null;
  colorMap: string | null;
  hillshade: number | null;
}

const badRequest = (detail: string) => new HttpError(400, { detail });

/** WebODM takes an empty field as no field. */
function given(value: string | number | undefined): string | null {
  if (value === undefined) return null;
  const text = String(value).trim();
  return text === '' ? null : text;
}

function parseEpsg(value: string | null): number | null {
  if (value === null) return null;
  if (!/^\d{1,9}$/.test(value)) throw badRequest(`Invalid EPSG code: ${value}`);
  return Number(value);
}

function parseRescale(value: string | null): [number, number] | null {
  if (value === null) return null;
  const parts = value.replaceAll('%2C', ',').split(',').map(Number);
  if (parts.length !== 2 || !parts.every(Number.isFinite)) throw badRequest(`Invalid rescale value: ${value}`);
  return [parts[0], parts[1]];
}

function parseHillshade(value: string | null): number | null {
  if (value === null) return null;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 0) throw badRequest(`Invalid hillshade value: ${value}`);
  return number;
}

/** The export asked of a layer; a 400 for anything it cannot be. */
export function exportPlan(layer: ExportLayer, body: ExportBody): ExportPlan {
  const { product } = EXPORT_LAYERS[layer];
  const pointcloud = product === 'pointcloud';
  const formats: readonly string[] = pointcloud ? POINT_FORMATS : RASTER_FORMATS;
  const format = given(body.format) ?? (pointcloud ? 'laz' : 'gtiff');
  if (!formats.includes(format)) throw badRequest(`Unsupported format: ${format} (${layer} exports as ${formats.join(', ')})`);
  const epsg = parseEpsg(given(body.epsg));
  const proj = given(body.proj);
  if (epsg !== null && proj !== null) throw badRequest('Give epsg or proj, not both');
  const formula = given(body.formula);
  const bands = given(body.bands);
  if ((formula === null) !== (bands === null)) throw badRequest('Both formula and bands parameters are required');
  if (formula !== null && product !== 'orthophoto') throw badRequest('formula and bands apply to the orthophoto only');
  const colour = !pointcloud && format !== 'gtiff';
  const elevationColour = colour && product === 'elevation';
  const colorMap = colour ? (given(body.color_map) ?? (elevationColour ? DEM_COLOR_MAP : null)) : null;
  const hillshade = elevationColour ? (parseHillshade(given(body.hillshade)) ?? DEM_HILLSHADE) : null;
  return {
    layer,
    product,
    format: format as ExportFormat,
    epsg,
    proj,
    formula,
    bands,
    rescale: colour ? parseRescale(given(body.rescale)) : null,
    colorMap,
    hillshade,
  };
}

/** WebODM's download name: the task's name, the layer, the formula, the format's extension. */
export function exportFilename(taskName: string, plan: ExportPlan): string {
  return downloadName(taskName, `${plan.layer}${plan.formula ? `-${plan.formula}` : ''}.${EXTENSIONS[plan.format]}`);
}

export function exportExtension(plan: ExportPlan): string {
  return EXTENSIONS[plan.format];
}

/** Whether the export would be the asset as it is (its own format, its own CRS), so that its download will do. */
export function needsNoWork(plan: ExportPlan, ownEpsg: number | null): boolean {
  const ownFormat = plan.product === 'pointcloud' ? 'laz' : 'gtiff';
  const ownCrs = plan.proj === null && (plan.epsg === null || plan.epsg === ownEpsg);
  return plan.format === ownFormat && ownCrs && plan.formula === null;
}

/** The engine's command line (`aeromap-engine export`) for the plan. */
export function engineArguments(plan: ExportPlan, source: string, output: string): string[] {
  const args = ['export', source, output, '--kind', plan.product, '--format', plan.format];
  // name=value, so that a value that starts with a dash is not read as a flag.
  if (plan.epsg !== null) args.push(`--epsg=${plan.epsg}`);
  if (plan.proj !== null) args.push(`--proj=${plan.proj}`);
  if (plan.formula !== null && plan.bands !== null) args.push(`--formula=${plan.formula}`, `--bands=${plan.bands}`);
  if (plan.colorMap !== null) args.push(`--color-map=${plan.colorMap}`);
  if (plan.hillshade !== null) args.push(`--hillshade=${plan.hillshade}`);
  if (plan.rescale !== null) args.push(`--rescale=${plan.rescale.join(',')}`);
  return args;
}
