// The Plant Health section of an orthophoto layer, as WebODM's map has it: a formula (vegetation index) with its
// help text, the band order it reads, a colour map, the index's histogram with two handles for the range the
// colours span, and a legend. Each choice asks the layer's metadata first: what it refuses (NDVI without a
// near-infrared band) is said here, and the orthophoto keeps its own colours.
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Task, api, taskPath } from '../api.ts';
import {
  AUTO_BANDS,
  type BandStatistics,
  DEFAULT_INDEX_COLOR_MAP,
  defaultColorMap,
  type Handle,
  type LayerMetadata,
  type PlantStyle,
  bandChoices,
  colorMapRamp,
  colourBandCount,
  decimalsFor,
  defaultFormula,
  formatValue,
  formulaGroups,
  fractionToValue,
  histogramBars,
  histogramDomain,
  indexStatistics,
  initialRescale,
  keyTarget,
  metadataQuery,
  moveHandle,
  stepOf,
  unitOf,
  valueToFraction,
} from './plant.ts';
import { Legend } from './legend.tsx';
import { rampGradient } from './ramps.ts';

interface Props {
  task: Task;
  /** The style the tiles are drawn with; null while they show the orthophoto's own colours. */
  style: PlantStyle | null;
  /** Names the orthophoto layer, which these controls belong to. */
  describedBy: string;
  onChange: (style: PlantStyle | null) => void;
}

interface Choice {
  formula: string;
  bands: string;
}

const metadataPath = (task: Task) => `${taskPath(task.project, task.id)}/orthophoto/metadata`;
const message = (failure: unknown) => (failure instanceof Error ? failure.message : String(failure));

