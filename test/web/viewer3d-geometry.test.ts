import { describe, expect, it } from 'vitest';
import { type Vec3, angleAt, boxIntersectsFrustum, clipColumn, distanceParts, distanceToBox, frustumPlanes, horizontalArea, inBox, projectedSize } from '../../web/src/viewer3d/geometry.ts';
import { addPick, measure, outline } from '../../web/src/viewer3d/measure-tools.ts';
import { camerasOf, frustumSegments, rotationMatrix } from '../../web/src/viewer3d/cameras.ts';
import { pickPoint } from '../../web/src/viewer3d/pick.ts';
import { cloudProfile } from '../../web/src/viewer3d/profile.ts';
import { dollyPosition, orbitPosition } from '../../web/src/viewer3d/orbit.ts';

/** OpenGL perspective matrix, column-major, camera at the origin looking down -z. */
function perspective(fovYDeg: number, aspect: number, near: number, far: number): number[] {
  const f = 1 / Math.tan((fovYDeg * Math.PI) / 360);
  return [f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) / (near - far), -1, 0, 0, (2 * far * near) / (near - far), 0];
}
const identity = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];

describe('frustum planes', () => {
  it('of the identity matrix bound the clip cube', () => {
    const planes = frustumPlanes(identity);
    expect(planes).toHaveLength(6);
    expect(planes[0]).toEqual([1, 0, 0, 1]); // x ≥ -1
    expect(planes[1]).toEqual([-1, 0, 0, 1]); // x ≤ 1
    expect(boxIntersectsFrustum(planes, { min: [-0.5, -0.5, -0.5], max: [0.5, 0.5, 0.5] })).toBe(true);
    expect(boxIntersectsFrustum(planes, { min: [2, 0, 0], max: [3, 1, 1] })).toBe(false);
    // Straddling a face counts as in view.
    expect(boxIntersectsFrustum(planes, { min: [0.9, 0, 0], max: [3, 1, 1] })).toBe(true);
  });

  it('of a 90° perspective keep what is ahead and within 45° of the axis', () => {
    const planes = frustumPlanes(perspective(90, 1, 1, 100));
    const at = (x: number, y: number, z: number) => boxIntersectsFrustum(planes, { min: [x - 0.1, y - 0.1, z - 0.1], max: [x + 0.1, y + 0.1, z + 0.1] });
    expect(at(0, 0, -10)).toBe(true);
    expect(at(0, 0, 10)).toBe(false); // behind
    expect(at(5, 0, -10)).toBe(true);
    expect(at(20, 0, -10)).toBe(false); // beyond the 45° side plane
    expect(at(0, 0, -150)).toBe(false); // beyond far
    expect(at(0, 0, -0.5)).toBe(false); // before near
  });
});

describe('distances', () => {
  it('to a box is zero inside and Euclidean outside', () => {
    const box = { min: [-1, -1, -1] as const, max: [1, 1, 1] as const };
    expect(distanceToBox([0, 0.5, 0], box)).toBe(0);
    expect(distanceToBox([3, 0, 0], box)).toBe(2);
    expect(distanceToBox([2, 2, 2], box)).toBeCloseTo(Math.sqrt(3), 12);
  });

  it('projected size: 1 m at 10 m with a 90° view 800 px high covers 40 px', () => {
    expect(projectedSize(1, 10, 90, 800)).toBeCloseTo(40, 9);
    expect(projectedSize(1, 20, 90, 800)).toBeCloseTo(20, 9);
  });

  it('splits a 3D distance into horizontal and signed vertical parts', () => {
    expect(distanceParts([0, 0, 0], [3, 4, 12])).toEqual({ distance: 13, horizontal: 5, vertical: 12 });
    expect(distanceParts([1, 1, 5], [1, 1, 2]).vertical).toBe(-3);
  });
});

