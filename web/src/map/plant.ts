// The Plant Health layer of an orthophoto, as WebODM's map draws it: a vegetation index (`formula`) read from the
// orthophoto's bands in a camera filter's order (`bands`), on a colour map over a range (`rescale`). What the
// service's layer metadata says (the index's histogram, the formulas and colour maps offered) and what the panel
// draws from it: histogram bars, handle positions, legend labels and the tiles' query. Pure: no DOM, no fetch.
import type { Ramp } from './ramps.ts';

/** A formula the orthophoto's bands allow, with WebODM's help text and the band orders it may be read in. */
export interface Algorithm {
  id: string;
  expr: string;
  help: string;
  filters: string[];
  range?: number[];
}

export interface ColorMap {
  key: string;
  label: string;
  /** 256 RGBA colours, low to high. */
  color_map: number[][];
}

export interface BandStatistics {
  percentiles: number[];
  min: number;
  max: number;
  std: number;
  /** [the counts of the bins, their edges (one more)]. */
  histogram: number[][];
}

/** The part of `.../orthophoto/metadata` the panel reads. */
export interface LayerMetadata {
  statistics: Record<string, BandStatistics>;
  algorithms: Algorithm[];
  color_maps: ColorMap[];
  auto_bands: { filter: string; match: boolean | null };
}

/** What the orthophoto's tiles are drawn with. */
export interface PlantStyle {
  formula: string;
  bands: string;
  colorMap: string;
  rescale: [number, number];
}

export const AUTO_BANDS = 'auto';
/** WebODM's colour map for a vegetation index: red (bare) to green (healthy). */
export const DEFAULT_INDEX_COLOR_MAP = 'rdylgn';

/** WebODM's colour map for temperatures: dark (cold) to bright (hot). */
export const THERMAL_COLOR_MAP = 'magma';

/**
 * The formula the panel starts with, from the number of the orthophoto's colour bands: temperatures in °C for a lone
 * band (a thermal camera's), NDVI where there is more than red, green and blue (a near-infrared band, as
 * multispectral cameras give), VARI (visible light only) otherwise.
 */
export function defaultFormula(colourBands: number): string {
  if (colourBands === 1) return 'Thermal C';
  return colourBands > 3 ? 'NDVI' : 'VARI';
}

/** The colour map a formula starts with: magma for temperatures, red to green for the vegetation indices. */
export const defaultColorMap = (formula: string): string => (formula.startsWith('Thermal') ? THERMAL_COLOR_MAP : DEFAULT_INDEX_COLOR_MAP);

/** The orthophoto's colour bands in its plain metadata (one statistics entry each, its alpha band left out). */
export const colourBandCount = (metadata: Pick<LayerMetadata, 'statistics'>): number => Object.keys(metadata.statistics).length;

/** The unit a formula's values are in: degrees Celsius for WebODM's "Thermal C"; none for the indices. */
export const unitOf = (formula: string): string => (formula === 'Thermal C' ? '°C' : '');

export interface FormulaGroup {
  label: string;
  algorithms: Algorithm[];
}

/**
 * The formulas grouped by what they read: visible light alone (they can be read as RGB), thermal (every band order
 * they take holds the long-wave infrared band L), and the multispectral rest (near infrared, red edge).
 */
export function formulaGroups(algorithms: Algorithm[]): FormulaGroup[] {
  const visible = (a: Algorithm) => a.filters.includes('RGB');
  const thermal = (a: Algorithm) => a.filters.every((filter) => filter.includes('L'));
  const groups: FormulaGroup[] = [
    { label: 'Visible light (RGB)', algorithms: algorithms.filter(visible) },
    { label: 'Multispectral', algorithms: algorithms.filter((a) => !visible(a) && !thermal(a)) },
    { label: 'Thermal', algorithms: algorithms.filter((a) => !visible(a) && thermal(a)) },
  ];
  return groups.filter((group) => group.algorithms.length > 0);
}

/** The band orders offered for a formula: auto (the orthophoto's own) first, then the formula's camera filters. */
export function bandChoices(algorithm: Algorithm | undefined): string[] {
  return [AUTO_BANDS, ...(algorithm?.filters ?? [])];
}

/** The metadata query of an index (WebODM's names). */
export function metadataQuery(formula: string, bands: string): string {
  return new URLSearchParams({ formula, bands }).toString();
}

/** The index's statistics: the metadata's only band. */
export const indexStatistics = (metadata: LayerMetadata): BandStatistics | undefined => metadata.statistics['1'];

/** The values the histogram spans: its first and last edges. */
export function histogramDomain(stats: BandStatistics): [number, number] {
  const edges = stats.histogram[1];
  return [edges[0], edges[edges.length - 1]];
}

/** The range a new index is drawn over: its 2nd to 98th percentiles (as WebODM's map), or its whole span when flat. */
export function initialRescale(stats: BandStatistics): [number, number] {
  const [low, high] = stats.percentiles;
  if (Number.isFinite(low) && Number.isFinite(high) && high > low) return [low, high];
  const [min, max] = histogramDomain(stats);
  return max > min ? [min, max] : [min - 0.5, min + 0.5];
}

