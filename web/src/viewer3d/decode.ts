// Decoding of uncompressed LAS point records into what the GPU draws: float32 positions relative to an origin
// (UTM coordinates are too large for float32 to keep centimetres), 8-bit RGB, the intensity and the ASPRS class.
import type { Vec3 } from './geometry.ts';

/** Byte offset of the red channel in each LAS point data record format; formats without colour are absent. */
const RGB_OFFSET: Record<number, number> = { 2: 20, 3: 28, 5: 28, 7: 30, 8: 30, 10: 30 };

export const hasColour = (format: number): boolean => format in RGB_OFFSET;

/** The classification's byte: five bits of byte 15 in formats 0 to 5, the whole of byte 16 from format 6. */
const classOf = (view: DataView, base: number, format: number): number =>
  format >= 6 ? view.getUint8(base + 16) : view.getUint8(base + 15) & 0x1f;

export interface LasLayout {
  format: number;
  recordLength: number;
  scale: Vec3;
  offset: Vec3;
}

export interface DecodedPoints {
  count: number;
  positions: Float32Array;
  colours: Uint8Array;
  classes: Uint8Array;
  /** LAS intensity (bytes 12-13 of every format): a laser's return strength; 0 throughout in photogrammetry. */
  intensities: Uint16Array;
  /** Scene-frame z range of these points. */
  zMin: number;
  zMax: number;
}

/**
 * LAS says colours are 16-bit, yet some writers store 8-bit values: when no channel exceeds 255 the values are
 * taken as 8-bit. Decided per file from its first node, so that all nodes agree.
 */
export function colourShift(bytes: Uint8Array, count: number, layout: LasLayout): 0 | 8 {
  const at = RGB_OFFSET[layout.format];
  if (at === undefined) return 8;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    const base = i * layout.recordLength + at;
    if (view.getUint16(base, true) > 255 || view.getUint16(base + 2, true) > 255 || view.getUint16(base + 4, true) > 255) return 8;
  }
  return 0;
}

/**
 * The intensity that the intensity colours stretch to white: the 99th percentile of the first node's (a few
 * specular returns would leave the rest dark under the maximum); 0 when the file records none. Decided per file
 * from its first node, as the colours' shift is.
 */
export function intensityPeak(bytes: Uint8Array, count: number, layout: LasLayout): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values = new Uint16Array(count);
  for (let i = 0; i < count; i++) values[i] = view.getUint16(i * layout.recordLength + 12, true);
  values.sort();
  return count ? values[Math.min(count - 1, Math.floor(count * 0.99))] : 0;
}

export function decodePoints(bytes: Uint8Array, count: number, layout: LasLayout, origin: Vec3, shift: 0 | 8): DecodedPoints {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const positions = new Float32Array(count * 3);
  const colours = new Uint8Array(count * 3);
  const classes = new Uint8Array(count);
  const intensities = new Uint16Array(count);
  // The offset minus the origin in float64 first: the small remainder then survives float32.
  const [sx, sy, sz] = layout.scale;
  const ox = layout.offset[0] - origin[0];
  const oy = layout.offset[1] - origin[1];
  const oz = layout.offset[2] - origin[2];
  const rgbAt = RGB_OFFSET[layout.format];
  let zMin = Infinity;
  let zMax = -Infinity;
  for (let i = 0; i < count; i++) {
    const base = i * layout.recordLength;
    const z = view.getInt32(base + 8, true) * sz + oz;
    positions[i * 3] = view.getInt32(base, true) * sx + ox;
    positions[i * 3 + 1] = view.getInt32(base + 4, true) * sy + oy;
    positions[i * 3 + 2] = z;
    if (z < zMin) zMin = z;
    if (z > zMax) zMax = z;
    classes[i] = classOf(view, base, layout.format);
    intensities[i] = view.getUint16(base + 12, true);
    if (rgbAt === undefined) {
      colours.fill(200, i * 3, i * 3 + 3);
    } else {
      colours[i * 3] = Math.min(255, view.getUint16(base + rgbAt, true) >> shift);
      colours[i * 3 + 1] = Math.min(255, view.getUint16(base + rgbAt + 2, true) >> shift);
      colours[i * 3 + 2] = Math.min(255, view.getUint16(base + rgbAt + 4, true) >> shift);
    }
  }
  return { count, positions, colours, classes, intensities, zMin, zMax };
}
