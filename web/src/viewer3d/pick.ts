// Picking a point under the pointer in screen space: a tolerance in pixels works at any zoom, where a ray's
// world-space threshold would be too wide up close and too narrow far away.
import { type Box3, inBox } from './geometry.ts';

export interface ScreenPick {
  index: number;
  /** Clip-space w: the distance along the view direction; smaller is nearer to the camera. */
  depth: number;
  pixels: number;
}

/**
 * The point nearest to the camera among those within `maxPixels` of (px, py), where (px, py) are CSS pixels from
 * the viewport's top-left corner and `matrix` maps the positions to clip space (projection × view × model); with
 * a `clip` box, among those inside it (the others are not drawn).
 */
export function pickPoint(
  positions: ArrayLike<number>,
  count: number,
  matrix: ArrayLike<number>,
  width: number,
  height: number,
  px: number,
  py: number,
  maxPixels: number,
  clip: Box3 | null = null,
): ScreenPick | null {
  const m = matrix;
  let best: ScreenPick | null = null;
  const limit2 = maxPixels * maxPixels;
  for (let i = 0; i < count; i++) {
    const x = positions[i * 3];
    const y = positions[i * 3 + 1];
    const z = positions[i * 3 + 2];
    if (clip && !inBox(clip, x, y, z)) continue;
    const w = m[3] * x + m[7] * y + m[11] * z + m[15];
    if (w <= 0) continue;
    const cx = (m[0] * x + m[4] * y + m[8] * z + m[12]) / w;
    const cy = (m[1] * x + m[5] * y + m[9] * z + m[13]) / w;
    const dx = (cx + 1) * 0.5 * width - px;
    const dy = (1 - cy) * 0.5 * height - py;
    const d2 = dx * dx + dy * dy;
    if (d2 > limit2) continue;
    // The nearest, not the closest to the pointer: a click means the surface seen, not points behind it.
    if (!best || w < best.depth) best = { index: i, depth: w, pixels: Math.sqrt(d2) };
  }
  return best;
}