/** How far one key press moves a handle: one histogram bin. */
export function stepOf(stats: BandStatistics): number {
  const [min, max] = histogramDomain(stats);
  return (max - min) / Math.max(1, stats.histogram[0].length);
}

/** Decimals that tell values a step apart, from 0 to 4. */
export function decimalsFor(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 2;
  return Math.min(4, Math.max(0, Math.ceil(-Math.log10(step))));
}

/** A value for people: rounded to `decimals`, with its unit ("0.42", "31.5 °C"). */
export function formatValue(value: number, decimals: number, unit = ''): string {
  const text = (Number(value.toFixed(decimals)) + 0).toFixed(decimals); // + 0: no "-0.00"
  return unit ? `${text} ${unit}` : text;
}

/** The tiles' query of a style: WebODM's formula, bands, rescale (rounded to a step's decimals) and color_map. */
export function plantQuery(style: PlantStyle, decimals = 4): Record<string, string> {
  const [low, high] = style.rescale.map((value) => Number(value.toFixed(decimals)) + 0);
  return { formula: style.formula, bands: style.bands, rescale: `${low},${high}`, color_map: style.colorMap };
}

/** Where a value sits along [min, max], as a fraction from 0 to 1. */
export function valueToFraction(value: number, [min, max]: [number, number]): number {
  if (!(max > min)) return 0;
  return Math.min(1, Math.max(0, (value - min) / (max - min)));
}

/** The value at a fraction along [min, max] (clamped to it). */
export function fractionToValue(fraction: number, [min, max]: [number, number]): number {
  return min + Math.min(1, Math.max(0, fraction)) * (max - min);
}

export type Handle = 'min' | 'max';

/**
 * The range with one handle moved to `value`: kept within the domain, and at least a step below (or above) the other
 * handle, so that the range never closes.
 */
export function moveHandle(range: [number, number], handle: Handle, value: number, domain: [number, number], step: number): [number, number] {
  const [low, high] = range;
  if (handle === 'min') return [Math.min(Math.max(value, domain[0]), high - step), high];
  return [low, Math.max(Math.min(value, domain[1]), low + step)];
}

/** Where a key sends a handle (the keys of an ARIA slider), or null for a key that does not move it. */
export function keyTarget(key: string, value: number, domain: [number, number], step: number): number | null {
  switch (key) {
    case 'ArrowLeft':
    case 'ArrowDown':
      return value - step;
    case 'ArrowRight':
    case 'ArrowUp':
      return value + step;
    case 'PageDown':
      return value - 10 * step;
    case 'PageUp':
      return value + 10 * step;
    case 'Home':
      return domain[0];
    case 'End':
      return domain[1];
    default:
      return null;
  }
}

export interface Bar {
  x: number;
  y: number;
  width: number;
  height: number;
  colour: string;
}

/** The colour at a fraction along a colour map, as CSS. */
function colourAt(colours: number[][], fraction: number): string {
  const [r, g, b] = colours[Math.round(Math.min(1, Math.max(0, fraction)) * (colours.length - 1))];
  return `rgb(${r}, ${g}, ${b})`;
}

/** Bins outside the range are drawn in this grey: the tiles draw them in the colour map's end colours. */
export const OUTSIDE_COLOUR = '#9aa3ad';

/**
 * The histogram's bars in a width × height box (y down): one per bin, heights relative to the fullest bin, each in
 * the colour its values are drawn in over `range`; bins outside the range grey.
 */
export function histogramBars(stats: BandStatistics, range: [number, number], colours: number[][], width: number, height: number): Bar[] {
  const [counts, edges] = stats.histogram;
  const domain = histogramDomain(stats);
  const tallest = Math.max(1, ...counts);
  return counts.map((count, bin) => {
    const x = valueToFraction(edges[bin], domain) * width;
    const barHeight = (count / tallest) * height;
    const centre = (edges[bin] + edges[bin + 1]) / 2;
    const inside = centre >= range[0] && centre <= range[1];
    const colour = inside && colours.length > 0 ? colourAt(colours, valueToFraction(centre, range)) : OUTSIDE_COLOUR;
    return { x, y: height - barHeight, width: valueToFraction(edges[bin + 1], domain) * width - x, height: barHeight, colour };
  });
}

/** A colour map as a legend's ramp: `stops` evenly sampled colours. */
export function colorMapRamp(colorMap: ColorMap, stops = 9): Ramp {
  const hex = (value: number) => Math.round(value).toString(16).padStart(2, '0');
  const colours = colorMap.color_map;
  const sampled = Array.from({ length: stops }, (_, i) => colours[Math.round((i / (stops - 1)) * (colours.length - 1))]);
  return { name: colorMap.key, label: colorMap.label, stops: sampled.map(([r, g, b]) => `#${hex(r)}${hex(g)}${hex(b)}`) };
}
