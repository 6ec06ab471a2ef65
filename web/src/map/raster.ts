// A window of a single-band raster in its projected CRS, as geotiff.js reads it for a height at a point.

export type XY = [number, number];

export interface Grid {
  values: ArrayLike<number>;
  width: number;
  height: number;
  /** CRS coordinates of the outer top-left corner of pixel (0, 0). */
  originX: number;
  originY: number;
  /** Pixel size in CRS units, both positive (rows go south). */
  resX: number;
  resY: number;
  nodata: number | null;
}

export function isValid(grid: Grid, value: number): boolean {
  return Number.isFinite(value) && (grid.nodata === null || value !== grid.nodata);
}

/** A point of a path and how far along it lies. */
export interface Station {
  xy: XY;
  distance: number;
}

/** `count` stations evenly spaced along the polyline (its ends included), distances in CRS units. */
export function stationsAlong(path: XY[], count: number): Station[] {
  const lengths = path.slice(1).map((point, i) => Math.hypot(point[0] - path[i][0], point[1] - path[i][1]));
  const total = lengths.reduce((sum, length) => sum + length, 0);
  const stations: Station[] = [];
  let segment = 0;
  let start = 0; // distance at the segment's first point
  for (let k = 0; k < count; k++) {
    const distance = count === 1 ? 0 : (total * k) / (count - 1);
    while (segment < lengths.length - 1 && distance > start + lengths[segment]) start += lengths[segment++];
    const t = lengths[segment] > 0 ? Math.min(1, (distance - start) / lengths[segment]) : 0;
    const [from, to] = [path[segment], path[segment + 1]];
    stations.push({ xy: [from[0] + t * (to[0] - from[0]), from[1] + t * (to[1] - from[1])], distance });
  }
  return stations;
}

/** The value of the pixel under a point of the grid's CRS; null outside it or on nodata. */
export function valueAt(grid: Grid, [x, y]: XY): number | null {
  const col = Math.floor((x - grid.originX) / grid.resX);
  const row = Math.floor((grid.originY - y) / grid.resY);
  if (col < 0 || row < 0 || col >= grid.width || row >= grid.height) return null;
  const value = grid.values[row * grid.width + col];
  return isValid(grid, value) ? value : null;
}
