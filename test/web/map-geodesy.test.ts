import { describe, expect, it } from 'vitest';
import { formatArea, formatElevation, formatLength, formatVolume } from '../../web/src/map/format.ts';
import { pathLength, polygonArea } from '../../web/src/map/geodesy.ts';

const R = 6_371_008.8; // IUGG mean Earth radius, metres
const rad = Math.PI / 180;

describe('pathLength', () => {
  it('one degree along a meridian is R·π/180', () => {
    expect(pathLength([[10, 45], [10, 46]])).toBeCloseTo(R * rad, 3); // 111 194.93 m
  });

  it('a quarter of the equator is a quarter of the circumference', () => {
    expect(pathLength([[0, 0], [45, 0], [90, 0]])).toBeCloseTo((Math.PI / 2) * R, 2);
  });

  it('Paris – London matches the published great-circle distance (≈ 343.5 km)', () => {
    const metres = pathLength([[2.3522, 48.8566], [-0.1276, 51.5072]]);
    expect(metres / 1000).toBeGreaterThan(343);
    expect(metres / 1000).toBeLessThan(344.2);
  });

  it('is zero for fewer than two points', () => {
    expect(pathLength([[1, 1]])).toBe(0);
  });
});

describe('polygonArea', () => {
  it('a 1°×1° cell on the equator is R²·Δλ·(sin φ₂ − sin φ₁)', () => {
    const expected = R * R * rad * Math.sin(rad); // ≈ 1.2364e10 m²
    const area = polygonArea([[0, 0], [1, 0], [1, 1], [0, 1]]);
    expect(Math.abs(area - expected) / expected).toBeLessThan(1e-6);
  });

  it('a 100 m square near Brighton Beach, Minnesota, is about 1 ha', () => {
    const dLat = 100 / (R * rad);
    const dLon = dLat / Math.cos(46.842 * rad);
    const area = polygonArea([[-91.994, 46.842], [-91.994 + dLon, 46.842], [-91.994 + dLon, 46.842 + dLat], [-91.994, 46.842 + dLat]]);
    expect(area).toBeGreaterThan(9_990);
    expect(area).toBeLessThan(10_010);
  });

  it('does not depend on the ring being closed or its orientation', () => {
    const ring: [number, number][] = [[0, 0], [0.01, 0], [0.01, 0.01], [0, 0.01]];
    const open = polygonArea(ring);
    expect(polygonArea([...ring, ring[0]])).toBeCloseTo(open, 6);
    expect(polygonArea([...ring].reverse())).toBeCloseTo(open, 6);
  });
});

describe('formatting', () => {
  it('switches to km and ha at 1 000 m and 10 000 m²', () => {
    expect(formatLength(999.5)).toBe('999.50 m');
    expect(formatLength(1234.5)).toBe('1.235 km');
    expect(formatArea(250)).toBe('250.00 m²');
    expect(formatArea(25_000)).toBe('2.500 ha (25,000 m²)');
    expect(formatVolume(300)).toBe('300.00 m³');
    expect(formatVolume(-12_345.4)).toBe('-12,345 m³');
    expect(formatElevation(182.345)).toBe('182.35 m');
  });
});
