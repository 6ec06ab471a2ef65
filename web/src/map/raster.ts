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
