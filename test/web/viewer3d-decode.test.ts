import { describe, expect, it } from 'vitest';
import { colourShift, decodePoints, intensityPeak } from '../../web/src/viewer3d/decode.ts';
import { readGlbInfo } from '../../web/src/viewer3d/glb.ts';

/** LAS point data record format 7 (36 bytes): X Y Z int32, …, RGB uint16 at byte 30. */
function format7(points: { X: number; Y: number; Z: number; rgb: [number, number, number]; cls?: number; intensity?: number }[]): Uint8Array {
  const bytes = new Uint8Array(points.length * 36);
  const view = new DataView(bytes.buffer);
  points.forEach((p, i) => {
    view.setInt32(i * 36, p.X, true);
    view.setInt32(i * 36 + 4, p.Y, true);
    view.setInt32(i * 36 + 8, p.Z, true);
    view.setUint16(i * 36 + 12, p.intensity ?? 0, true);
    view.setUint8(i * 36 + 16, p.cls ?? 0);
    p.rgb.forEach((c, j) => view.setUint16(i * 36 + 30 + j * 2, c, true));
  });
  return bytes;
}

const layout = { format: 7, recordLength: 36, scale: [0.001, 0.001, 0.001] as const, offset: [576000, 5188000, 100] as const };

describe('LAS point decoding', () => {
  it('reads each point\'s class: a byte of its own from format 6, five bits of the flags before', () => {
    const raw = format7([{ X: 0, Y: 0, Z: 0, rgb: [0, 0, 0], cls: 6 }, { X: 0, Y: 0, Z: 0, rgb: [0, 0, 0], cls: 2 }]);
    expect([...decodePoints(raw, 2, layout, [0, 0, 0], 8).classes]).toEqual([6, 2]);
    // Format 2 (26 bytes): classification in the low five bits of byte 15, flags above them.
    const old = new Uint8Array(26);
    old[15] = 0b1010_0101;
    const format2 = { ...layout, format: 2, recordLength: 26 };
    expect([...decodePoints(old, 1, format2, [0, 0, 0], 8).classes]).toEqual([5]);
  });
  it('keeps millimetres of UTM coordinates once the origin is subtracted', () => {
    const raw = format7([{ X: 705_123, Y: 170_456, Z: 61_789, rgb: [65535, 32768, 0] }]);
    const out = decodePoints(raw, 1, layout, [576705, 5188170, 160], 8);
    // 576705.123 - 576705 etc.: float32 keeps these to well under a millimetre.
    expect(out.positions[0]).toBeCloseTo(0.123, 5);
    expect(out.positions[1]).toBeCloseTo(0.456, 5);
    expect(out.positions[2]).toBeCloseTo(1.789, 5);
    expect([...out.colours]).toEqual([255, 128, 0]);
    expect(out.zMin).toBeCloseTo(1.789, 9);
  });

  it('takes colours as 8-bit when no channel exceeds 255', () => {
    const eight = format7([{ X: 0, Y: 0, Z: 0, rgb: [200, 100, 50] }, { X: 0, Y: 0, Z: 0, rgb: [255, 0, 1] }]);
    const sixteen = format7([{ X: 0, Y: 0, Z: 0, rgb: [200, 100, 50] }, { X: 0, Y: 0, Z: 0, rgb: [256, 0, 0] }]);
    expect(colourShift(eight, 2, layout)).toBe(0);
    expect(colourShift(sixteen, 2, layout)).toBe(8);
    expect([...decodePoints(eight, 2, layout, [0, 0, 0], 0).colours.slice(0, 3)]).toEqual([200, 100, 50]);
  });

  it('reads intensities, and stretches them to the first node\'s 99th percentile, not to a spike', () => {
    const returns = Array.from({ length: 200 }, (_, i) => ({ X: 0, Y: 0, Z: 0, rgb: [0, 0, 0] as [number, number, number], intensity: i < 199 ? 1000 + i : 65535 }));
    const raw = format7(returns);
    expect([...decodePoints(raw, 200, layout, [0, 0, 0], 8).intensities.slice(0, 3)]).toEqual([1000, 1001, 1002]);
    expect(intensityPeak(raw, 200, layout)).toBe(1198);
    const photogrammetry = format7([{ X: 0, Y: 0, Z: 0, rgb: [10, 20, 30] }, { X: 1, Y: 1, Z: 1, rgb: [10, 20, 30] }]);
    expect(intensityPeak(photogrammetry, 2, layout)).toBe(0);
  });

  it('reports the z range of the node', () => {
    const raw = format7([5, -3, 12].map((z) => ({ X: 0, Y: 0, Z: z * 1000, rgb: [0, 0, 0] as [number, number, number] })));
    const out = decodePoints(raw, 3, layout, [576000, 5188000, 100], 8);
    expect(out.zMin).toBeCloseTo(-3, 9);
    expect(out.zMax).toBeCloseTo(12, 9);
  });
});

function glb(json: unknown): ArrayBuffer {
  let text = JSON.stringify(json);
  while (text.length % 4) text += ' ';
  const body = new TextEncoder().encode(text);
  const buffer = new ArrayBuffer(20 + body.length);
  const view = new DataView(buffer);
  view.setUint32(0, 0x46546c67, true);
  view.setUint32(4, 2, true);
  view.setUint32(8, buffer.byteLength, true);
  view.setUint32(12, body.length, true);
  view.setUint32(16, 0x4e4f534a, true);
  new Uint8Array(buffer, 20).set(body);
  return buffer;
}

describe('GLB header', () => {
  it('reads the CESIUM_RTC centre and the extensions', () => {
    const info = readGlbInfo(glb({ asset: { version: '2.0' }, extensionsUsed: ['CESIUM_RTC'], extensionsRequired: ['KHR_draco_mesh_compression'], extensions: { CESIUM_RTC: { center: [576705, 5188170, 0] } } }));
    expect(info.rtcCentre).toEqual([576705, 5188170, 0]);
    expect(info.extensions.sort()).toEqual(['CESIUM_RTC', 'KHR_draco_mesh_compression']);
  });

  it('has no centre for a model in a local frame, and rejects what is not a GLB', () => {
    expect(readGlbInfo(glb({ asset: { version: '2.0' } })).rtcCentre).toBeNull();
    expect(() => readGlbInfo(new TextEncoder().encode('{"asset":{}}').buffer as ArrayBuffer)).toThrow(/not a GLB/);
  });
});
