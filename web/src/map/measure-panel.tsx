// The measuring tools: distance, area, elevation at a point, an elevation profile and volume, each drawn on the map
// with Sketch and reported with units in one result element that the end-to-end tests read. Heights at a point and
// along a line are read from the DSM in the browser; volumes are measured by the service, on the DSM or the DTM,
// against a base.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Task } from '../api.ts';
import { type ProfilePoint, elevationAt, openDem, profileAlong } from './dem.ts';
import { type SketchMode, Sketch, clearShape } from './draw.ts';
import { BASES, type Base, type Surface, type VolumeSettings, measureVolume, volumeDetails } from './earthworks.ts';
import { formatArea, formatElevation, formatLength, formatVolume } from './format.ts';
import { type LonLat, pathLength, polygonArea } from './geodesy.ts';
import type { MapController } from './map-controller.ts';
import { ProfileChart } from './profile-chart.tsx';

export type Tool = 'distance' | 'area' | 'elevation' | 'profile' | 'volume';

interface Result {
  kind: Tool;
  /** SI units: m, m², m, net m³. */
  value: number;
  text: string;
  details: string[];
  provisional: boolean;
  /** The heights along a profile's line. */
  profile?: ProfilePoint[];
}

/** A task with a DSM, which the elevation and volume tools can read (the volume its DTM too, where it has one). */
export interface DemSource {
  task: Task;
  taskName: string;
  url: string;
  bounds: [number, number, number, number] | null;
  surfaces: Surface[];
}

const TOOLS: { tool: Tool; label: string; mode: SketchMode; hint: string }[] = [
  { tool: 'distance', label: 'Measure distance', mode: 'line', hint: 'Click to add points; double-click or Finish to end, Escape to cancel.' },
  { tool: 'area', label: 'Measure area', mode: 'polygon', hint: 'Click to add corners; double-click or Finish to close the polygon, Escape to cancel.' },
  { tool: 'elevation', label: 'Elevation at a point', mode: 'point', hint: 'Click a point on the map.' },
  { tool: 'profile', label: 'Elevation profile', mode: 'line', hint: 'Click along the line to profile; double-click or Finish to end, Escape to cancel.' },
  { tool: 'volume', label: 'Measure volume', mode: 'polygon', hint: 'Draw around the stockpile or pit; double-click or Finish to end, Escape to cancel.' },
];

export type Measure = ReturnType<typeof useMeasure>;

