// The Plant Health logic of the map: the default formula, the formula groups and band choices from the metadata's
// algorithms, the histogram's bars, the handles' values and keys, the tiles' query and the legend's labels.
import { describe, expect, it } from 'vitest';
import {
  type Algorithm,
  type BandStatistics,
  OUTSIDE_COLOUR,
  bandChoices,
  colorMapRamp,
  colourBandCount,
  decimalsFor,
  defaultColorMap,
  defaultFormula,
  formatValue,
  formulaGroups,
  fractionToValue,
  histogramBars,
  histogramDomain,
  initialRescale,
  keyTarget,
  metadataQuery,
  moveHandle,
  plantQuery,
  stepOf,
  unitOf,
  valueToFraction,
} from '../../web/src/map/plant.ts';
import { legendLabels } from '../../web/src/map/ramps.ts';

const algorithm = (id: string, filters: string[]): Algorithm => ({ id, expr: '', help: `${id} help`, filters });

/** Four bins over -1..1: counts 1, 4, 2, 0. */
const stats: BandStatistics = { percentiles: [-0.2, 0.6], min: -1, max: 1, std: 0.3, histogram: [[1, 4, 2, 0], [-1, -0.5, 0, 0.5, 1]] };
/** A colour map from black to white, 256 colours. */
const greys = Array.from({ length: 256 }, (_, i) => [i, i, i, 255]);

describe('plant health choices', () => {
  it('starts with NDVI where there is a fourth colour band, VARI on an RGB orthophoto, °C on a lone thermal band', () => {
    expect(defaultFormula(colourBandCount({ statistics: { 1: stats, 2: stats, 3: stats } }))).toBe('VARI');
    expect(defaultFormula(colourBandCount({ statistics: { 1: stats, 2: stats, 3: stats, 4: stats } }))).toBe('NDVI');
    expect(defaultFormula(colourBandCount({ statistics: { 1: stats } }))).toBe('Thermal C');
    expect([defaultColorMap('Thermal C'), defaultColorMap('NDVI')]).toEqual(['magma', 'rdylgn']);
  });

  it('groups the formulas by the light they read, and offers auto and their camera filters', () => {
    const vari = algorithm('VARI', ['RGB']);
    const ndvi = algorithm('NDVI', ['RGN', 'NRG', 'RGBN']);
    const thermal = algorithm('Thermal C', ['BGRNReL', 'BGRReNL']);
    expect(formulaGroups([ndvi, vari, thermal])).toEqual([
      { label: 'Visible light (RGB)', algorithms: [vari] },
      { label: 'Multispectral', algorithms: [ndvi] },
      { label: 'Thermal', algorithms: [thermal] },
    ]);
    expect(formulaGroups([vari]).map((group) => group.label)).toEqual(['Visible light (RGB)']);
    expect(bandChoices(ndvi)).toEqual(['auto', 'RGN', 'NRG', 'RGBN']);
    expect(bandChoices(undefined)).toEqual(['auto']);
  });

  it('shows temperatures in °C and indices without a unit', () => {
    expect(unitOf('Thermal C')).toBe('°C');
    expect(unitOf('NDVI')).toBe('');
    expect(formatValue(31.46, 1, unitOf('Thermal C'))).toBe('31.5 °C');
    expect(formatValue(-0.0001, 2)).toBe('0.00');
    expect(legendLabels(28, 36, '°C', 5).map((label) => label.text)).toEqual(['28 °C', '30 °C', '32 °C', '34 °C', '36 °C']);
    expect(legendLabels(0, 1, '', 3).map(({ text, at }) => [text, at + 0])).toEqual([['0', 0], ['0.5', 0.5], ['1', 1]]);
  });
});

