// The map of a task, or of every task of a project that has map layers: orthophoto and elevation models as
// tiles, camera positions, ground control points, an optional OpenStreetMap base, two surveys side by side, the
// change between two surveys and measuring tools. MapLibre is loaded with this
// module only, when a map is opened.
import 'maplibre-gl/dist/maplibre-gl.css';
import './map.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Task, api, listAll, taskPath } from '../api.ts';
import { LayerPanel, type LayerEntry, type OverlayEntry, type TaskLayers, layerKey, overlayKey } from './layer-panel.tsx';
import { type LayerKind, type LayerSettings, OVERLAYS, type OverlayKind, type TileJson, availableKinds, defaultSettings, downloadUrl } from './layers.ts';
import type { ControlPointCollection } from './control-points.ts';
import { MapController } from './map-controller.ts';
import { ChangePanel } from './change-panel.tsx';
import { SwipeOverlay } from './swipe.tsx';
import { ExportDialog } from './export-dialog.tsx';
import { type DemSource, DrawingBar, MeasurePanel, useMeasure } from './measure-panel.tsx';

const COMPLETED = 40;
const MAX_ERRORS = 5;
/** Where the panel would cover most of the map: it starts closed. Matches map.css. */
const NARROW = '(max-width: 700px)';

async function loadTasks(pid: string, tid?: string): Promise<Task[]> {
  const tasks = tid ? [await api<Task>(`${taskPath(Number(pid), Number(tid))}/`)] : await listAll<Task>(`/api/projects/${pid}/tasks/`);
  return tasks.filter((task) => task.status === COMPLETED && availableKinds(task).length > 0);
}