describe('screen picking', () => {
  it('finds the point under the pointer within the pixel tolerance', () => {
    // With the identity matrix clip = position: (0,0) is the viewport centre, (0.5,0.5) is up-right.
    const positions = new Float32Array([0.5, 0.5, 0, 0, 0, 0]);
    expect(pickPoint(positions, 2, identity, 200, 100, 100, 50, 3)?.index).toBe(1);
    expect(pickPoint(positions, 2, identity, 200, 100, 150, 25, 3)?.index).toBe(0);
    expect(pickPoint(positions, 2, identity, 200, 100, 120, 50, 3)).toBeNull();
  });

  it('prefers the point nearest to the camera on the same ray', () => {
    const positions = new Float32Array([0, 0, -10, 0, 0, -5, 0, 0, 5]);
    const hit = pickPoint(positions, 3, perspective(90, 1, 1, 100), 100, 100, 50, 50, 2);
    expect(hit?.index).toBe(1);
    expect(hit?.depth).toBeCloseTo(5, 9);
  });

  it('skips the points a clip box hides', () => {
    const positions = new Float32Array([0, 0, -10, 0, 0, -5, 3, 0, -5]);
    const matrix = perspective(90, 1, 1, 100);
    const clip = clipColumn([-1, -1, 0], [1, -0.5, 0]); // leaves out y = 0
    expect(pickPoint(positions, 3, matrix, 100, 100, 50, 50, 2, clip)).toBeNull();
    expect(pickPoint(positions, 3, matrix, 100, 100, 50, 50, 2, clipColumn([-1, -1, 0], [1, 1, 0]))?.index).toBe(1);
  });
});

describe('clip box', () => {
  it('keeps the rectangle between two corners at every height', () => {
    const box = clipColumn([5, 2, 30], [1, 4, 10]);
    expect(inBox(box, 3, 3, -1000)).toBe(true);
    expect(inBox(box, 3, 3, 1e6)).toBe(true);
    expect(inBox(box, 0.9, 3, 20)).toBe(false);
    expect(inBox(box, 3, 4.1, 20)).toBe(false);
    expect(measure('clip', [[5, 2, 30], [1, 4, 10]])).toMatchObject({ tool: 'clip', value: 8 });
  });

  it('draws its rectangle at the first corner\'s height', () => {
    expect(outline('clip', [[0, 0, 3], [2, 1, 9]])).toEqual([[0, 0, 3], [2, 0, 3], [2, 1, 3], [0, 1, 3]]);
    expect(outline('distance', [[0, 0, 3], [2, 1, 9]])).toEqual([[0, 0, 3], [2, 1, 9]]);
  });
});

describe('keyboard orbit', () => {
  it('turns around the vertical axis through the target', () => {
    const p = orbitPosition([11, 1, 1], [1, 1, 1], Math.PI / 2, 0);
    expect(p[0]).toBeCloseTo(1, 9);
    expect(p[1]).toBeCloseTo(11, 9);
    expect(p[2]).toBeCloseTo(1, 9);
  });

  it('tilts without passing over the pole', () => {
    const p = orbitPosition([0, -10, 0], [0, 0, 0], 0, -Math.PI);
    expect(Math.hypot(...p)).toBeCloseTo(10, 9);
    expect(p[2]).toBeGreaterThan(9.99);
    expect(p[2]).toBeLessThan(10);
  });

  it('zooms along the line of sight, not through the target', () => {
    expect(dollyPosition([10, 0, 0], [0, 0, 0], 0.5)).toEqual([5, 0, 0]);
    expect(dollyPosition([1, 0, 0], [0, 0, 0], 0.01, 0.5)).toEqual([0.5, 0, 0]);
  });
});

describe('3D measurements', () => {
  it('measure a height, an angle and an area from the points clicked', () => {
    expect(measure('height', [[0, 0, 10], [3, 4, 12.5]])).toEqual({ tool: 'height', value: 2.5, details: [{ label: 'apart horizontally', metres: 5 }] });
    expect(measure('angle', [[5, 0, 0], [0, 0, 0], [0, 3, 0]])!.value).toBeCloseTo(90, 9);
    expect(measure('angle', [[1, 0, 0], [0, 0, 0], [1, 0, 1]])!.value).toBeCloseTo(45, 9);
    // A 20 m x 10 m rectangle on a slope: its area seen from above, its perimeter along the ground.
    const rectangle: Vec3[] = [[0, 0, 0], [20, 0, 2], [20, 10, 2], [0, 10, 0]];
    const area = measure('area', rectangle)!;
    expect(area.value).toBeCloseTo(200, 9);
    expect(area.details[0].metres).toBeCloseTo(2 * Math.hypot(20, 2) + 20, 9);
    expect(horizontalArea([...rectangle].reverse())).toBeCloseTo(200, 9);
    expect(angleAt([1, 0, 0], [0, 0, 0], [-1, 0, 0])).toBeCloseTo(180, 9);
  });

  it('wait for the points a tool needs, then start afresh', () => {
    let picks: Vec3[] = [];
    for (const p of [[0, 0, 0], [1, 0, 0]] as Vec3[]) {
      expect(measure('angle', picks)).toBeNull();
      picks = addPick('angle', picks, p);
    }
    picks = addPick('angle', picks, [1, 1, 0]);
    expect(measure('angle', picks)!.value).toBeCloseTo(90, 9);
    expect(addPick('angle', picks, [5, 5, 5])).toEqual([[5, 5, 5]]);
    expect(addPick('distance', [[0, 0, 0], [1, 1, 1]], [2, 2, 2])).toEqual([[2, 2, 2]]);
    // An area takes corners until the tool is put down.
    let corners: Vec3[] = [];
    for (let i = 0; i < 6; i++) corners = addPick('area', corners, [i, i * i, 0]);
    expect(corners).toHaveLength(6);
    expect(measure('area', corners.slice(0, 2))).toBeNull();
  });
});

