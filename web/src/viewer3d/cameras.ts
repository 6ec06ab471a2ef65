// The photographs' cameras in the 3D view, from the task's shots.geojson (ODM's: each camera's centre in the CRS
// as `translation`, its orientation as `rotation`, an axis-angle of the world-to-camera rotation, and the photo's
// size and focal length as a fraction of its larger side). Pure arithmetic, tested in Node.
import type { Vec3 } from './geometry.ts';

export interface Camera {
  filename: string;
  /** In the CRS. */
  centre: Vec3;
  /** The image's corners at unit depth in front of the camera, as world directions (top-left first, clockwise). */
  corners: Vec3[];
}

interface ShotProperties {
  filename?: unknown;
  translation?: unknown;
  rotation?: unknown;
  width?: unknown;
  height?: unknown;
  focal?: unknown;
}

const isTriple = (v: unknown): v is Vec3 => Array.isArray(v) && v.length === 3 && v.every((n) => typeof n === 'number' && Number.isFinite(n));

/** Rodrigues' formula: the 3 × 3 matrix (rows) of an axis-angle rotation. */
export function rotationMatrix([x, y, z]: Vec3): number[][] {
  const angle = Math.hypot(x, y, z);
  if (angle < 1e-12) return [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
  const [kx, ky, kz] = [x / angle, y / angle, z / angle];
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const t = 1 - c;
  return [
    [c + kx * kx * t, kx * ky * t - kz * s, kx * kz * t + ky * s],
    [ky * kx * t + kz * s, c + ky * ky * t, ky * kz * t - kx * s],
    [kz * kx * t - ky * s, kz * ky * t + kx * s, c + kz * kz * t],
  ];
}

/** A camera-frame direction (x right, y down, z ahead) in the world: the transposed world-to-camera rotation. */
function toWorld(r: number[][], [u, v, w]: Vec3): Vec3 {
  return [r[0][0] * u + r[1][0] * v + r[2][0] * w, r[0][1] * u + r[1][1] * v + r[2][1] * w, r[0][2] * u + r[1][2] * v + r[2][2] * w];
}

/** The cameras of a shots.geojson document; shots without a usable pose are left out. */
export function camerasOf(document: unknown): Camera[] {
  const features = (document as { features?: { properties?: ShotProperties }[] } | null)?.features;
  if (!Array.isArray(features)) return [];
  return features.flatMap(({ properties: p = {} }) => {
    if (typeof p.filename !== 'string' || !isTriple(p.translation) || !isTriple(p.rotation)) return [];
    const width = typeof p.width === 'number' && p.width > 0 ? p.width : 4;
    const height = typeof p.height === 'number' && p.height > 0 ? p.height : 3;
    const focal = typeof p.focal === 'number' && p.focal > 0 ? p.focal : 0.85;
    // Half the image's sides over the focal length (both in units of the larger side).
    const halfX = width / Math.max(width, height) / 2 / focal;
    const halfY = height / Math.max(width, height) / 2 / focal;
    const r = rotationMatrix(p.rotation);
    const corners = ([[-halfX, -halfY, 1], [halfX, -halfY, 1], [halfX, halfY, 1], [-halfX, halfY, 1]] as Vec3[]).map((c) => toWorld(r, c));
    return [{ filename: p.filename, centre: p.translation, corners }];
  });
}

/** The frustums as line segments (pairs of points, in the scene's frame): four edges to the image's corners and
 * the image's outline, each `size` metres deep. */
export function frustumSegments(cameras: readonly Camera[], origin: Vec3, size: number): Float32Array {
  const out = new Float32Array(cameras.length * 8 * 2 * 3);
  let i = 0;
  const put = (p: Vec3) => {
    out[i++] = p[0];
    out[i++] = p[1];
    out[i++] = p[2];
  };
  for (const { centre, corners } of cameras) {
    const apex: Vec3 = [centre[0] - origin[0], centre[1] - origin[1], centre[2] - origin[2]];
    const ends = corners.map((d): Vec3 => [apex[0] + d[0] * size, apex[1] + d[1] * size, apex[2] + d[2] * size]);
    ends.forEach((end, k) => {
      put(apex);
      put(end);
      put(end);
      put(ends[(k + 1) % 4]);
    });
  }
  return out;
}
