// How the application words the API's codes and numbers.
import { PENDING_ACTION_NAMES, STATUS_NAMES, TaskStatus, type TaskStatusCode } from '../../src/protocol/status.ts';
import type { Task } from './api.ts';

export function statusText(task: Task): string {
  if (task.pending_action !== null) return `${PENDING_ACTION_NAMES[task.pending_action] ?? 'Working'}…`;
  if (task.partial) return 'Waiting for images';
  if (task.status === null) return 'Waiting for a node';
  return STATUS_NAMES[task.status as TaskStatusCode] ?? `Status ${task.status}`;
}

export function statusClass(task: Task): string {
  switch (task.status) {
    case TaskStatus.RUNNING:
      return 'running';
    case TaskStatus.COMPLETED:
      return 'completed';
    case TaskStatus.FAILED:
      return 'failed';
    case TaskStatus.CANCELED:
      return 'canceled';
    default:
      return '';
  }
}

/** Whether the task can still change by itself (and so is worth polling). */
export function isActive(task: Task): boolean {
  return task.pending_action !== null || task.status === null || task.status === TaskStatus.QUEUED || task.status === TaskStatus.RUNNING;
}

export function duration(ms: number): string {
  if (!(ms >= 0)) return '–';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return h ? `${h} h ${m} min` : m ? `${m} min ${rest} s` : `${rest} s`;
}

export function bytes(n: number): string {
  if (!(n >= 0)) return '–';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value >= 100 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export const percent = (fraction: number) => `${Math.round(Math.max(0, Math.min(1, fraction)) * 100)} %`;

/** What the downloads list calls each asset of src/protocol/files.ts. */
export const ASSET_LABELS: Record<string, string> = {
  'all.zip': 'All assets (zip)',
  'orthophoto.tif': 'Orthophoto (GeoTIFF)',
  'orthophoto.png': 'Orthophoto (PNG)',
  'orthophoto.mbtiles': 'Orthophoto (MBTiles)',
  'orthophoto.kmz': 'Orthophoto (KMZ, Google Earth)',
  'cutline.gpkg': 'Orthophoto seamlines (GeoPackage)',
  'orthophoto_tiles.zip': 'Orthophoto tiles (zip)',
  'dsm.tif': 'Surface model (GeoTIFF)',
  'dtm.tif': 'Terrain model (GeoTIFF)',
  'dsm_tiles.zip': 'Surface model tiles (zip)',
  'dtm_tiles.zip': 'Terrain model tiles (zip)',
  'georeferenced_model.laz': 'Point cloud (LAZ)',
  'georeferenced_model.las': 'Point cloud (LAS)',
  'georeferenced_model.ply': 'Point cloud (PLY)',
  'georeferenced_model.csv': 'Point cloud (CSV)',
  'textured_model.zip': 'Textured model (zip)',
  'textured_model.glb': 'Textured model (GLB)',
  'textured_model_safe.glb': 'Textured model, reduced (GLB)',
  '3d_tiles_model.zip': 'Textured model (3D Tiles)',
  '3d_tiles_pointcloud.zip': 'Point cloud (3D Tiles)',
  'cameras.json': 'Cameras (JSON)',
  'shots.geojson': 'Camera positions (GeoJSON)',
  'report.pdf': 'Report (PDF)',
  'ground_control_points.geojson': 'Ground control points (GeoJSON)',
};

export const assetLabel = (asset: string): string => ASSET_LABELS[asset] ?? asset;