/** The state of the measuring tools, shared by the panel (tools, result) and the bar over the map (Finish). */
export function useMeasure(controller: MapController | null, dems: DemSource[]) {
  const [tool, setTool] = useState<Tool | null>(null);
  const [result, setResult] = useState<Result | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [vertices, setVertices] = useState(0);
  const [volume, setVolume] = useState<VolumeSettings>({ base: 'triangulate', height: null, surface: 'dsm' });
  const sketch = useRef<Sketch | null>(null);
  const running = useRef<AbortController | null>(null);
  // Each measurement gets a number; a slow DSM read that finishes after a newer one started is dropped.
  const generation = useRef(0);

  useEffect(() => () => sketch.current?.detach(), []);

  const stopSketch = () => {
    sketch.current?.detach();
    sketch.current = null;
    controller?.setCameraClicks(true);
    setTool(null);
    setVertices(0);
  };

  const start = (next: Tool) => {
    if (!controller) return;
    const wasActive = tool === next;
    stopSketch();
    generation.current++;
    clearShape(controller.map);
    setError(null);
    setBusy(null);
    if (wasActive) return; // pressing the active tool again turns it off
    if (next !== 'distance' && next !== 'area' && dems.length === 0) {
      setResult(null);
      setError(`${next === 'volume' ? 'Volume' : next === 'profile' ? 'A profile' : 'Elevation'} needs a surface model (DSM), and no task on this map has one. Process the task with a DSM (the dsm option) to measure it.`);
      return;
    }
    const definition = TOOLS.find((entry) => entry.tool === next)!;
    const current = new Sketch(controller.map, definition.mode, {
      onChange: (points, cursor) => {
        setVertices(points.length);
        const shown = cursor ? [...points, cursor] : points;
        if (next === 'distance' && shown.length >= 2) setResult(lengthResult(shown, true));
        if (next === 'area' && shown.length >= 3) setResult(areaResult(shown, true));
      },
      onFinish: (points) => {
        sketch.current = null;
        controller.setCameraClicks(true);
        setTool(null);
        setVertices(0);
        void finishMeasurement(next, points);
      },
      onCancel: () => {
        stopSketch();
        setResult(null);
      },
    });
    sketch.current = current;
    controller.setCameraClicks(false);
    setTool(next);
    setResult(null);
    current.start();
  };

  const finishMeasurement = async (kind: Tool, points: LonLat[]) => {
    const id = ++generation.current;
    if (kind === 'distance') return setResult(lengthResult(points, false));
    if (kind === 'area') return setResult(areaResult(points, false));
    const dem = demFor(dems, points);
    running.current?.abort();
    const abort = (running.current = new AbortController());
    setBusy(kind === 'volume' ? 'Measuring the volume where the elevation model is…' : 'Reading the surface model…');
    try {
      const measured = kind === 'volume' ? await volumeOver(dem, points, volume, abort.signal) : kind === 'profile' ? await profileOf(dem, points) : await elevationOf(dem, points[0]);
      if (id === generation.current) setResult(measured);
    } catch (failure) {
      if (id === generation.current) setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      if (id === generation.current) setBusy(null);
    }
  };

  const clear = () => {
    stopSketch();
    generation.current++;
    if (controller) clearShape(controller.map);
    setResult(null);
    setError(null);
    setBusy(null);
  };

  const active = TOOLS.find((entry) => entry.tool === tool) ?? null;
  const needed = active ? (active.mode === 'line' ? 2 : active.mode === 'polygon' ? 3 : 1) : 0;
  const surfaces = [...new Set(dems.flatMap((dem) => dem.surfaces))];
  return {
    controller, tool, active, needed, vertices, result, busy, error, start, clear, volume, setVolume, surfaces,
    finish: () => sketch.current?.finish(),
    cancel: () => sketch.current?.cancel(),
  };
}

export function MeasurePanel({ measure }: { measure: Measure }) {
  const { controller, tool, result, busy, error } = measure;
  return (
    <section class="map-section" aria-labelledby="measure-heading">
      <h2 id="measure-heading">Measure</h2>
      <div class="map-tools">
        {TOOLS.map((entry) => (
          <button key={entry.tool} type="button" aria-pressed={tool === entry.tool} disabled={!controller} onClick={() => measure.start(entry.tool)}>
            {entry.label}
          </button>
        ))}
      </div>
      {measure.surfaces.length > 0 && <VolumeChoices measure={measure} />}
      {busy && <p class="muted map-note" role="status">{busy}</p>}
      {error && <p class="error map-note" role="alert">{error}</p>}
      {result && (
        <div class="map-result" data-testid="measure-result" data-kind={result.kind} data-value={String(result.value)} data-provisional={String(result.provisional)} aria-live="polite">
          <strong>{result.text}</strong>
          {result.details.map((line) => (
            <span key={line} class="muted">{line}</span>
          ))}
          {result.profile && <ProfileChart points={result.profile} />}
        </div>
      )}
      {(result || error || tool) && (
        <button type="button" onClick={measure.clear}>Clear measurement</button>
      )}
    </section>
  );
}

/** The volume's base and surface, chosen before drawing (a change applies to the next polygon). */
function VolumeChoices({ measure }: { measure: Measure }) {
  const { volume, setVolume, surfaces } = measure;
  return (
    <fieldset class="map-task">
      <legend>Volume</legend>
      <label class="map-field">
        <span>Base</span>
        <select value={volume.base} onChange={(event) => setVolume({ ...volume, base: event.currentTarget.value as Base })}>
          {BASES.map(({ base, label }) => (
            <option key={base} value={base}>{label}</option>
          ))}
        </select>
      </label>
      {volume.base === 'custom' && (
        <label class="map-field">
          <span>Height (m)</span>
          <input type="number" step="0.01" value={volume.height ?? ''} onInput={(event) => setVolume({ ...volume, height: event.currentTarget.value === '' ? null : Number(event.currentTarget.value) })} />
        </label>
      )}
      {surfaces.length > 1 && (
        <label class="map-field">
          <span>Model</span>
          <select value={volume.surface} onChange={(event) => setVolume({ ...volume, surface: event.currentTarget.value as Surface })}>
            <option value="dsm">Surface (DSM)</option>
            <option value="dtm">Terrain (DTM)</option>
          </select>
        </label>
      )}
    </fieldset>
  );
}

