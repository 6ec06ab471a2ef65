// The map layers of a task, as the tile API offers them, and the tile URLs for a layer's current settings.
import type { Task } from '../api.ts';
import { type PlantStyle, plantQuery } from './plant.ts';
import { DEFAULT_RAMP } from './ramps.ts';

export type LayerKind = 'orthophoto' | 'dsm' | 'dtm';

export const LAYER_KINDS: { kind: LayerKind; asset: string; label: string }[] = [
  { kind: 'orthophoto', asset: 'orthophoto.tif', label: 'Orthophoto' },
  { kind: 'dsm', asset: 'dsm.tif', label: 'Surface model (DSM)' },
  { kind: 'dtm', asset: 'dtm.tif', label: 'Terrain model (DTM)' },
];

export interface TileJson {
  tiles: string[];
  minzoom: number;
  maxzoom: number;
  bounds: [number, number, number, number];
  center?: [number, number, number];
  value_range?: [number, number];
  color_map?: string;
}

export interface LayerSettings {
  visible: boolean;
  opacity: number;
  ramp: string;
  hillshade: boolean;
  /** Orthophoto only: drawn as a vegetation index (Plant Health) rather than in its own colours. */
  plant: PlantStyle | null;
}

export function defaultSettings(kind: LayerKind): LayerSettings {
  // The orthophoto is what people open a map for; elevation layers would hide it, so they start hidden.
  return { visible: kind === 'orthophoto', opacity: 1, ramp: DEFAULT_RAMP, hillshade: false, plant: null };
}

export const isElevation = (kind: LayerKind) => kind !== 'orthophoto';

export function availableKinds(task: Task): LayerKind[] {
  return LAYER_KINDS.filter(({ asset }) => task.available_assets.includes(asset)).map(({ kind }) => kind);
}

/** What is drawn over a task's rasters, each from one of its assets. */
export type OverlayKind = 'cameras' | 'control';
export const OVERLAYS: { kind: OverlayKind; asset: string; label: string }[] = [
  { kind: 'cameras', asset: 'shots.geojson', label: 'Cameras' },
  { kind: 'control', asset: 'ground_control_points.geojson', label: 'Ground control points' },
];

export const sourceId = (taskId: number, kind: LayerKind | OverlayKind) => `task-${taskId}-${kind}`;

/** Vertical exaggeration of the hillshade: DEMs of drone surveys are small and fairly flat. */
const HILLSHADE_EXAGGERATION = 3;

/**
 * The tile URL template for the layer's settings: absolute (MapLibre fetches tiles from a worker, where a path
 * has no origin to resolve against); the session cookie goes with it.
 */
export function tileUrl(tilejson: TileJson, kind: LayerKind, settings: LayerSettings): string {
  const url = new URL(tilejson.tiles[0], location.origin);
  url.searchParams.set('size', '256');
  if (isElevation(kind)) {
    url.searchParams.set('color_map', settings.ramp);
    if (tilejson.value_range) url.searchParams.set('rescale', tilejson.value_range.join(','));
    if (settings.hillshade) url.searchParams.set('hillshade', String(HILLSHADE_EXAGGERATION));
    else url.searchParams.delete('hillshade');
  } else if (settings.plant) {
    for (const [name, value] of Object.entries(plantQuery(settings.plant))) url.searchParams.set(name, value);
  }
  // URL encodes { and } of the template; MapLibre needs them literal.
  return url.toString().replace(/%7B/g, '{').replace(/%7D/g, '}');
}

export function downloadUrl(task: Task, asset: string): string {
  return `/api/projects/${task.project}/tasks/${task.id}/download/${asset}`;
}
