// The elevation profile chart's geometry, pure: heights against distance in the chart's pixels.
import type { ProfilePoint } from './dem.ts';

export const WIDTH = 280;
export const HEIGHT = 120;
export const PAD = { left: 4, right: 4, top: 16, bottom: 18 };

/** The chart's polylines (one per run of known heights), in its pixels. */
export function profilePaths(points: ProfilePoint[]): string[] {
  const known = points.filter((p) => p.height !== null).map((p) => p.height!);
  if (!known.length) return [];
  const [low, high] = [Math.min(...known), Math.max(...known)];
  const length = points[points.length - 1].distance || 1;
  const x = (d: number) => PAD.left + (d / length) * (WIDTH - PAD.left - PAD.right);
  const y = (h: number) => PAD.top + (high === low ? 0.5 : (high - h) / (high - low)) * (HEIGHT - PAD.top - PAD.bottom);
  const paths: string[] = [];
  let current: string[] = [];
  for (const p of points) {
    if (p.height === null) {
      if (current.length > 1) paths.push(current.join(' '));
      current = [];
    } else current.push(`${x(p.distance).toFixed(1)},${y(p.height).toFixed(1)}`);
  }
  if (current.length > 1) paths.push(current.join(' '));
  return paths;
}
