// The control points' arrows and popup figures (web/src/map/control-points.ts), against hand-worked values.
import { describe, expect, it } from 'vitest';
import { type ControlPointCollection, describePoint, exaggeration, markedIn, residualArrows } from '../../web/src/map/control-points.ts';

const point = (id: string, lonLat: [number, number], error: [number, number, number], checkpoint = false): ControlPointCollection['features'][number] => ({
  type: 'Feature',
  geometry: { type: 'Point', coordinates: lonLat },
  properties: { id, error_x: error[0], error_y: error[1], error_z: error[2], checkpoint, observations_count: 3, observations_list: 'A.JPG,B.JPG,C.JPG,D.JPG' },
});
const collection = (...features: ControlPointCollection['features']): ControlPointCollection => ({ type: 'FeatureCollection', features });

describe('control points on the map', () => {
  it('exaggerates the errors by a round factor that draws the longest near 10 m', () => {
    expect(exaggeration(collection(point('a', [0, 0], [0.03, 0.04, 0])))).toBe(200); // 5 cm: 200 times is 10 m
    expect(exaggeration(collection(point('a', [0, 0], [0.3, 0, 0]), point('b', [0, 0], [0.01, 0, 0])))).toBe(20); // 33 wanted
    expect(exaggeration(collection(point('a', [0, 0], [12, 0, 0])))).toBe(1); // never shorter than it is
    expect(exaggeration(collection(point('a', [0, 0], [0, 0, 0.2])))).toBe(1);
  });

  it('draws each arrow from the surveyed position to where the model put it, scaled, with two barbs', () => {
    // On the equator a degree is 111,320 m both ways: the arithmetic can be checked by hand.
    const arrows = residualArrows(collection(point('a', [0, 0], [1, 0, 0.5]), point('b', [1, 1], [0, 0, 0.3])), 10);
    expect(arrows.features).toHaveLength(1); // b has no horizontal error
    const [shaft, ...barbs] = arrows.features[0].geometry.coordinates;
    const metres = (lonLat: number[]) => lonLat.map((degrees) => degrees * 111_320);
    expect(metres(shaft[0])[0]).toBeCloseTo(-1, 6); // surveyed: 1 m west of the model's point
    expect(metres(shaft[1])[0]).toBeCloseTo(9, 6); // then 10 times the error east
    expect(barbs).toHaveLength(2);
    for (const [tip, end] of barbs) {
      expect(tip).toEqual(shaft[1]);
      const [east, north] = [metres(end)[0] - metres(tip)[0], metres(end)[1] - metres(tip)[1]];
      expect(east).toBeLessThan(0); // pointing back along the shaft
      expect(Math.hypot(east, north)).toBeCloseTo(2, 6);
    }
  });

  it('describes a point in centimetres and names the first photographs it was marked in', () => {
    const { properties } = point('CP7', [0, 0], [0.012, -0.005, 0.031], true);
    expect(describePoint(properties)).toEqual(['CP7: checkpoint (not used to place the model)', 'Error 1.3 cm across (1.2 cm east, -0.5 cm north), 3.1 cm up', 'Marked in 3 photographs']);
    expect(markedIn(properties)).toEqual(['A.JPG', 'B.JPG', 'C.JPG']);
  });
});