export default function MapPage({ pid, tid }: { pid: string; tid?: string }) {
  const container = useRef<HTMLDivElement>(null);
  const [controller, setController] = useState<MapController | null>(null);
  const [tasks, setTasks] = useState<TaskLayers[] | null>(null);
  const [layers, setLayers] = useState<Record<string, LayerEntry>>({});
  const [overlays, setOverlays] = useState<Record<string, OverlayEntry>>({});
  const [osm, setOsm] = useState(false);
  const [errors, setErrors] = useState<string[]>([]);
  const [panelOpen, setPanelOpen] = useState(() => !matchMedia(NARROW).matches);
  const [exporting, setExporting] = useState(false);
  /** The task whose orthophoto is shown right of the divider, side by side with the map. */
  const [compared, setCompared] = useState<number | null>(null);
  const layersRef = useRef(layers);
  layersRef.current = layers;

  const addError = (message: string) => setErrors((list) => (list.includes(message) ? list : [...list, message].slice(-MAX_ERRORS)));

  useEffect(() => {
    let map: MapController;
    try {
      map = new MapController(container.current!, addError);
    } catch (failure) {
      addError(`The map cannot be shown: ${failure instanceof Error ? failure.message : String(failure)} (WebGL may be unavailable in this browser).`);
      return;
    }
    setController(map);
    let cancelled = false;
    void openLayers(map, () => cancelled).catch((failure) => !cancelled && addError(`The tasks could not be loaded: ${failure instanceof Error ? failure.message : String(failure)}`));
    return () => {
      cancelled = true;
      map.destroy();
      setController(null);
    };
  }, [pid, tid]);

  /** Fetches the tasks, then every layer's TileJSON, the cameras and the control points, adding each as it comes. */
  async function openLayers(map: MapController, cancelled: () => boolean): Promise<void> {
    const [found] = await Promise.all([loadTasks(pid, tid), map.ready()]);
    if (cancelled()) return;
    const list = found.map((task) => ({ task, kinds: availableKinds(task) }));
    setTasks(list);
    setLayers(Object.fromEntries(list.flatMap(({ task, kinds }) => kinds.map((kind) => [layerKey(task.id, kind), { settings: defaultSettings(kind) }]))));
    const drawn = list.flatMap(({ task }) => OVERLAYS.filter(({ asset }) => task.available_assets.includes(asset)).map(({ kind }) => ({ task, kind })));
    setOverlays(Object.fromEntries(drawn.map(({ task, kind }) => [overlayKey(task.id, kind), { visible: true, loaded: false }])));
    const bounds: [number, number, number, number][] = [];
    await Promise.all([
      ...list.flatMap(({ task, kinds }) =>
        kinds.map(async (kind) => {
          const tilejson = await fetchTileJson(task, kind);
          if (cancelled()) return;
          if (typeof tilejson === 'string') return updateEntry(task.id, kind, { error: tilejson });
          bounds.push(tilejson.bounds);
          map.addRaster(task.id, kind, tilejson, layersRef.current[layerKey(task.id, kind)]?.settings ?? defaultSettings(kind));
          updateEntry(task.id, kind, { tilejson });
        }),
      ),
      ...drawn.map(({ task, kind }) => addOverlay(map, task, kind, cancelled)),
    ]);
    if (cancelled()) return;
    const extents = bounds.length ? bounds : list.flatMap(({ task }) => (task.extent?.length === 4 ? [task.extent as [number, number, number, number]] : []));
    const panel = document.getElementById('map-panel');
    map.fitTo(extents, panel && !panel.hidden ? panel.getBoundingClientRect().right - map.map.getContainer().getBoundingClientRect().left : 0);
    map.markLayersRequested();
  }

  async function addOverlay(map: MapController, task: Task, kind: OverlayKind, cancelled: () => boolean): Promise<void> {
    const key = overlayKey(task.id, kind);
    const base = taskPath(task.project, task.id);
    try {
      const points = await api<GeoJSON.FeatureCollection>(`${base}/download/${OVERLAYS.find((o) => o.kind === kind)!.asset}`);
      if (cancelled()) return;
      if (kind === 'cameras') map.addCameras(task.id, points, true);
      else map.addControlPoints(task.id, points as ControlPointCollection, (image) => `${base}/images/thumbnail/${encodeURIComponent(image)}?size=240`, true);
      setOverlays((all) => ({ ...all, [key]: { ...all[key], loaded: true } }));
    } catch (failure) {
      setOverlays((all) => ({ ...all, [key]: { ...all[key], error: failure instanceof Error ? failure.message : String(failure) } }));
    }
  }

  function updateEntry(taskId: number, kind: LayerKind, change: Partial<LayerEntry>) {
    setLayers((all) => {
      const key = layerKey(taskId, kind);
      return { ...all, [key]: { ...all[key], ...change } };
    });
  }

  // Read from the ref, and written to it at once: a change may come from a request answered after other changes.
  function changeLayer(taskId: number, kind: LayerKind, change: Partial<LayerSettings>) {
    const key = layerKey(taskId, kind);
    const entry = layersRef.current[key];
    if (!entry?.tilejson) return;
    const settings = { ...entry.settings, ...change };
    controller?.updateRaster(taskId, kind, entry.tilejson, settings, entry.settings);
    layersRef.current = { ...layersRef.current, [key]: { ...entry, settings } };
    updateEntry(taskId, kind, { settings });
  }

  function changeOverlay(taskId: number, kind: OverlayKind, visible: boolean) {
    controller?.setOverlayVisible(taskId, kind, visible);
    const key = overlayKey(taskId, kind);
    setOverlays((all) => ({ ...all, [key]: { ...all[key], visible } }));
  }

  function changeOsm(visible: boolean) {
    controller?.setOsm(visible);
    setOsm(visible);
  }

  const dems: DemSource[] = (tasks ?? [])
    .filter(({ task }) => task.available_assets.includes('dsm.tif'))
    .map(({ task }) => ({
      task,
      surfaces: task.available_assets.includes('dtm.tif') ? ['dsm' as const, 'dtm' as const] : ['dsm' as const],
      taskName: task.name || `task ${task.id}`,
      url: downloadUrl(task, 'dsm.tif'),
      bounds: layers[layerKey(task.id, 'dsm')]?.tilejson?.bounds ?? (task.extent?.length === 4 ? (task.extent as [number, number, number, number]) : null),
    }));

  const measure = useMeasure(controller, dems);
  const orthophotos = (tasks ?? []).filter(({ task }) => layers[layerKey(task.id, 'orthophoto')]?.tilejson);
  const right = orthophotos.find(({ task }) => task.id === compared)?.task;
  usePanelWhileDrawing(measure.tool !== null, setPanelOpen);

  return (
    <div class="mapview">
      <div id="map" ref={container} class="mapview-map" data-idle="false" role="region" aria-label="Map" />
      {controller && right && <SwipeOverlay main={controller} tilejson={layers[layerKey(right.id, 'orthophoto')].tilejson!} name={right.name || `task ${right.id}`} />}
      <button type="button" class="mapview-toggle" aria-expanded={panelOpen} aria-controls="map-panel" onClick={() => setPanelOpen(!panelOpen)}>
        {panelOpen ? 'Hide panel' : 'Layers and tools'}
      </button>
      <aside id="map-panel" class="mapview-panel" hidden={!panelOpen} aria-label="Layers and measuring tools">
        <section class="map-section" aria-labelledby="layers-heading">
          <h2 id="layers-heading">Layers</h2>
          {errors.map((message) => (
            <p key={message} class="error map-note" role="alert">{message}</p>
          ))}
          {tasks === null && errors.length === 0 && <p class="muted map-note">Loading the map…</p>}
          {tasks !== null && tasks.length === 0 && (
            <p class="error map-note" role="alert">{tid ? 'This task has no map layers (it is not completed, or produced no orthophoto or elevation model).' : 'No task of this project has map layers yet.'}</p>
          )}
          {tasks && <LayerPanel tasks={tasks} layers={layers} overlays={overlays} onLayer={changeLayer} onOverlay={changeOverlay} />}
          {orthophotos.length > 1 && (
            <label class="map-field">
              <span>Side by side</span>
              <select value={compared ?? ''} onChange={(event) => setCompared(event.currentTarget.value ? Number(event.currentTarget.value) : null)}>
                <option value="">Off</option>
                {orthophotos.map(({ task }) => (
                  <option key={task.id} value={task.id}>
                    {task.name || `Task ${task.id}`} right of the divider
                  </option>
                ))}
              </select>
            </label>
          )}
          <label class="map-check map-base">
            <input type="checkbox" checked={osm} onChange={(event) => changeOsm(event.currentTarget.checked)} />
            OpenStreetMap base map (needs Internet)
          </label>
          {tasks && tasks.length > 0 && (
            <button type="button" class="map-export" onClick={() => setExporting(true)}>
              Export…
            </button>
          )}
        </section>
        {tasks && tasks.length > 0 && <ChangePanel controller={controller} projectId={Number(pid)} mapped={tasks.map(({ task }) => task)} />}
        <MeasurePanel measure={measure} />
      </aside>
      <DrawingBar measure={measure} />
      {exporting && tasks && <ExportDialog tasks={tasks.map(({ task }) => task)} plantOf={(taskId) => layers[layerKey(taskId, 'orthophoto')]?.settings.plant ?? null} onClose={() => setExporting(false)} />}
    </div>
  );
}

/** On a phone the panel covers the map: it steps aside while a shape is drawn and returns with the result. */
function usePanelWhileDrawing(drawing: boolean, setPanelOpen: (open: boolean) => void): void {
  const wasDrawing = useRef(false);
  useEffect(() => {
    const narrow = matchMedia(NARROW).matches;
    if (narrow && drawing) setPanelOpen(false);
    if (narrow && !drawing && wasDrawing.current) setPanelOpen(true);
    wasDrawing.current = drawing;
  }, [drawing]);
}

/** The layer's TileJSON, or why there is none, in words. */
async function fetchTileJson(task: Task, kind: LayerKind): Promise<TileJson | string> {
  try {
    return await api<TileJson>(`${taskPath(task.project, task.id)}/${kind}/tiles.json`);
  } catch (failure) {
    return failure instanceof Error ? failure.message : String(failure);
  }
}
