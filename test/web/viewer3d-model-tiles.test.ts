// Where the 3D view puts a streamed model: the tiles come in the tileset's globe coordinates (ECEF, after the
// root's transform), and the view works in the survey's CRS minus an origin; the engine's frameToCrs joins them.
import * as THREE from 'three';
import { describe, expect, it } from 'vitest';
import { placedInCrs, sceneBox, sceneFromGlobe, tilesetCentre } from '../../web/src/viewer3d/model-tiles.ts';

// An east-north-up frame somewhere on the globe (a rotation and an Earth-sized offset), and a frame-to-CRS map
// as a UTM grid gives one: turned by the meridian convergence, scaled by 0.9996, moved to the easting and northing.
const globeFromFrame = new THREE.Matrix4()
  .makeRotationFromEuler(new THREE.Euler(0.4, -1.1, 2.3))
  .setPosition(-380_000, -4_480_000, 4_500_000);
const crsFromFrame = new THREE.Matrix4()
  .makeRotationZ(0.021)
  .multiply(new THREE.Matrix4().makeScale(0.9996, 0.9996, 1))
  .setPosition(576_700, 5_188_150, 160);
const tileset = {
  root: { transform: globeFromFrame.toArray(), boundingVolume: { box: [10, -20, 3, 60, 0, 0, 0, 50, 0, 0, 0, 8] } },
  extras: { frameToCrs: crsFromFrame.toArray() },
};

describe('a streamed model in the scene', () => {
  it('takes a point of the globe to where the frame-to-CRS map puts it, less the origin', () => {
    const origin: [number, number, number] = [576_690, 5_188_140, 150];
    const toScene = sceneFromGlobe(tileset, origin);
    for (const local of [new THREE.Vector3(0, 0, 0), new THREE.Vector3(55, -12, 7), new THREE.Vector3(-40, 33, -2)]) {
      const onGlobe = local.clone().applyMatrix4(globeFromFrame);
      const expected = local.clone().applyMatrix4(crsFromFrame).sub(new THREE.Vector3(...origin));
      expect(onGlobe.applyMatrix4(toScene).distanceTo(expected)).toBeLessThan(1e-4);
    }
  });

  it('finds the model\'s centre and box in the CRS from the root tile\'s box', () => {
    const centre = tilesetCentre(tileset);
    const expected = new THREE.Vector3(10, -20, 3).applyMatrix4(crsFromFrame);
    expect(new THREE.Vector3(...centre).distanceTo(expected)).toBeLessThan(1e-6);
    const [min, max] = sceneBox(tileset, [576_700, 5_188_150, 160]);
    expect(max[2] - min[2]).toBeCloseTo(16, 6); // the box's height is not turned
    expect(max[0] - min[0]).toBeGreaterThan(119); // 120 m wide, turned a little: a little wider
  });

  it('tells a tileset that does not say where it lies in the CRS (another tool\'s), and refuses to place it', () => {
    expect(placedInCrs(tileset)).toBe(true);
    expect(placedInCrs({ root: tileset.root })).toBe(false);
    expect(() => sceneFromGlobe({ root: tileset.root }, [0, 0, 0])).toThrow(/coordinate system/);
  });
});
