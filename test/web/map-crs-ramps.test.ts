import proj4 from 'proj4';
import { describe, expect, it } from 'vitest';
import { epsgFromGeoKeys, proj4Definition } from '../../web/src/map/crs.ts';
import { RAMPS, legendTicks, rampByName, rampGradient } from '../../web/src/map/ramps.ts';

describe('proj4Definition', () => {
  it('builds UTM 15N so that a Brighton Beach camera lands where the engine put it', () => {
    // shots.geojson of the Brighton task: DJI_0018 at lon/lat below, translation 576663.308, 5188165.066 (EPSG:32615).
    const [x, y] = proj4('EPSG:4326', proj4Definition(32615)!, [-91.99455704485374, 46.842611649965164]);
    expect(x).toBeCloseTo(576663.308, 2);
    expect(y).toBeCloseTo(5188165.066, 2);
  });

  it('puts southern zones 10 000 km north of the equator', () => {
    const [, y] = proj4('EPSG:4326', proj4Definition(32733)!, [15, 0]);
    expect(y).toBeCloseTo(10_000_000, 3);
    expect(proj4Definition(32733)).toContain('+south');
  });

  it('knows no other codes', () => {
    expect(proj4Definition(2154)).toBeNull();
    expect(proj4Definition(32661)).toBeNull();
    expect(epsgFromGeoKeys({ ProjectedCSTypeGeoKey: 32615 })).toBe(32615);
    expect(epsgFromGeoKeys({ ProjectedCSTypeGeoKey: 32767, GeographicTypeGeoKey: 4326 })).toBe(4326);
    expect(epsgFromGeoKeys({})).toBeNull();
  });
});

describe('legend', () => {
  it('labels round values inside the range at their positions', () => {
    // 4.9 m over about 4 gaps: a step of 1.225 rounds up to 2.
    expect(legendTicks(179.7, 184.6, 5)).toEqual([
      { value: 180, at: expect.closeTo(0.3 / 4.9, 9) },
      { value: 182, at: expect.closeTo(2.3 / 4.9, 9) },
      { value: 184, at: expect.closeTo(4.3 / 4.9, 9) },
    ]);
    expect(legendTicks(-0.35, 0.35, 8).map((t) => t.value)).toEqual([-0.3, -0.2, -0.1, 0, 0.1, 0.2, 0.3]);
    expect(legendTicks(0, 1, 3).map((t) => t.value)).toEqual([0, 0.5, 1]);
    expect(legendTicks(5, 5)).toEqual([{ value: 5, at: 0 }]);
  });

  it('has a gradient per ramp and falls back to the first', () => {
    expect(rampGradient(rampByName('jet'))).toBe('linear-gradient(to right, #000080, #0000ff, #00ffff, #ffff00, #ff0000, #800000)');
    expect(rampByName('nope')).toBe(RAMPS[0]);
  });
});
