// Ground control points and checkpoints on the map, from ODM's ground_control_points.geojson: each where the model
// put it, with an arrow from where it was surveyed, exaggerated so that centimetres show on a map of hectares. Pure:
// the arrows and the figures a point's popup shows.
import type { LonLat } from './geodesy.ts';

export interface ControlPointProperties {
  id: string;
  /** Model less surveyed, metres east, north and up. */
  error_x: number;
  error_y: number;
  error_z: number;
  checkpoint?: boolean;
  observations_count: number;
  observations_list: string;
}

export type ControlPointCollection = GeoJSON.FeatureCollection<GeoJSON.Point, ControlPointProperties>;

/** The longest arrow drawn, in metres on the ground. */
const LONGEST_ARROW_M = 10;
const METRES_PER_DEGREE = 111_320;
const BARB_ANGLE = (25 * Math.PI) / 180;

/** How many times the errors are drawn larger: 1, 2 or 5 times a power of ten, the longest arrow near 10 m. */
export function exaggeration(points: ControlPointCollection): number {
  const longest = Math.max(0, ...points.features.map(({ properties: p }) => Math.hypot(p.error_x, p.error_y)));
  if (longest <= 0) return 1;
  const wanted = LONGEST_ARROW_M / longest;
  const power = 10 ** Math.floor(Math.log10(wanted));
  const nice = [5, 2, 1].map((step) => step * power).find((factor) => factor <= wanted) ?? power;
  return Math.max(1, nice);
}

function offset([lon, lat]: LonLat, east: number, north: number): LonLat {
  return [lon + east / (METRES_PER_DEGREE * Math.cos((lat * Math.PI) / 180)), lat + north / METRES_PER_DEGREE];
}

/**
 * Each point's error as an arrow: from where it was surveyed towards where the model put it, `factor` times as
 * long, with two barbs at its head; a point without a horizontal error has none.
 */
export function residualArrows(points: ControlPointCollection, factor: number): GeoJSON.FeatureCollection<GeoJSON.MultiLineString> {
  const features: GeoJSON.Feature<GeoJSON.MultiLineString>[] = [];
  for (const { geometry, properties: p } of points.features) {
    const length = Math.hypot(p.error_x, p.error_y) * factor;
    if (length === 0) continue;
    const surveyed = offset(geometry.coordinates as LonLat, -p.error_x, -p.error_y);
    const [east, north] = [p.error_x * factor, p.error_y * factor];
    const tip = offset(surveyed, east, north);
    const heading = Math.atan2(north, east);
    const barb = Math.min(length * 0.3, 2);
    const barbs = [heading + Math.PI - BARB_ANGLE, heading + Math.PI + BARB_ANGLE].map((angle) => [tip, offset(tip, barb * Math.cos(angle), barb * Math.sin(angle))]);
    features.push({
      type: 'Feature',
      properties: { id: p.id, checkpoint: Boolean(p.checkpoint) },
      geometry: { type: 'MultiLineString', coordinates: [[surveyed, tip], ...barbs] },
    });
  }
  return { type: 'FeatureCollection', features };
}

/** The lines of a point's popup: what it is, its error, where it was marked. */
export function describePoint(p: ControlPointProperties): string[] {
  const cm = (metres: number) => `${(metres * 100).toFixed(1)} cm`;
  return [
    `${p.id}: ${p.checkpoint ? 'checkpoint (not used to place the model)' : 'control point'}`,
    `Error ${cm(Math.hypot(p.error_x, p.error_y))} across (${cm(p.error_x)} east, ${cm(p.error_y)} north), ${cm(p.error_z)} up`,
    `Marked in ${p.observations_count} photograph${p.observations_count === 1 ? '' : 's'}`,
  ];
}

/** The photographs a point was marked in, as the popup previews them (at most `count`). */
export const markedIn = (p: ControlPointProperties, count = 3) =>
  p.observations_list
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
    .slice(0, count);
