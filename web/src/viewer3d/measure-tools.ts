// The 3D view's measurements: what each tool takes (how many clicked points) and what it answers, kept apart from
// three.js so that it can be tested in Node.
import { type Vec3, angleAt, distanceParts, horizontalArea, pathLength } from './geometry.ts';

export type MeasureTool = 'distance' | 'height' | 'angle' | 'area' | 'profile' | 'clip';

export const TOOLS: { tool: MeasureTool; label: string; hint: string }[] = [
  { tool: 'distance', label: 'Distance', hint: 'Click two points.' },
  { tool: 'height', label: 'Height', hint: 'Click a point, then one above or below it.' },
  { tool: 'angle', label: 'Angle', hint: 'Click a point on one side, the corner, then a point on the other side.' },
  { tool: 'area', label: 'Area', hint: 'Click the outline’s corners in turn.' },
  { tool: 'profile', label: 'Profile', hint: 'Click the two ends of a line across the cloud.' },
  { tool: 'clip', label: 'Clip box', hint: 'Click two opposite corners: only what lies between them stays shown.' },
];

/** Points a tool takes; the next click after them starts a new measurement. */
const POINTS: Record<MeasureTool, number> = { distance: 2, height: 2, angle: 3, area: Infinity, profile: 2, clip: 2 };

export interface Measurement {
  tool: MeasureTool;
  /** The main figure: metres, degrees or square metres. */
  value: number;
  /** Further figures, in words. */
  details: { label: string; metres: number }[];
}

/** The picks after a click at `point`. */
export function addPick(tool: MeasureTool, picks: readonly Vec3[], point: Vec3): Vec3[] {
  return picks.length >= POINTS[tool] ? [point] : [...picks, point];
}

/** Whether the outline is drawn closed. */
export const closes = (tool: MeasureTool): boolean => tool === 'area' || tool === 'clip';

/** The points drawn for the picks: the clip box's rectangle (at the first corner's height), else the picks. */
export function outline(tool: MeasureTool, picks: readonly Vec3[]): Vec3[] {
  if (tool !== 'clip' || picks.length !== 2) return [...picks];
  const [a, b] = picks;
  return [a, [b[0], a[1], a[2]], [b[0], b[1], a[2]], [a[0], b[1], a[2]]];
}

/** The measurement the picks make, or null while the tool needs more points. */
export function measure(tool: MeasureTool, picks: readonly Vec3[]): Measurement | null {
  if (tool === 'distance' && picks.length === 2) {
    const parts = distanceParts(picks[0], picks[1]);
    return { tool, value: parts.distance, details: [{ label: 'horizontal', metres: parts.horizontal }, { label: 'vertical', metres: parts.vertical }] };
  }
  if (tool === 'height' && picks.length === 2) {
    const parts = distanceParts(picks[0], picks[1]);
    return { tool, value: Math.abs(parts.vertical), details: [{ label: 'apart horizontally', metres: parts.horizontal }] };
  }
  if (tool === 'angle' && picks.length === 3) return { tool, value: angleAt(picks[0], picks[1], picks[2]), details: [] };
  if (tool === 'profile' && picks.length === 2) {
    const parts = distanceParts(picks[0], picks[1]);
    return { tool, value: parts.horizontal, details: [{ label: 'vertical', metres: parts.vertical }] };
  }
  if (tool === 'clip' && picks.length === 2) {
    const [width, depth] = [Math.abs(picks[1][0] - picks[0][0]), Math.abs(picks[1][1] - picks[0][1])];
    return { tool, value: width * depth, details: [{ label: 'east–west', metres: width }, { label: 'north–south', metres: depth }] };
  }
  if (tool === 'area' && picks.length >= 3) {
    return { tool, value: horizontalArea(picks), details: [{ label: 'perimeter', metres: pathLength(picks, true) }] };
  }
  return null;
}
