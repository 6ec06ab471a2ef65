// What a volume or contours request asks, as WebODM's measure and contours plugins ask it: a polygon and a base for
// a volume (on the DSM or the DTM), an interval, a tolerance, a format and a CRS for contours; and the earlier task a
// difference is taken from. Pure: bad input is a 400 that says what is wrong; the engine's command line for what is
// asked.
import { type Static, Type } from '@sinclair/typebox';
import { HttpError } from '../errors.ts';
import { downloadName } from '../tasks/assets.ts';

export const SURFACES = { dsm: 'dsm.tif', dtm: 'dtm.tif' } as const;
export type Surface = keyof typeof SURFACES;
export const BASES = ['plane', 'triangulate', 'average', 'highest', 'lowest', 'custom'] as const;
/** WebODM's contour formats, and the extension of each one's download (a Shapefile's files travel zipped). */
export const CONTOUR_FORMATS = { GeoJSON: 'geojson', GPKG: 'gpkg', DXF: 'dxf', 'ESRI Shapefile': 'zip' } as const;
/** More vertices than this in the polygon is not a drawn boundary. */
const MAX_VERTICES = 10_000;

export const SurfaceSchema = Type.Union([Type.Literal('dsm'), Type.Literal('dtm')]);

export const VolumeBody = Type.Object({
  area: Type.Object({}, { additionalProperties: true, description: 'The polygon: a GeoJSON Feature or Polygon, in WGS84 (longitude, latitude)' }),
  method: Type.Optional(Type.Union(BASES.map((base) => Type.Literal(base)), { description: 'The base (default triangulate, as WebODM): plane fitted to the boundary, triangulated boundary, its average, highest or lowest height, or custom' })),
  base: Type.Optional(Type.Number({ description: 'The custom base height, in metres' })),
  layer: Type.Optional(SurfaceSchema),
});
export type VolumeBody = Static<typeof VolumeBody>;

export const ContoursBody = Type.Object({
  interval: Type.Number({ exclusiveMinimum: 0, maximum: 10_000, description: 'Metres between contours' }),
  simplify: Type.Optional(Type.Number({ minimum: 0, maximum: 1000, description: "The lines' tolerance in metres (default 0: as traced)" })),
  format: Type.Optional(Type.Union([Type.Literal('GeoJSON'), Type.Literal('GPKG'), Type.Literal('DXF'), Type.Literal('ESRI Shapefile')], { description: 'GeoJSON, GPKG (default), DXF or ESRI Shapefile (zipped)' })),
  epsg: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, description: "The CRS to write (default: the model's own)" })),
});
export type ContoursBody = Static<typeof ContoursBody>;

export const DifferenceBody = Type.Object({
  reference_project: Type.Integer({ minimum: 1, description: "The earlier survey's project" }),
  reference_task: Type.Integer({ minimum: 1, description: "The earlier survey's task: the change is this task's model less that one's" }),
  noise: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'Changes smaller than this (m) count as none (default 0)' })),
  format: Type.Optional(Type.Union([Type.Literal('gtiff'), Type.Literal('json')], { description: 'gtiff (default): the change as a GeoTIFF on the earlier model\'s grid, its figures in its metadata; json: the figures alone (cut, fill, net, area, changed_area)' })),
});
export type DifferenceBody = Static<typeof DifferenceBody>;

const badRequest = (detail: string) => new HttpError(400, { detail });

type Position = [number, number];

/** The polygon's outer ring, checked to be one; a 400 saying what is wrong otherwise. */
export function polygonRing(area: Record<string, unknown>): Position[] {
  const geometry = (area.type === 'Feature' ? area.geometry : area) as { type?: unknown; coordinates?: unknown } | null;
  if (!geometry || geometry.type !== 'Polygon' || !Array.isArray(geometry.coordinates)) throw badRequest('area must be a GeoJSON Polygon (or a Feature holding one)');
  const ring = geometry.coordinates[0] as unknown;
  if (!Array.isArray(ring) || ring.length < 4) throw badRequest('area needs a closed ring of at least three corners');
  if (ring.length > MAX_VERTICES) throw badRequest(`area has ${ring.length} positions; at most ${MAX_VERTICES}`);
  const positions = ring.map((position) => (Array.isArray(position) ? position.slice(0, 2).map(Number) : []));
  const valid = positions.every(([lon, lat]) => Number.isFinite(lon) && Number.isFinite(lat) && Math.abs(lon) <= 180 && Math.abs(lat) <= 90);
  if (!valid) throw badRequest('area positions must be [longitude, latitude] in degrees');
  return positions as Position[];
}

export interface VolumePlan {
  ring: Position[];
  method: (typeof BASES)[number];
  base: number | null;
  surface: Surface;
}

/** The volume asked; a 400 for anything it cannot be. */
export function volumePlan(body: VolumeBody): VolumePlan {
  const ring = polygonRing(body.area);
  const method = body.method ?? 'triangulate';
  if (method === 'custom' && body.base === undefined) throw badRequest('The custom base needs its height: base');
  return { ring, method, base: method === 'custom' ? (body.base ?? null) : null, surface: body.layer ?? 'dsm' };
}

/** The engine's command line (`aeromap-engine volume`) for a volume over `dem`. */
export function volumeArguments(plan: VolumePlan, dem: string, output: string): string[] {
  const polygon = JSON.stringify({ type: 'Polygon', coordinates: [plan.ring] });
  const args = ['volume', dem, output, `--area=${polygon}`, `--base-method=${plan.method}`];
  if (plan.base !== null) args.push(`--base=${plan.base}`);
  return args;
}

export const volumeFilename = (taskName: string, surface: Surface): string => downloadName(taskName, `${surface}-volume.json`);

/** The engine's command line (`aeromap-engine contours`) for the contours of `dem`. */
export function contoursArguments(body: ContoursBody, dem: string, output: string): string[] {
  const args = ['contours', dem, output, `--interval=${body.interval}`, `--simplify=${body.simplify ?? 0}`, `--format=${body.format ?? 'GPKG'}`];
  if (body.epsg !== undefined) args.push(`--crs=EPSG:${body.epsg}`);
  return args;
}

/** The download's name: the task's, the surface, contours, the format's extension. */
export function contoursFilename(taskName: string, surface: Surface, body: ContoursBody): string {
  return downloadName(taskName, `${surface}-contours.${CONTOUR_FORMATS[body.format ?? 'GPKG']}`);
}

/** The engine's command line (`aeromap-engine difference`): the later model less the earlier. */
export function differenceArguments(body: DifferenceBody, earlier: string, later: string, output: string): string[] {
  return ['difference', earlier, later, output, `--noise=${body.noise ?? 0}`];
}

export const differenceExtension = (body: DifferenceBody): string => (body.format === 'json' ? 'json' : 'tif');

/** The download's name: the task's, the surface, the earlier task's id. */
export const differenceFilename = (taskName: string, surface: Surface, body: DifferenceBody): string =>
  downloadName(taskName, `${surface}-difference-from-task-${body.reference_task}.${differenceExtension(body)}`);