export function PlantPanel({ task, style, describedBy, onChange }: Props) {
  const [choice, setChoice] = useState<Choice | null>(style ? { formula: style.formula, bands: style.bands } : null);
  const [colorMap, setColorMap] = useState(style?.colorMap ?? DEFAULT_INDEX_COLOR_MAP);
  const [metadata, setMetadata] = useState<LayerMetadata | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const styleRef = useRef(style);
  styleRef.current = style;
  const id = `plant-${task.id}`;

  // Each formula and band order: its metadata, then the tiles. The range is kept where the index stays the same
  // (the panel shown again), else it starts at the index's 2nd to 98th percentiles.
  useEffect(() => {
    if (!choice) return;
    const abort = new AbortController();
    setLoading(true);
    api<LayerMetadata>(`${metadataPath(task)}?${metadataQuery(choice.formula, choice.bands)}`, { signal: abort.signal })
      .then((found) => {
        const stats = indexStatistics(found);
        if (!stats) throw new Error(`${choice.formula} has no value anywhere on this orthophoto.`);
        setMetadata(found);
        setError(null);
        const kept = styleRef.current;
        const same = kept && kept.formula === choice.formula && kept.bands === choice.bands;
        const colours = found.color_maps.some((map) => map.key === colorMap) ? colorMap : (found.color_maps[0]?.key ?? colorMap);
        setColorMap(colours);
        onChange({ ...choice, colorMap: colours, rescale: same ? kept.rescale : initialRescale(stats) });
      })
      .catch((failure) => {
        if (abort.signal.aborted) return;
        setError(message(failure));
        onChange(null);
      })
      .finally(() => !abort.signal.aborted && setLoading(false));
    return () => abort.abort();
  }, [choice?.formula, choice?.bands]);

  async function turnOn(on: boolean) {
    setError(null);
    if (!on) {
      setChoice(null);
      onChange(null);
      return;
    }
    try {
      const plain = await api<LayerMetadata>(metadataPath(task));
      const formula = defaultFormula(colourBandCount(plain));
      setColorMap(defaultColorMap(formula));
      setChoice({ formula, bands: AUTO_BANDS });
    } catch (failure) {
      setError(message(failure));
    }
  }

  const algorithms = metadata?.algorithms ?? [];
  const algorithm = algorithms.find((a) => a.id === choice?.formula);
  const stats = metadata && !error ? indexStatistics(metadata) : undefined;
  const selected = metadata?.color_maps.find((map) => map.key === colorMap);

  return (
    <div class="map-plant" role="group" aria-labelledby={`${id}-toggle-label`}>
      <label class="map-check">
        <input type="checkbox" checked={choice !== null} aria-describedby={describedBy} onChange={(event) => void turnOn(event.currentTarget.checked)} />
        <span id={`${id}-toggle-label`}>Plant health</span>
      </label>
      {choice && (
        <>
          <label class="map-field">
            <span>Index</span>
            <select value={choice.formula} aria-describedby={algorithm ? `${id}-help` : undefined} onChange={(event) => setChoice({ formula: event.currentTarget.value, bands: keptBands(event.currentTarget.value) })}>
              {algorithms.length === 0 && <option value={choice.formula}>{choice.formula}</option>}
              {formulaGroups(algorithms).map((group) => (
                <optgroup key={group.label} label={group.label}>
                  {group.algorithms.map((a) => (
                    <option key={a.id} value={a.id}>{a.id}</option>
                  ))}
                </optgroup>
              ))}
            </select>
          </label>
          {algorithm && <p id={`${id}-help`} class="muted map-note">{algorithm.help} <code>{algorithm.expr}</code></p>}
          <label class="map-field">
            <span>Bands</span>
            <select value={choice.bands} onChange={(event) => setChoice({ ...choice, bands: event.currentTarget.value })}>
              {bandChoices(algorithm).map((bands) => (
                <option key={bands} value={bands}>{bands === AUTO_BANDS ? `Automatic${metadata?.auto_bands.filter ? ` (${metadata.auto_bands.filter})` : ''}` : bands}</option>
              ))}
            </select>
          </label>
          {metadata?.auto_bands.match === false && choice.bands === AUTO_BANDS && (
            <p class="muted map-note">The orthophoto's own band order ({metadata.auto_bands.filter}) is not one {choice.formula} is usually read in: if the colours look wrong, pick the camera's filter.</p>
          )}
          {metadata && metadata.color_maps.length > 0 && (
            <label class="map-field">
              <span>Colours</span>
              <select
                value={colorMap}
                onChange={(event) => {
                  const key = event.currentTarget.value;
                  setColorMap(key);
                  if (style) onChange({ ...style, colorMap: key });
                }}
              >
                {metadata.color_maps.map((map) => (
                  <option key={map.key} value={map.key}>{map.label}</option>
                ))}
              </select>
            </label>
          )}
          {loading && <p class="muted map-note">Reading {choice.formula}…</p>}
          {stats && style && !loading && (
            <>
              <Histogram
                stats={stats}
                formula={style.formula}
                range={style.rescale}
                colours={selected?.color_map ?? []}
                onRange={(rescale) => onChange({ ...style, rescale })}
              />
              {selected && <PlantLegend style={style} gradient={rampGradient(colorMapRamp(selected))} label={selected.label} decimals={decimalsFor(stepOf(stats))} />}
            </>
          )}
        </>
      )}
      {error && <p class="error map-note" role="alert">{choice ? `${choice.formula} cannot be drawn` : 'Plant health cannot be shown'}: {error}</p>}
      {error && choice && <p class="muted map-note">Band letters: R red, G green, B blue, N near infrared, Re red edge, L thermal.</p>}
    </div>
  );

  /** The band order kept when the formula changes: the same, where the new formula can be read in it. */
  function keptBands(formula: string): string {
    const next = algorithms.find((a) => a.id === formula);
    return choice && bandChoices(next).includes(choice.bands) ? choice.bands : AUTO_BANDS;
  }
}

const WIDTH = 260;
const HEIGHT = 70;
/** Key presses come quickly: the tiles are asked for once they pause. */
const KEY_SETTLE_MS = 250;

