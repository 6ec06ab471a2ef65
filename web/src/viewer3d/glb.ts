// Reading a GLB's JSON chunk without three.js: which extensions it requires and its CESIUM_RTC centre, which
// the engine sets to the world frame's offset (the vertices are local, x east, y north, z up).
import type { Vec3 } from './geometry.ts';

export interface GlbInfo {
  extensions: string[];
  rtcCentre: Vec3 | null;
}

const GLB_MAGIC = 0x46546c67; // "glTF"
const JSON_CHUNK = 0x4e4f534a; // "JSON"

export function readGlbInfo(buffer: ArrayBuffer): GlbInfo {
  const view = new DataView(buffer);
  if (buffer.byteLength < 20 || view.getUint32(0, true) !== GLB_MAGIC) throw new Error('The textured model is not a GLB file');
  const length = view.getUint32(12, true);
  if (view.getUint32(16, true) !== JSON_CHUNK || 20 + length > buffer.byteLength) throw new Error('The textured model has no JSON chunk');
  const json = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 20, length))) as {
    extensionsUsed?: string[];
    extensionsRequired?: string[];
    extensions?: { CESIUM_RTC?: { center?: number[] } };
  };
  const centre = json.extensions?.CESIUM_RTC?.center;
  return {
    extensions: [...new Set([...(json.extensionsUsed ?? []), ...(json.extensionsRequired ?? [])])],
    rtcCentre: centre && centre.length === 3 ? [centre[0], centre[1], centre[2]] : null,
  };
}