describe('plant health queries', () => {
  it("asks the metadata and the tiles with WebODM's parameters", () => {
    expect(metadataQuery('Thermal C', 'auto')).toBe('formula=Thermal+C&bands=auto');
    expect(plantQuery({ formula: 'NDVI', bands: 'RGBN', colorMap: 'rdylgn', rescale: [0.123456, 0.87654321] })).toEqual({
      formula: 'NDVI',
      bands: 'RGBN',
      rescale: '0.1235,0.8765',
      color_map: 'rdylgn',
    });
    expect(plantQuery({ formula: 'VARI', bands: 'auto', colorMap: 'jet', rescale: [-0.00001, 1] }).rescale).toBe('0,1');
  });

  it('draws a new index over its 2nd to 98th percentiles, or its whole span when they meet', () => {
    expect(initialRescale(stats)).toEqual([-0.2, 0.6]);
    expect(initialRescale({ ...stats, percentiles: [0.3, 0.3] })).toEqual([-1, 1]);
    expect(initialRescale({ ...stats, percentiles: [0.3, 0.3], histogram: [[5], [0.3, 0.3]] })).toEqual([-0.2, 0.8]);
  });
});

describe('plant health histogram', () => {
  it('draws a bar per bin, as tall as its count, in its colour over the range and grey outside it', () => {
    const bars = histogramBars(stats, [-0.5, 0.5], greys, 200, 40);
    expect(bars.map((bar) => [bar.x, bar.width])).toEqual([[0, 50], [50, 50], [100, 50], [150, 50]]);
    expect(bars.map((bar) => bar.height)).toEqual([10, 40, 20, 0]);
    expect(bars.map((bar) => bar.y)).toEqual([30, 0, 20, 40]);
    // Bin centres -0.75 (outside), -0.25 and 0.25 (a quarter and three quarters along the range), 0.75 (outside).
    expect(bars.map((bar) => bar.colour)).toEqual([OUTSIDE_COLOUR, 'rgb(64, 64, 64)', 'rgb(191, 191, 191)', OUTSIDE_COLOUR]);
    expect(histogramBars({ ...stats, histogram: [[0, 0], [0, 1, 2]] }, [0, 2], [], 10, 10).map((bar) => bar.height)).toEqual([0, 0]);
  });

  it('places handles along the domain and reads values back, clamped to it', () => {
    const domain = histogramDomain(stats);
    expect(domain).toEqual([-1, 1]);
    expect(valueToFraction(0.5, domain)).toBe(0.75);
    expect(valueToFraction(3, domain)).toBe(1);
    expect(fractionToValue(0.25, domain)).toBe(-0.5);
    expect(fractionToValue(-0.2, domain)).toBe(-1);
    expect(fractionToValue(valueToFraction(0.3, domain), domain)).toBeCloseTo(0.3, 12);
  });

  it('moves a handle within the domain and never past the other one', () => {
    const step = stepOf(stats);
    expect(step).toBe(0.5);
    expect(moveHandle([-0.5, 0.5], 'min', -3, [-1, 1], step)).toEqual([-1, 0.5]);
    expect(moveHandle([-0.5, 0.5], 'min', 0.9, [-1, 1], step)).toEqual([0, 0.5]);
    expect(moveHandle([-0.5, 0.5], 'max', -0.9, [-1, 1], step)).toEqual([-0.5, 0]);
    expect(moveHandle([-0.5, 0.5], 'max', 2, [-1, 1], step)).toEqual([-0.5, 1]);
  });

  it('answers the keys of a slider', () => {
    expect(keyTarget('ArrowRight', 0, [-1, 1], 0.01)).toBe(0.01);
    expect(keyTarget('ArrowDown', 0, [-1, 1], 0.01)).toBe(-0.01);
    expect(keyTarget('PageUp', 0, [-1, 1], 0.01)).toBeCloseTo(0.1, 12);
    expect(keyTarget('Home', 0.4, [-1, 1], 0.01)).toBe(-1);
    expect(keyTarget('End', 0.4, [-1, 1], 0.01)).toBe(1);
    expect(keyTarget('a', 0.4, [-1, 1], 0.01)).toBeNull();
  });

  it('shows as many decimals as tell a step apart', () => {
    expect(decimalsFor(2 / 255)).toBe(3);
    expect(decimalsFor(0.5)).toBe(1);
    expect(decimalsFor(40 / 255)).toBe(1);
    expect(decimalsFor(3)).toBe(0);
    expect(decimalsFor(0)).toBe(2);
  });

  it("turns a colour map's 256 colours into a legend ramp", () => {
    const ramp = colorMapRamp({ key: 'greys', label: 'Greys', color_map: greys }, 3);
    expect(ramp).toEqual({ name: 'greys', label: 'Greys', stops: ['#000000', '#808080', '#ffffff'] });
  });
});