interface HistogramProps {
  stats: BandStatistics;
  formula: string;
  range: [number, number];
  colours: number[][];
  onRange: (range: [number, number]) => void;
}

/** The index's histogram with a handle at each end of the range: dragged, or moved with the keys of a slider. */
function Histogram({ stats, formula, range, colours, onRange }: HistogramProps) {
  const [draft, setDraft] = useState(range);
  const track = useRef<HTMLDivElement>(null);
  const timer = useRef<number | undefined>(undefined);
  const dragging = useRef<Handle | null>(null);
  useEffect(() => setDraft(range), [range[0], range[1]]);
  useEffect(() => () => window.clearTimeout(timer.current), []);

  const domain = histogramDomain(stats);
  const step = stepOf(stats);
  const decimals = decimalsFor(step);
  const unit = unitOf(formula);
  const show = (value: number) => formatValue(value, decimals, unit);
  const bars = histogramBars(stats, draft, colours, WIDTH, HEIGHT);

  const move = (handle: Handle, value: number) => {
    const next = moveHandle(draft, handle, value, domain, step);
    setDraft(next);
    return next;
  };
  const valueAt = (clientX: number) => {
    const box = track.current!.getBoundingClientRect();
    return fractionToValue((clientX - box.left) / box.width, domain);
  };

  const handleProps = (handle: Handle, label: string) => {
    const value = handle === 'min' ? draft[0] : draft[1];
    return {
      role: 'slider' as const,
      tabIndex: 0,
      class: `map-histogram-handle map-histogram-${handle}`,
      style: { left: `${valueToFraction(value, domain) * 100}%` },
      'aria-label': label,
      'aria-valuemin': domain[0],
      'aria-valuemax': domain[1],
      'aria-valuenow': Number(value.toFixed(decimals)),
      'aria-valuetext': show(value),
      'aria-orientation': 'horizontal' as const,
      onKeyDown: (event: KeyboardEvent) => {
        const target = keyTarget(event.key, value, domain, step);
        if (target === null) return;
        event.preventDefault();
        const next = move(handle, target);
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(() => onRange(next), KEY_SETTLE_MS);
      },
      onPointerDown: (event: PointerEvent) => {
        (event.currentTarget as HTMLElement).setPointerCapture(event.pointerId);
        (event.currentTarget as HTMLElement).focus();
        dragging.current = handle;
        event.preventDefault();
      },
      onPointerMove: (event: PointerEvent) => dragging.current === handle && move(handle, valueAt(event.clientX)),
      onPointerUp: (event: PointerEvent) => {
        if (dragging.current !== handle) return;
        dragging.current = null;
        onRange(move(handle, valueAt(event.clientX)));
      },
    };
  };

  return (
    <figure class="map-histogram">
      <div class="map-histogram-track" ref={track}>
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" shape-rendering="crispEdges" role="img" aria-label={`Histogram of ${formula} from ${show(domain[0])} to ${show(domain[1])}`}>
          {bars.map((bar, bin) => (
            <rect key={bin} x={bar.x} y={bar.y} width={bar.width} height={bar.height} fill={bar.colour} />
          ))}
        </svg>
        <div {...handleProps('min', 'Minimum')} />
        <div {...handleProps('max', 'Maximum')} />
      </div>
      <figcaption class="map-histogram-values">
        <span>Minimum {show(draft[0])}</span>
        <span>Maximum {show(draft[1])}</span>
      </figcaption>
    </figure>
  );
}

function PlantLegend({ style, gradient, label, decimals }: { style: PlantStyle; gradient: string; label: string; decimals: number }) {
  const unit = unitOf(style.formula);
  const range = style.rescale.map((value) => formatValue(value, decimals, unit)).join(' – ');
  return <Legend gradient={gradient} range={style.rescale} unit={unit} description={`${label} colour ramp of ${style.formula} over ${range}`} caption={`${style.formula} (${range})`} testId="plant-legend" />;
}
