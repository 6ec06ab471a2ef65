// The colour ramps offered for elevation layers, with the stops a legend draws. The names are those the tile
// endpoint takes (matplotlib's); the stops are sampled from those maps so the legend matches the tiles.

export interface Ramp {
  name: string;
  label: string;
  stops: string[];
}

export const RAMPS: Ramp[] = [
  { name: 'viridis', label: 'Viridis', stops: ['#440154', '#414487', '#2a788e', '#22a884', '#7ad151', '#fde725'] },
  { name: 'terrain', label: 'Terrain', stops: ['#333399', '#0294fa', '#01cc66', '#ffff99', '#80604a', '#ffffff'] },
  { name: 'jet', label: 'Jet', stops: ['#000080', '#0000ff', '#00ffff', '#ffff00', '#ff0000', '#800000'] },
  { name: 'magma', label: 'Magma', stops: ['#000004', '#3b0f70', '#8c2981', '#de4968', '#fe9f6d', '#fcfdbf'] },
  { name: 'spectral_r', label: 'Spectral', stops: ['#5e4fa2', '#3288bd', '#99d594', '#fee08b', '#fc8d59', '#9e0142'] },
  { name: 'rdylgn_r', label: 'Green–red', stops: ['#006837', '#66bd63', '#d9ef8b', '#fee08b', '#f46d43', '#a50026'] },
];

export const DEFAULT_RAMP = 'viridis';

export function rampByName(name: string): Ramp {
  return RAMPS.find((ramp) => ramp.name === name) ?? RAMPS[0];
}

/** A CSS gradient from low (left) to high (right). */
export function rampGradient(ramp: Ramp): string {
  return `linear-gradient(to right, ${ramp.stops.join(', ')})`;
}

/**
 * Up to about `count` round values (1, 2 or 5 × 10ⁿ apart) within [min, max], for labelling a legend; each with
 * its position along the legend as a fraction.
 */
export function legendTicks(min: number, max: number, count = 5): { value: number; at: number }[] {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max <= min) return [{ value: min, at: 0 }];
  const step = niceStep((max - min) / Math.max(1, count - 1));
  const ticks: { value: number; at: number }[] = [];
  for (let value = Math.ceil(min / step - 1e-9) * step; value <= max + step * 1e-9; value += step) {
    ticks.push({ value: round(value, step), at: (value - min) / (max - min) });
  }
  return ticks;
}

/** The legend's labels over [min, max]: legendTicks' values, with the unit when there is one ("30 °C"). */
export function legendLabels(min: number, max: number, unit = '', count = 5): { text: string; at: number }[] {
  return legendTicks(min, max, count).map(({ value, at }) => ({ text: unit ? `${value} ${unit}` : String(value), at }));
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

/** Removes float noise (0.30000000000000004) by rounding to the step's decimals. */
function round(value: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  return Number(value.toFixed(decimals)) + 0; // + 0 turns -0 into 0, which would print as "-0"
}
