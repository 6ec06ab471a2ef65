// Vector and box math of the viewer, without three.js, so that level-of-detail selection and picking can be tested
// in Node. Vectors are plain [x, y, z] triples; matrices are 16 numbers in column-major order (three.js' order).

export type Vec3 = readonly [number, number, number];
export interface Box3 {
  min: Vec3;
  max: Vec3;
}
/** a·x + b·y + c·z + d ≥ 0 on the inner side. */
export type Plane = readonly [number, number, number, number];

export const sub = (a: Vec3, b: Vec3): Vec3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
export const length = (v: Vec3): number => Math.hypot(v[0], v[1], v[2]);
export const distance = (a: Vec3, b: Vec3): number => length(sub(a, b));

/** Planes of the frustum that a projection × view matrix maps to clip space (Gribb and Hartmann's method). */
export function frustumPlanes(m: ArrayLike<number>): Plane[] {
  const row = (i: number) => [m[i], m[4 + i], m[8 + i], m[12 + i]];
  const [r0, r1, r2, r3] = [row(0), row(1), row(2), row(3)];
  const combine = (r: number[], sign: number) => normalizePlane(r3.map((v, i) => v + sign * r[i]));
  return [combine(r0, 1), combine(r0, -1), combine(r1, 1), combine(r1, -1), combine(r2, 1), combine(r2, -1)];
}

function normalizePlane(p: number[]): Plane {
  const n = Math.hypot(p[0], p[1], p[2]) || 1;
  return [p[0] / n, p[1] / n, p[2] / n, p[3] / n];
}

/** Conservative: a box near a frustum corner may pass although it is outside; it only costs a node load. */
export function boxIntersectsFrustum(planes: readonly Plane[], box: Box3): boolean {
  for (const [a, b, c, d] of planes) {
    // The corner farthest along the plane's normal: if even it is behind the plane, the whole box is.
    const x = a >= 0 ? box.max[0] : box.min[0];
    const y = b >= 0 ? box.max[1] : box.min[1];
    const z = c >= 0 ? box.max[2] : box.min[2];
    if (a * x + b * y + c * z + d < 0) return false;
  }
  return true;
}

/** 0 when the point is inside the box. */
export function distanceToBox(p: Vec3, box: Box3): number {
  let sum = 0;
  for (let i = 0; i < 3; i++) {
    const gap = Math.max(box.min[i] - p[i], 0, p[i] - box.max[i]);
    sum += gap * gap;
  }
  return Math.sqrt(sum);
}

/** The size in CSS pixels that a length at a given distance covers in a perspective view. */
export function projectedSize(worldSize: number, dist: number, fovYDegrees: number, viewportHeight: number): number {
  const visibleHeight = 2 * Math.max(dist, 1e-6) * Math.tan((fovYDegrees * Math.PI) / 360);
  return (worldSize / visibleHeight) * viewportHeight;
}

export interface DistanceParts {
  /** Straight-line distance. */
  distance: number;
  horizontal: number;
  /** Signed: positive when the second point is higher. */
  vertical: number;
}

/** The scene's z is up and its units are metres (the point cloud's CRS is projected). */
export function distanceParts(a: Vec3, b: Vec3): DistanceParts {
  const d = sub(b, a);
  return { distance: length(d), horizontal: Math.hypot(d[0], d[1]), vertical: d[2] };
}

/** The area enclosed by a polygon's outline seen from above (its points in order; the z is ignored). */
export function horizontalArea(points: readonly Vec3[]): number {
  let twice = 0;
  for (let i = 0; i < points.length; i++) {
    const a = points[i];
    const b = points[(i + 1) % points.length];
    twice += a[0] * b[1] - b[0] * a[1];
  }
  return Math.abs(twice) / 2;
}

/** The length of a path through the points, back to the first when `closed`. */
export function pathLength(points: readonly Vec3[], closed: boolean): number {
  let sum = 0;
  for (let i = 1; i < points.length; i++) sum += distance(points[i - 1], points[i]);
  return closed && points.length > 2 ? sum + distance(points[points.length - 1], points[0]) : sum;
}

/** The angle in degrees at `b` between the directions to `a` and to `c`. */
export function angleAt(a: Vec3, b: Vec3, c: Vec3): number {
  const u = sub(a, b);
  const v = sub(c, b);
  const cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (length(u) * length(v) || 1);
  return (Math.acos(Math.min(1, Math.max(-1, cos))) * 180) / Math.PI;
}

/** Whether a point lies in a box, its faces included. */
export const inBox = (b: Box3, x: number, y: number, z: number): boolean =>
  x >= b.min[0] && x <= b.max[0] && y >= b.min[1] && y <= b.max[1] && z >= b.min[2] && z <= b.max[2];

/** What a clip box keeps: the rectangle between two picked corners seen from above, at every height. */
export function clipColumn(a: Vec3, b: Vec3): Box3 {
  return { min: [Math.min(a[0], b[0]), Math.min(a[1], b[1]), -Infinity], max: [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Infinity] };
}
