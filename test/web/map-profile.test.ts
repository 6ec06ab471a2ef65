// The elevation profile's arithmetic (web/src/map/raster.ts, profile.ts) against hand-worked values.
import { describe, expect, it } from 'vitest';
import { profilePaths } from '../../web/src/map/profile.ts';
import { type Grid, stationsAlong, valueAt } from '../../web/src/map/raster.ts';

describe('elevation profiles', () => {
  it('spaces the stations evenly along every segment of the line, its ends included', () => {
    const stations = stationsAlong([[0, 0], [30, 0], [30, 40]], 8); // 70 m: one station every 10 m
    expect(stations.map((s) => s.distance)).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
    expect(stations[2].xy).toEqual([20, 0]);
    expect(stations[3].xy).toEqual([30, 0]); // the corner
    expect(stations[5].xy).toEqual([30, 20]);
    expect(stations[7].xy).toEqual([30, 40]);
  });

  it('reads the pixel under a point, nothing outside the grid or on nodata', () => {
    const grid: Grid = { values: [1, 2, 3, -9999], width: 2, height: 2, originX: 100, originY: 200, resX: 10, resY: 10, nodata: -9999 };
    expect(valueAt(grid, [105, 195])).toBe(1);
    expect(valueAt(grid, [115, 195])).toBe(2);
    expect(valueAt(grid, [105, 185])).toBe(3);
    expect(valueAt(grid, [115, 185])).toBeNull();
    expect(valueAt(grid, [99, 195])).toBeNull();
    expect(valueAt(grid, [105, 201])).toBeNull();
  });

  it('draws the known heights, breaking the line over a gap, the highest at the top', () => {
    const paths = profilePaths([
      { distance: 0, height: 100 },
      { distance: 10, height: 105 },
      { distance: 20, height: null },
      { distance: 30, height: 102 },
      { distance: 40, height: 100 },
    ]);
    // 272 px across for 40 m from x = 4; 86 px down for 5 m from y = 16.
    expect(paths).toEqual(['4.0,102.0 72.0,16.0', '208.0,67.6 276.0,102.0']);
  });
});