describe('cameras of shots.geojson', () => {
  // A shot of Brighton Beach as the engine writes it: a camera looking almost straight down from 38 m up.
  const shot = {
    properties: {
      filename: 'DJI_0018.JPG', width: 4000, height: 2250, focal: 0.5556,
      translation: [576663.2989, 5188165.0734, 197.7229], rotation: [2.8880867, -1.1356537, 0.0586183],
    },
  };

  it('turns the axis-angle into a rotation', () => {
    const r = rotationMatrix([0, 0, Math.PI / 2]);
    expect(r[0][1]).toBeCloseTo(-1, 12);
    expect(r[1][0]).toBeCloseTo(1, 12);
    expect(rotationMatrix([0, 0, 0])).toEqual([[1, 0, 0], [0, 1, 0], [0, 0, 1]]);
  });

  it('frames each photograph below its camera, as wide as its lens sees', () => {
    const [camera] = camerasOf({ features: [shot, { properties: { filename: 'no-pose.JPG' } }] });
    expect(camerasOf({ features: [shot, { properties: { filename: 'x' } }] })).toHaveLength(1);
    expect(camera.centre).toEqual(shot.properties.translation);
    const ahead = [0, 1, 2].map((axis) => camera.corners.reduce((sum, c) => sum + c[axis] / 4, 0));
    expect(ahead[2] / Math.hypot(ahead[0], ahead[1], ahead[2])).toBeLessThan(-0.95); // nadir
    // Across the image's width the corners are as far apart as the lens' field of view: 1 / 0.5556 at unit depth.
    expect(distanceParts(camera.corners[0], camera.corners[1]).distance).toBeCloseTo(1 / 0.5556, 6);
    const segments = frustumSegments([camera], [576663, 5188165, 197], 2);
    expect(segments).toHaveLength(8 * 2 * 3);
    expect([...segments.slice(0, 3)].map((v) => Number(v.toFixed(3)))).toEqual([0.299, 0.073, 0.723]);
    expect(camerasOf(null)).toEqual([]);
  });
});

describe('cloud profile', () => {
  // Ground rising 1 m in 10 along x, a 3 m box from x = 10 to 12, and a post 1 m beside the line.
  const points: number[] = [];
  for (let x = 0; x <= 20; x += 0.05) {
    for (const y of [-0.06, 0, 0.06]) points.push(x, y, x / 10 + (x >= 10 && x <= 12 ? 3 : 0));
  }
  points.push(5, 1, 50);
  const chunks = [{ positions: new Float32Array(points), count: points.length / 3 }];

  it('follows the ground and the box along the line, leaving out what lies beside it', () => {
    const profile = cloudProfile(chunks, [0, 0, 0], [20, 0, 0], 41);
    expect(profile).toHaveLength(41);
    expect(profile[40].distance).toBeCloseTo(20, 6);
    for (const { distance, height } of profile) {
      const expected = distance / 10 + (distance > 10.2 && distance < 11.8 ? 3 : 0);
      if (Math.abs(distance - 10) > 0.3 && Math.abs(distance - 12) > 0.3) expect(height!).toBeCloseTo(expected, 1);
    }
    expect(Math.max(...profile.map((p) => p.height!))).toBeLessThan(10);
  });

  it('leaves a gap where no point lies, and none for a line of no length', () => {
    const profile = cloudProfile(chunks, [0, 3, 0], [20, 3, 0], 11);
    expect(profile.every((p) => p.height === null)).toBe(true);
    expect(cloudProfile(chunks, [1, 1, 0], [1, 1, 5], 11)).toEqual([]);
  });
});
