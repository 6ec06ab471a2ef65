// Volumes measured by the service where the elevation model is (POST .../volume, a job polled to its JSON figures):
// the bases WebODM offers, the surface (DSM or DTM) and how the figures read. Only the request and the figures'
// wording are here; the map draws the polygon.
import { type Task, taskPath } from '../api.ts';
import { formatArea, formatElevation, formatVolume } from './format.ts';
import type { LonLat } from './geodesy.ts';
import { jsonJob } from './jobs.ts';

export type Surface = 'dsm' | 'dtm';
export type Base = 'triangulate' | 'plane' | 'average' | 'highest' | 'lowest' | 'custom';

/** WebODM's bases, in its order, with what each means. */
export const BASES: { base: Base; label: string; says: string }[] = [
  { base: 'triangulate', label: 'Triangulated boundary', says: 'the boundary heights triangulated' },
  { base: 'plane', label: 'Plane fitted to the boundary', says: 'a plane fitted to the boundary heights' },
  { base: 'average', label: 'Average boundary height', says: 'the average boundary height' },
  { base: 'highest', label: 'Highest boundary point', says: 'the highest boundary height' },
  { base: 'lowest', label: 'Lowest boundary point', says: 'the lowest boundary height' },
  { base: 'custom', label: 'Custom height', says: 'a height given' },
];

export interface VolumeSettings {
  base: Base;
  /** The custom base's height, metres. */
  height: number | null;
  surface: Surface;
}

/** The service's figures (m³, m², m). */
export interface VolumeFigures {
  volume: number;
  cut: number;
  fill: number;
  net: number;
  area: number;
  cells: number;
  nodata_cells: number;
  base_mean: number;
  base: Base;
}

/** The request body of a volume over a drawn ring (longitude, latitude). */
export function volumeBody(ring: LonLat[], settings: VolumeSettings): Record<string, unknown> {
  const closed = [...ring, ring[0]];
  const body: Record<string, unknown> = {
    area: { type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [closed] } },
    method: settings.base,
    layer: settings.surface,
  };
  if (settings.base === 'custom') {
    if (settings.height === null || !Number.isFinite(settings.height)) throw new Error('Give the custom base height, in metres.');
    body.base = settings.height;
  }
  return body;
}

/** Measures the volume over the ring on the task's DSM or DTM; a refusal throws the service's reason. */
export async function measureVolume(task: Task, ring: LonLat[], settings: VolumeSettings, signal: AbortSignal): Promise<VolumeFigures> {
  return jsonJob<VolumeFigures>(`${taskPath(task.project, task.id)}/volume`, volumeBody(ring, settings), signal);
}

/** The figures as the measuring panel lists them, under the net volume. */
export function volumeDetails(figures: VolumeFigures, surface: Surface, taskName: string): string[] {
  const says = BASES.find(({ base }) => base === figures.base)?.says ?? figures.base;
  const details = [
    `Cut: ${formatVolume(figures.cut)} (above the base)`,
    `Fill: ${formatVolume(figures.fill)} (below the base)`,
    `Over ${formatArea(figures.area)}; base: ${says} (${formatElevation(figures.base_mean)} on average)`,
    `${surface === 'dsm' ? 'Surface' : 'Terrain'} model (${surface.toUpperCase()}) of ${taskName}`,
  ];
  if (figures.nodata_cells > 0) details.push(`${figures.nodata_cells.toLocaleString('en-US')} cells without data left out`);
  return details;
}
