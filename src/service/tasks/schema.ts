// The Task resource as the API shows it (the spec's fields plus WebODM's extent, statistics, size and partial),
// and the request shapes of the task routes.
import { type Static, Type } from '@sinclair/typebox';
import type { ShownTask } from '../../db/tasks.ts';
import { fieldError } from '../errors.ts';
import { Id, Nullable, OptionValue, TaskOptions, Timestamp } from '../schemas.ts';
import { TagsField, shownTags } from '../tags.ts';

const Position = Type.Array(Type.Number(), { minItems: 2, maxItems: 3 });
export const CropPolygon = Type.Object(
  {
    type: Type.Literal('Polygon'),
    coordinates: Type.Array(Type.Array(Position, { minItems: 4, maxItems: 10000 }), { minItems: 1, maxItems: 100 }),
  },
  { description: 'A GeoJSON Polygon in WGS84 (longitude, latitude) that the results are shown cropped to' },
);
export type Crop = Static<typeof CropPolygon>;

export const TaskSchema = Type.Object(
  {
    id: Id,
    project: Id,
    processing_node: Nullable(Type.Integer()),
    processing_node_name: Nullable(Type.String()),
    images_count: Type.Integer({ description: 'Images (and .txt companions) uploaded' }),
    can_rerun_from: Type.Array(Type.String(), {
      description: 'Stages the assigned node can restart from; empty: only from the start',
    }),
    available_assets: Type.Array(Type.String(), { description: 'Asset names that download/{asset} serves' }),
    uuid: Type.String({ description: "The node's id of the task; empty until it is uploaded" }),
    name: Type.String(),
    processing_time: Type.Integer({ description: 'Milliseconds of processing; -1 when unknown' }),
    auto_processing_node: Type.Boolean(),
    status: Nullable(Type.Integer({ description: '10 QUEUED, 20 RUNNING, 30 FAILED, 40 COMPLETED, 50 CANCELED' })),
    last_error: Nullable(Type.String()),
    options: Type.Array(Type.Object({ name: Type.String(), value: OptionValue })),
    created_at: Timestamp,
    pending_action: Nullable(Type.Integer({ description: '1 CANCEL, 2 REMOVE, 3 RESTART, 4 RESIZE, 5 IMPORT, 6 COMPACT' })),
    upload_progress: Type.Number({ minimum: 0, maximum: 1 }),
    resize_progress: Type.Number({ minimum: 0, maximum: 1 }),
    running_progress: Type.Number({ minimum: 0, maximum: 1 }),
    partial: Type.Boolean({ description: 'Waiting for its files: upload/ then commit/' }),
    extent: Nullable(Type.Array(Type.Number(), { description: '[minx, miny, maxx, maxy] in WGS84' })),
    statistics: Type.Record(Type.String(), Type.Unknown(), { description: "The engine's quality figures" }),
    size: Type.Number({ description: 'Size on disk in mebibytes (bytes / 1024²), as WebODM gives it' }),
    public: Type.Boolean({ description: 'Anyone with the link reads the task and its results, signed in or not' }),
    public_edit: Type.Boolean({ description: 'With public: anyone may also save its 3D scene' }),
    potree_scene: Type.Record(Type.String(), Type.Unknown(), { description: 'The saved 3D scene (3d/scene, 3d/cameraview); {} when none' }),
    tags: Type.Array(Type.String(), { description: 'Tags; one starting with "." is hidden in the web application' }),
    resize_to: Type.Integer({ description: 'Longest side in pixels the photographs were reduced to before processing; -1: not resized' }),
    epsg: Nullable(Type.Integer({ description: "EPSG code of the results' CRS (orthophoto, else DSM, else DTM); null before results or when the CRS has none (see wkt)" })),
    wkt: Nullable(Type.String({ description: "WKT of the results' CRS when it has no EPSG code; else null" })),
    crop: Nullable(CropPolygon),
    compacted: Type.Boolean({ description: 'The photographs were removed (compact/): the results stay, processing from the start cannot' }),
    ground_control_points: Type.Null({
      description:
        "Older WebODM versions' separate control point file, which their clients still read: always null, as the control points travel with the photographs (a .txt upload) and come back as the ground_control_points.geojson asset",
    }),
  },
  { $id: 'Task' },
);
export type TaskItem = Static<typeof TaskSchema>;

export const TaskParams = Type.Object({ project_id: Id, task_id: Id });
export const ProjectParams = Type.Object({ project_id: Id });

/** Options as a list, or as the JSON text of one (what multipart and form clients send). */
export const OptionsField = Type.Union([TaskOptions, Type.String({ maxLength: 1_000_000 })]);

const BooleanField = Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false', 'True', 'False', '1', '0'] })]);