/**
 * Over the map while drawing, so that Finish is at hand even where the panel is closed (phones) and the
 * running value is seen next to the shape.
 */
export function DrawingBar({ measure }: { measure: Measure }) {
  const { active, vertices, needed, result } = measure;
  if (!active) return null;
  return (
    <div class="map-drawing" role="region" aria-label="Drawing">
      <p class="map-note">
        {active.hint} <span class="muted">Keyboard: focus the map, move with the arrow keys, Enter adds the centre.</span>
      </p>
      {result?.provisional && <p class="map-note map-live">{result.text}</p>}
      {active.mode !== 'point' && (
        <div class="row">
          <button type="button" class="primary" disabled={vertices < needed} onClick={measure.finish}>Finish</button>
          <button type="button" onClick={measure.cancel}>Cancel</button>
        </div>
      )}
      {active.mode === 'point' && <button type="button" onClick={measure.cancel}>Cancel</button>}
    </div>
  );
}

function lengthResult(points: LonLat[], provisional: boolean): Result {
  const metres = pathLength(points);
  return { kind: 'distance', value: metres, text: `Distance: ${formatLength(metres)}`, details: [`${points.length} points, along the ground (geodesic)`], provisional };
}

function areaResult(points: LonLat[], provisional: boolean): Result {
  const squareMetres = polygonArea(points);
  const perimeter = pathLength([...points, points[0]]);
  return { kind: 'area', value: squareMetres, text: `Area: ${formatArea(squareMetres)}`, details: [`Perimeter ${formatLength(perimeter)}`], provisional };
}

function elevationResult(height: number | null, epsg: number, dem: DemSource): Result {
  if (height === null) throw new Error('No height here: the point is outside the surface model or on a gap in it.');
  return { kind: 'elevation', value: height, text: `Elevation: ${formatElevation(height)}`, details: [`Surface model of ${dem.taskName} (EPSG:${epsg})`], provisional: false };
}

async function elevationOf(dem: DemSource, point: LonLat): Promise<Result> {
  const model = await openDem(dem.url);
  return elevationResult(await elevationAt(model, point), model.epsg, dem);
}

/** Points of a profile: about one a pixel of a short line, at most this many. */
const PROFILE_POINTS = 400;

async function profileOf(dem: DemSource, line: LonLat[]): Promise<Result> {
  const model = await openDem(dem.url);
  const points = await profileAlong(model, line, PROFILE_POINTS);
  const heights = points.flatMap((p) => (p.height === null ? [] : [p.height]));
  if (!heights.length) throw new Error('No heights along this line: it lies outside the surface model or over a gap in it.');
  const length = points[points.length - 1].distance;
  const [first, last] = [heights[0], heights[heights.length - 1]];
  return {
    kind: 'profile',
    value: Math.max(...heights) - Math.min(...heights),
    text: `Profile: ${formatElevation(Math.min(...heights))} to ${formatElevation(Math.max(...heights))} over ${formatLength(length)}`,
    details: [`From ${formatElevation(first)} to ${formatElevation(last)} (${formatElevation(last - first)} change)`, `Surface model of ${dem.taskName} (EPSG:${model.epsg})`],
    provisional: false,
    profile: points,
  };
}

/** The volume on the surface asked where the task has it, else on its DSM. */
async function volumeOver(dem: DemSource, ring: LonLat[], settings: VolumeSettings, signal: AbortSignal): Promise<Result> {
  const surface = dem.surfaces.includes(settings.surface) ? settings.surface : 'dsm';
  const figures = await measureVolume(dem.task, ring, { ...settings, surface }, signal);
  return { kind: 'volume', value: figures.net, text: `Net volume: ${formatVolume(figures.net)}`, details: volumeDetails(figures, surface, dem.taskName), provisional: false };
}

/** The DSM whose bounds hold the first point; the first DSM when none does (its read then says "outside"). */
function demFor(dems: DemSource[], points: LonLat[]): DemSource {
  const [lon, lat] = points[0];
  return dems.find(({ bounds }) => bounds && lon >= bounds[0] && lon <= bounds[2] && lat >= bounds[1] && lat <= bounds[3]) ?? dems[0];
}
