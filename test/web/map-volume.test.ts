import { describe, expect, it } from 'vitest';
import { type Grid, type XY, pickLevel, sampleNearest, windowFor } from '../../web/src/map/raster.ts';
import { computeVolume, fitPlane, forEachPixelInside } from '../../web/src/map/volume.ts';

/** A grid at UTM-like coordinates whose height is f(x, y) at pixel centres. */
function grid(width: number, height: number, res: number, f: (x: number, y: number) => number, nodata: number | null = null): Grid {
  const originX = 576_000;
  const originY = 5_188_000;
  const values = new Float32Array(width * height);
  for (let row = 0; row < height; row++) {
    for (let col = 0; col < width; col++) values[row * width + col] = f(originX + (col + 0.5) * res, originY - (row + 0.5) * res);
  }
  return { values, width, height, originX, originY, resX: res, resY: res, nodata };
}

const X0 = 576_000;
const Y0 = 5_188_000;
const square = (x0: number, y0: number, x1: number, y1: number): XY[] => [[x0, y0], [x1, y0], [x1, y1], [x0, y1]];

describe('computeVolume', () => {
  it('a 10 m × 10 m × 3 m box on flat ground is 300 m³ above the base', () => {
    const g = grid(400, 400, 0.1, (x, y) => (x > X0 + 15 && x < X0 + 25 && y < Y0 - 15 && y > Y0 - 25 ? 103 : 100));
    const result = computeVolume(g, square(X0 + 5, Y0 - 35, X0 + 35, Y0 - 5));
    expect(result.above).toBeCloseTo(300, 3);
    expect(result.below).toBeCloseTo(0, 6);
    expect(result.net).toBeCloseTo(300, 3);
    expect(result.area).toBeCloseTo(900, 3); // 30 m × 30 m
    expect(result.base.a).toBeCloseTo(100, 6);
  });

  it('measures the box and a pit against a tilted base plane fitted to the boundary', () => {
    // Ground rises 2 cm per metre east and 1 cm per metre north; a 10×10×3 m box and a 5×5×2 m pit.
    const ground = (x: number, y: number) => 50 + 0.02 * (x - X0) + 0.01 * (y - Y0);
    const g = grid(600, 400, 0.1, (x, y) => {
      const inBox = x > X0 + 10 && x < X0 + 20 && y < Y0 - 10 && y > Y0 - 20;
      const inPit = x > X0 + 30 && x < X0 + 35 && y < Y0 - 10 && y > Y0 - 15;
      return ground(x, y) + (inBox ? 3 : 0) - (inPit ? 2 : 0);
    });
    const result = computeVolume(g, square(X0 + 5, Y0 - 30, X0 + 45, Y0 - 5));
    expect(result.above).toBeCloseTo(300, 1);
    expect(result.below).toBeCloseTo(50, 1);
    expect(result.net).toBeCloseTo(250, 1);
    expect(result.base.b).toBeCloseTo(0.02, 6);
    expect(result.base.c).toBeCloseTo(0.01, 6);
  });

  it('leaves nodata pixels out and counts them', () => {
    // Box of 4 m over 10×10 m, but its western half (5×10 m) is nodata: 200 m³ remain.
    const g = grid(400, 400, 0.1, (x, y) => {
      if (x > X0 + 15 && x < X0 + 20 && y < Y0 - 15 && y > Y0 - 25) return -9999;
      return x > X0 + 15 && x < X0 + 25 && y < Y0 - 15 && y > Y0 - 25 ? 14 : 10;
    }, -9999);
    const result = computeVolume(g, square(X0 + 5, Y0 - 35, X0 + 35, Y0 - 5));
    expect(result.above).toBeCloseTo(200, 3);
    expect(result.nodataPixels).toBe(50 * 100);
  });

  it('counts only pixels inside a triangle (half of the square)', () => {
    const g = grid(100, 100, 1, () => 1);
    // Base plane from the boundary heights (1) would give 0 volume: count the pixels instead.
    let count = 0;
    forEachPixelInside(g, [[X0, Y0], [X0 + 100, Y0], [X0, Y0 - 100]], () => count++);
    // Pixel centres strictly under the diagonal: 100·99/2 = 4950, plus none on it (centres are at .5).
    expect(count).toBe(4950);
  });

  it('refuses a polygon with no heights on its boundary', () => {
    const g = grid(10, 10, 1, () => -9999, -9999);
    expect(() => computeVolume(g, square(X0 + 1, Y0 - 9, X0 + 9, Y0 - 1))).toThrow(/no heights/);
  });
});

describe('fitPlane', () => {
  it('recovers an exact plane and falls back to level for collinear samples', () => {
    const plane = fitPlane([[0, 0, 1], [10, 0, 3], [0, 10, -1], [10, 10, 1]]);
    expect(plane.b).toBeCloseTo(0.2, 9);
    expect(plane.c).toBeCloseTo(-0.2, 9);
    const level = fitPlane([[0, 0, 1], [1, 1, 2], [2, 2, 3]]);
    expect(level).toMatchObject({ a: 2, b: 0, c: 0 });
  });
});

describe('raster helpers', () => {
  it('samples the pixel containing a point and none outside', () => {
    const g = grid(10, 10, 2, (x, y) => x - X0 + (Y0 - y) * 100);
    expect(sampleNearest(g, [X0 + 3.9, Y0 - 0.1])).toBe(3 + 100);
    expect(sampleNearest(g, [X0 - 0.1, Y0 - 1])).toBeNull();
  });

  it('picks full resolution unless the window is over the limit', () => {
    const levels = [{ res: 0.05 }, { res: 0.1 }, { res: 0.2 }, { res: 0.4 }];
    expect(pickLevel(levels, 100, 100, 4_000_000)).toBe(0); // 2000² = 4 M
    expect(pickLevel(levels, 200, 200, 4_000_000)).toBe(1);
    expect(pickLevel(levels, 10_000, 10_000, 4_000_000)).toBe(3);
  });

  it('clips a window to the image', () => {
    const image = { originX: 0, originY: 100, res: 1, resY: 1, width: 100, height: 100 };
    expect(windowFor(image, [10.5, 20.5, 30.2, 90])).toEqual([10, 10, 31, 80]);
    expect(windowFor(image, [-50, -50, 500, 500])).toEqual([0, 0, 100, 100]);
    expect(windowFor(image, [200, 0, 300, 50])).toBeNull();
  });
});
