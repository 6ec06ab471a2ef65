// A window of a single-band raster in its projected CRS, and the lookups on it that measurements need.
// Pure: geotiff.js fills a Grid in the browser, tests build one by hand.

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

/** The value of the pixel that contains (x, y), or null outside the grid or on nodata. */
export function sampleNearest(grid: Grid, point: XY): number | null {
  return pixelAt(grid, point)?.[2] ?? null;
}

/** The centre (x, y) and value of the pixel that contains the point; null outside the grid or on nodata. */
export function pixelAt(grid: Grid, [x, y]: XY): [number, number, number] | null {
  const col = Math.floor((x - grid.originX) / grid.resX);
  const row = Math.floor((grid.originY - y) / grid.resY);
  if (col < 0 || row < 0 || col >= grid.width || row >= grid.height) return null;
  const value = grid.values[row * grid.width + col];
  if (!isValid(grid, value)) return null;
  return [grid.originX + (col + 0.5) * grid.resX, grid.originY - (row + 0.5) * grid.resY, value];
}

export interface Level {
  /** Pixel size in CRS units of this level (full resolution first, then overviews). */
  res: number;
}

/**
 * The finest level at which a window of widthM × heightM (CRS units) has at most maxPixels pixels: full
 * resolution unless that would be huge, so the browser neither downloads nor loops over hundreds of megabytes.
 */
export function pickLevel(levels: Level[], widthM: number, heightM: number, maxPixels: number): number {
  for (let index = 0; index < levels.length; index++) {
    const { res } = levels[index];
    if (Math.ceil(widthM / res) * Math.ceil(heightM / res) <= maxPixels) return index;
  }
  return levels.length - 1;
}

/** The pixel window [col0, row0, col1, row1) of an image that covers the bounding box, clipped to the image. */
export function windowFor(
  image: { originX: number; originY: number; res: number; resY: number; width: number; height: number },
  [minX, minY, maxX, maxY]: [number, number, number, number],
): [number, number, number, number] | null {
  const col0 = Math.max(0, Math.floor((minX - image.originX) / image.res));
  const col1 = Math.min(image.width, Math.ceil((maxX - image.originX) / image.res));
  const row0 = Math.max(0, Math.floor((image.originY - maxY) / image.resY));
  const row1 = Math.min(image.height, Math.ceil((image.originY - minY) / image.resY));
  return col1 > col0 && row1 > row0 ? [col0, row0, col1, row1] : null;
}

export function bbox(points: XY[]): [number, number, number, number] {
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const [x, y] of points) {
    minX = Math.min(minX, x); minY = Math.min(minY, y);
    maxX = Math.max(maxX, x); maxY = Math.max(maxY, y);
  }
  return [minX, minY, maxX, maxY];
}
