// Stockpile volume over a polygon of a DSM, as surveyors compute it: the base is the plane that best fits
// (least squares) the surface heights along the polygon's boundary, and every pixel whose centre is inside
// the polygon adds (height − base) × pixel area to the volume above the base (a stockpile, what
// earthworks would cut) or below it (a pit, what they would fill).
import { type Grid, type XY, isValid, pixelAt } from './raster.ts';

/** z = a + b·(x − cx) + c·(y − cy); centred because UTM coordinates squared would lose float precision. */
export interface Plane {
  a: number;
  b: number;
  c: number;
  cx: number;
  cy: number;
}

export interface VolumeResult {
  /** m³ above the base. */
  above: number;
  /** m³ below the base, as a positive number. */
  below: number;
  /** above − below. */
  net: number;
  /** m² of the pixels counted. */
  area: number;
  pixels: number;
  /** Pixels inside the polygon left out because they hold nodata. */
  nodataPixels: number;
  base: Plane;
  boundarySamples: number;
}

export function planeHeight(plane: Plane, [x, y]: XY): number {
  return plane.a + plane.b * (x - plane.cx) + plane.c * (y - plane.cy);
}

/**
 * Least-squares plane through (x, y, z) samples. With fewer than three samples, or samples on one line (no tilt
 * can be determined), the level plane at their mean height.
 */
export function fitPlane(samples: [number, number, number][]): Plane {
  const n = samples.length;
  if (n === 0) throw new Error('No heights along the boundary to fit a base plane to.');
  let cx = 0, cy = 0, mz = 0;
  for (const [x, y, z] of samples) { cx += x; cy += y; mz += z; }
  cx /= n; cy /= n; mz /= n;
  let sxx = 0, sxy = 0, syy = 0, sxz = 0, syz = 0;
  for (const [x, y, z] of samples) {
    const dx = x - cx, dy = y - cy, dz = z - mz;
    sxx += dx * dx; sxy += dx * dy; syy += dy * dy; sxz += dx * dz; syz += dy * dz;
  }
  // With centred data the intercept is the mean and the slopes solve a 2×2 system.
  const det = sxx * syy - sxy * sxy;
  if (n < 3 || Math.abs(det) <= 1e-12 * Math.max(1, sxx * syy)) return { a: mz, b: 0, c: 0, cx, cy };
  return { a: mz, b: (sxz * syy - syz * sxy) / det, c: (syz * sxx - sxz * sxy) / det, cx, cy };
}

/**
 * Heights along the ring's edges, about one sample per pixel, nodata skipped. Each sample sits at its pixel's
 * centre, not at the point on the edge: the height belongs there, and using the edge point would tilt the plane
 * by up to half a pixel's worth of slope.
 */
export function boundarySamples(grid: Grid, ring: XY[]): [number, number, number][] {
  const step = Math.min(grid.resX, grid.resY);
  const samples: [number, number, number][] = [];
  for (let i = 0; i < ring.length; i++) {
    const [x0, y0] = ring[i];
    const [x1, y1] = ring[(i + 1) % ring.length];
    const count = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0) / step));
    for (let k = 0; k < count; k++) {
      const x = x0 + ((x1 - x0) * k) / count;
      const y = y0 + ((y1 - y0) * k) / count;
      const sample = pixelAt(grid, [x, y]);
      if (sample) samples.push(sample);
    }
  }
  return samples;
}

/**
 * Calls visit(col, row) for every pixel whose centre lies inside the ring (even–odd rule), row by row: the
 * crossings of the row's centre line with the edges bound the runs of inside pixels.
 */
export function forEachPixelInside(grid: Grid, ring: XY[], visit: (col: number, row: number) => void): void {
  const crossings: number[] = [];
  for (let row = 0; row < grid.height; row++) {
    const y = grid.originY - (row + 0.5) * grid.resY;
    crossings.length = 0;
    for (let i = 0; i < ring.length; i++) {
      const [x0, y0] = ring[i];
      const [x1, y1] = ring[(i + 1) % ring.length];
      // Half-open in y, so a vertex exactly on the line counts once.
      if ((y0 <= y && y < y1) || (y1 <= y && y < y0)) crossings.push(x0 + ((y - y0) / (y1 - y0)) * (x1 - x0));
    }
    crossings.sort((p, q) => p - q);
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      // Pixel centres x = originX + (col + 0.5)·resX inside [left, right).
      const first = Math.max(0, Math.ceil((crossings[k] - grid.originX) / grid.resX - 0.5));
      const last = Math.min(grid.width - 1, Math.ceil((crossings[k + 1] - grid.originX) / grid.resX - 0.5) - 1);
      for (let col = first; col <= last; col++) visit(col, row);
    }
  }
}

/** Volumes above and below the base, and net, of the grid over the ring (CRS coordinates, open or closed). */
export function computeVolume(grid: Grid, ringIn: XY[]): VolumeResult {
  const ring = openRing(ringIn);
  if (ring.length < 3) throw new Error('A volume needs a polygon of at least three points.');
  const samples = boundarySamples(grid, ring);
  if (samples.length === 0) throw new Error('The surface model has no heights along this polygon’s boundary.');
  const base = fitPlane(samples);
  const pixelArea = grid.resX * grid.resY;
  let above = 0, below = 0, pixels = 0, nodataPixels = 0;
  forEachPixelInside(grid, ring, (col, row) => {
    const z = grid.values[row * grid.width + col];
    if (!isValid(grid, z)) {
      nodataPixels++;
      return;
    }
    const x = grid.originX + (col + 0.5) * grid.resX;
    const y = grid.originY - (row + 0.5) * grid.resY;
    const dz = z - planeHeight(base, [x, y]);
    if (dz > 0) above += dz * pixelArea;
    else below -= dz * pixelArea;
    pixels++;
  });
  return { above, below, net: above - below, area: pixels * pixelArea, pixels, nodataPixels, base, boundarySamples: samples.length };
}

function openRing(ring: XY[]): XY[] {
  if (ring.length > 1) {
    const first = ring[0];
    const last = ring[ring.length - 1];
    if (first[0] === last[0] && first[1] === last[1]) return ring.slice(0, -1);
  }
  return ring;
}
