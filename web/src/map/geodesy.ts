// Lengths and areas on the ellipsoid-free sphere that WebODM's measurement tool also uses (turf), so that
// numbers people compare between the two agree. No DOM here: unit-tested under Node.
import turfArea from '@turf/area';
import turfLength from '@turf/length';

export type LonLat = [number, number];

/** Length in metres of the polyline through the points, along great circles. */
export function pathLength(points: LonLat[]): number {
  if (points.length < 2) return 0;
  return turfLength({ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: points } }, { units: 'meters' });
}

/** Area in m² of the polygon whose ring is the points (closed or not), on the sphere. */
export function polygonArea(points: LonLat[]): number {
  if (points.length < 3) return 0;
  return turfArea({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [closeRing(points)] } });
}

export function closeRing(points: LonLat[]): LonLat[] {
  const first = points[0];
  const last = points[points.length - 1];
  return first[0] === last[0] && first[1] === last[1] ? points : [...points, first];
}
