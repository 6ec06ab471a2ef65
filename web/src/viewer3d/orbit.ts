// Keyboard orbiting: turns the camera about the target around the scene's up axis (z), the way a mouse drag does.
import type { Vec3 } from './geometry.ts';

const MIN_POLAR = 0.01;
const MAX_POLAR = Math.PI - 0.01;

/** The camera position after turning by `dAzimuth` around z and tilting by `dPolar` from z, radians. */
export function orbitPosition(position: Vec3, target: Vec3, dAzimuth: number, dPolar: number): Vec3 {
  const [dx, dy, dz] = [position[0] - target[0], position[1] - target[1], position[2] - target[2]];
  const radius = Math.hypot(dx, dy, dz);
  if (radius === 0) return position;
  const azimuth = Math.atan2(dy, dx) + dAzimuth;
  const polar = Math.min(MAX_POLAR, Math.max(MIN_POLAR, Math.acos(dz / radius) + dPolar));
  return [
    target[0] + radius * Math.sin(polar) * Math.cos(azimuth),
    target[1] + radius * Math.sin(polar) * Math.sin(azimuth),
    target[2] + radius * Math.cos(polar),
  ];
}

/** Moves the camera toward the target (factor < 1) or away from it (factor > 1). */
export function dollyPosition(position: Vec3, target: Vec3, factor: number, minDistance = 0.5): Vec3 {
  const d: Vec3 = [position[0] - target[0], position[1] - target[1], position[2] - target[2]];
  const radius = Math.hypot(d[0], d[1], d[2]);
  const scale = Math.max(minDistance, radius * factor) / (radius || 1);
  return [target[0] + d[0] * scale, target[1] + d[1] * scale, target[2] + d[2] * scale];
}
