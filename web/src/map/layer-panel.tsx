// The list of layers per task: a visibility checkbox, opacity, for elevation models the colour ramp, hillshade
// and legend, and for the orthophoto its Plant Health section.
import type { Task } from '../api.ts';
import { LAYER_KINDS, type LayerKind, type LayerSettings, OVERLAYS, type OverlayKind, type TileJson, isElevation } from './layers.ts';
import { Legend } from './legend.tsx';
import { PlantPanel } from './plant-panel.tsx';
import { RAMPS, rampByName, rampGradient } from './ramps.ts';

export interface LayerEntry {
  tilejson?: TileJson;
  settings: LayerSettings;
  error?: string;
}

export interface OverlayEntry {
  visible: boolean;
  loaded: boolean;
  error?: string;
}

export interface TaskLayers {
  task: Task;
  kinds: LayerKind[];
}

interface Props {
  tasks: TaskLayers[];
  layers: Record<string, LayerEntry>;
  overlays: Record<string, OverlayEntry>;
  onLayer: (taskId: number, kind: LayerKind, change: Partial<LayerSettings>) => void;
  onOverlay: (taskId: number, kind: OverlayKind, visible: boolean) => void;
}

export const layerKey = (taskId: number, kind: LayerKind) => `${taskId}:${kind}`;
export const overlayKey = (taskId: number, kind: OverlayKind) => `${taskId}:${kind}`;

export function LayerPanel({ tasks, layers, overlays, onLayer, onOverlay }: Props) {
  return (
    <>
      {tasks.map(({ task, kinds }) => (
        <fieldset class="map-task" key={task.id}>
          <legend>{task.name || `Task ${task.id}`}</legend>
          {kinds.map((kind) => (
            <LayerControl key={kind} task={task} kind={kind} entry={layers[layerKey(task.id, kind)]} onChange={(change) => onLayer(task.id, kind, change)} />
          ))}
          {OVERLAYS.map(({ kind, label }) => {
            const entry = overlays[overlayKey(task.id, kind)];
            return entry && <OverlayControl key={kind} id={`layer-${task.id}-${kind}`} label={label} entry={entry} onChange={(visible) => onOverlay(task.id, kind, visible)} />;
          })}
        </fieldset>
      ))}
    </>
  );
}

function LayerControl({ task, kind, entry, onChange }: { task: Task; kind: LayerKind; entry?: LayerEntry; onChange: (change: Partial<LayerSettings>) => void }) {
  const label = LAYER_KINDS.find((layer) => layer.kind === kind)!.label;
  if (!entry) return null;
  const id = `layer-${task.id}-${kind}`;
  const { settings } = entry;
  const ready = Boolean(entry.tilejson);
  return (
    <div class="map-layer">
      <label class="map-check" for={id}>
        <input id={id} type="checkbox" checked={settings.visible} disabled={!ready} onChange={(event) => onChange({ visible: event.currentTarget.checked })} />
        <span id={`${id}-name`}>{label}</span>
      </label>
      {entry.error && <p class="error map-note" role="alert">{label}: {entry.error}</p>}
      {!entry.error && !ready && <p class="muted map-note">Loading…</p>}
      {ready && settings.visible && (
        // The controls' names stay short ("Opacity"), so that the layer's name labels its checkbox alone (tests find
        // it by that name); the layer's name describes them instead.
        <div class="map-layer-settings">
          <label class="map-range">
            <span>Opacity</span>
            <input
              type="range"
              min={0}
              max={100}
              value={Math.round(settings.opacity * 100)}
              aria-describedby={`${id}-name`}
              onInput={(event) => onChange({ opacity: Number(event.currentTarget.value) / 100 })}
            />
            <span class="map-range-value" aria-hidden="true">{Math.round(settings.opacity * 100)} %</span>
          </label>
          {isElevation(kind) && (
            <>
              <div class="row">
                <label class="map-check">
                  <span>Colours</span>
                  <select value={settings.ramp} aria-describedby={`${id}-name`} onChange={(event) => onChange({ ramp: event.currentTarget.value })}>
                    {RAMPS.map((ramp) => (
                      <option key={ramp.name} value={ramp.name}>{ramp.label}</option>
                    ))}
                  </select>
                </label>
                <label class="map-check">
                  <input type="checkbox" checked={settings.hillshade} aria-describedby={`${id}-name`} onChange={(event) => onChange({ hillshade: event.currentTarget.checked })} />
                  Hillshade
                </label>
              </div>
              {entry.tilejson?.value_range && <ElevationLegend ramp={settings.ramp} range={entry.tilejson.value_range} />}
            </>
          )}
          {kind === 'orthophoto' && <PlantPanel task={task} style={settings.plant} describedBy={`${id}-name`} onChange={(plant) => onChange({ plant })} />}
        </div>
      )}
    </div>
  );
}

function ElevationLegend({ ramp, range }: { ramp: string; range: [number, number] }) {
  const definition = rampByName(ramp);
  const [min, max] = range.map((value) => value.toFixed(1));
  return (
    <Legend
      gradient={rampGradient(definition)}
      range={range}
      description={`${definition.label} colour ramp from ${min} m to ${max} m`}
      caption={`Elevation, m (${min} – ${max})`}
      testId="legend"
    />
  );
}

function OverlayControl({ id, label, entry, onChange }: { id: string; label: string; entry: OverlayEntry; onChange: (visible: boolean) => void }) {
  return (
    <div class="map-layer">
      <label class="map-check" for={id}>
        <input id={id} type="checkbox" checked={entry.visible} disabled={!entry.loaded} onChange={(event) => onChange(event.currentTarget.checked)} />
        {label}
      </label>
      {entry.error && (
        <p class="error map-note" role="alert">
          {label}: {entry.error}
        </p>
      )}
    </div>
  );
}
