// A profile of the point cloud along a line picked in the 3D view: the points within a narrow band either side
// of the line, binned by distance along it. Pure arithmetic, tested in Node.
import type { ProfilePoint } from '../map/dem.ts';
import type { Vec3 } from './geometry.ts';

export interface PointChunk {
  /** x, y, z per point, in the scene's frame. */
  positions: ArrayLike<number>;
  count: number;
}

/** The share of a bin's points below its height: the top of the points, as a surface model sees it, without
 * the odd point floating above. */
const TOP = 0.9;

/** The band's half width either side of the line: narrow, but wide enough to hold points of a sparse level. */
export const bandHalfWidth = (length: number): number => Math.max(0.1, length / 400);

/** `samples` stations evenly spaced from a to b (horizontally), each the TOP height of the points within the band
 * of their bin, or null where none lies; heights in the scene's frame. */
export function cloudProfile(chunks: readonly PointChunk[], a: Vec3, b: Vec3, samples: number): ProfilePoint[] {
  const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
  const length = Math.hypot(dx, dy);
  if (length === 0 || samples < 2) return [];
  const [ux, uy] = [dx / length, dy / length];
  const half = bandHalfWidth(length);
  const step = length / (samples - 1);
  const bins: number[][] = Array.from({ length: samples }, () => []);
  for (const { positions, count } of chunks) {
    for (let i = 0; i < count; i++) {
      const [px, py] = [positions[3 * i] - a[0], positions[3 * i + 1] - a[1]];
      const along = px * ux + py * uy;
      if (along < -step / 2 || along > length + step / 2 || Math.abs(px * uy - py * ux) > half) continue;
      bins[Math.round(along / step)].push(positions[3 * i + 2]);
    }
  }
  return bins.map((heights, k) => ({ distance: k * step, height: heights.length ? quantile(heights, TOP) : null }));
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