/** The fields of create and update besides the files (JSON, form, or multipart text fields). */
export const TaskFieldsBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  processing_node: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2147483647 }))),
  auto_processing_node: Type.Optional(BooleanField),
  options: Type.Optional(OptionsField),
  partial: Type.Optional(BooleanField),
  public: Type.Optional(BooleanField),
  public_edit: Type.Optional(BooleanField),
  tags: Type.Optional(TagsField),
  resize_to: Type.Optional(
    Type.Union([Type.Integer(), Type.String({ pattern: '^\\s*-?\\d{1,9}\\s*$' })], {
      description: 'On create: the longest side in pixels to reduce the photographs to before processing; -1: keep them',
    }),
  ),
  // One JSON type list rather than anyOf, which the validator's coercion would bend; parseCrop checks the shape.
  crop: Type.Optional(
    Type.Unsafe<Crop | string | null>({
      type: ['object', 'string', 'null'],
      maxLength: 1_000_000,
      description: `${CropPolygon.description}, or its JSON text; null: none`,
    }),
  ),
});
export type TaskFields = Static<typeof TaskFieldsBody>;

export const OutputQuery = Type.Object({ line: Type.Optional(Type.Integer({ default: 0 })) });

/** resize_to as sent: -1 keeps the photographs, n > 0 reduces their longest side to n pixels. */
export function parseResizeTo(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const size = Number(value);
  if (!Number.isInteger(size) || !(size === -1 || (size >= 1 && size <= 65535))) {
    throw fieldError('resize_to', 'Send -1 (no resize) or the longest side in pixels, from 1 to 65535.');
  }
  return size;
}

/** A crop as sent (a GeoJSON Polygon, or its JSON text): each ring closed, in longitude and latitude. */
export function parseCrop(value: Crop | string | null | undefined): Crop | null | undefined {
  if (value === undefined || value === null) return value;
  let polygon: unknown = value;
  if (typeof value === 'string') {
    try {
      polygon = value.trim() === '' ? null : JSON.parse(value);
    } catch {
      throw fieldError('crop', 'Send a GeoJSON Polygon.');
    }
    if (polygon === null) return null;
  }
  const crop = polygon as Crop;
  const valid =
    crop?.type === 'Polygon' &&
    Array.isArray(crop.coordinates) &&
    crop.coordinates.length > 0 &&
    crop.coordinates.every(
      (ring) =>
        Array.isArray(ring) &&
        ring.length >= 4 &&
        ring.every((p) => Array.isArray(p) && p.length >= 2 && p.every(Number.isFinite) && Math.abs(p[0]) <= 180 && Math.abs(p[1]) <= 90) &&
        ring[0][0] === ring.at(-1)?.[0] &&
        ring[0][1] === ring.at(-1)?.[1],
    );
  if (!valid) throw fieldError('crop', 'Send a GeoJSON Polygon in longitude and latitude, each ring of 4 or more positions, closed.');
  return { type: 'Polygon', coordinates: crop.coordinates.map((ring) => ring.map((p) => p.slice(0, 2))) };
}

export const parseBoolean = (value: boolean | string | undefined): boolean | undefined =>
  value === undefined ? undefined : value === true || ['true', 'True', '1'].includes(String(value));

/** Row values plus the joined node, as the presenter needs them. */
export type TaskRow = ShownTask;

function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** The stages a node's rerun-from option allows (its enum domain), or none. */
// Every task on a node carries the node's whole options document (tens of kB): a list would parse it per row.
const stagesByOptions = new Map<string, string[]>();

export function rerunStages(nodeOptions: string | null): string[] {
  if (nodeOptions === null) return [];
  const known = stagesByOptions.get(nodeOptions);
  if (known) return [...known];
  const options = parseJson<{ name: string; domain: unknown }[]>(nodeOptions, []);
  const domain = options.find((option) => option.name === 'rerun-from')?.domain;
  const stages = Array.isArray(domain) ? domain.filter((stage): stage is string => typeof stage === 'string') : [];
  if (stagesByOptions.size >= 64) stagesByOptions.clear();
  stagesByOptions.set(nodeOptions, stages);
  return [...stages];
}

export function presentTask(row: TaskRow): TaskItem {
  return {
    id: row.id,
    project: row.project_id,
    processing_node: row.processing_node_id,
    processing_node_name: row.node_hostname === null ? null : `${row.node_hostname}:${row.node_port}`,
    images_count: row.images_count,
    can_rerun_from: rerunStages(row.node_options),
    available_assets: parseJson<string[]>(row.available_assets, []),
    uuid: row.uuid,
    name: row.name,
    processing_time: Number(row.processing_time),
    auto_processing_node: row.auto_processing_node === 1,
    status: row.status,
    last_error: row.last_error,
    options: parseJson(row.options, []),
    created_at: row.created_at,
    pending_action: row.pending_action,
    upload_progress: row.upload_progress,
    resize_progress: row.resize_progress,
    running_progress: row.running_progress,
    partial: row.partial === 1,
    extent: parseJson(row.extent, null),
    statistics: parseJson(row.statistics, {}),
    size: Math.round((Number(row.size) / 1_048_576) * 100) / 100,
    public: row.public === 1,
    public_edit: row.public_edit === 1,
    potree_scene: parseJson(row.potree_scene, {}),
    tags: shownTags(row.tags),
    resize_to: row.resize_to,
    epsg: row.epsg,
    wkt: row.wkt,
    crop: parseJson(row.crop, null),
    compacted: row.compacted === 1,
    ground_control_points: null,
  };
}
