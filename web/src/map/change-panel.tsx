// The map's "Change between surveys" section: a task on the map and an earlier task of the project, both with a
// DSM (and a DTM, to compare terrain), compared by the service; the change drawn over the map with its legend,
// and its cut and fill. Shown where the project has two such tasks.
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Task, listAll } from '../api.ts';
import { CHANGE_STOPS, type ChangeFigures, type Surface, measureChange } from './change.ts';
import { formatArea, formatVolume } from './format.ts';
import { Legend } from './legend.tsx';
import type { MapController } from './map-controller.ts';

const COMPLETED = 40;
const hasDsm = (task: Task) => task.status === COMPLETED && task.available_assets.includes('dsm.tif');
const label = (task: Task) => task.name || `Task ${task.id}`;

interface Shown {
  figures: ChangeFigures;
  limit: number;
  caption: string;
}

export function ChangePanel({ controller, projectId, mapped }: { controller: MapController | null; projectId: number; mapped: Task[] }) {
  const [project, setProject] = useState<Task[]>([]);
  const later = mapped.filter(hasDsm);
  const [laterId, setLaterId] = useState<number | null>(null);
  const [earlierId, setEarlierId] = useState<number | null>(null);
  const [surface, setSurface] = useState<Surface>('dsm');
  const [shown, setShown] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const running = useRef<AbortController | null>(null);

  useEffect(() => {
    listAll<Task>(`/api/projects/${projectId}/tasks/`).then((tasks) => setProject(tasks.filter(hasDsm)), () => setProject([]));
    return () => running.current?.abort();
  }, [projectId]);

  const chosenLater = later.find((task) => task.id === laterId) ?? later[0];
  const earlier = project.filter((task) => task.id !== chosenLater?.id);
  const chosenEarlier = earlier.find((task) => task.id === earlierId) ?? earlier[0];
  if (!chosenLater || !chosenEarlier) return null;
  const terrain = [chosenLater, chosenEarlier].every((task) => task.available_assets.includes('dtm.tif'));

  const show = async () => {
    running.current?.abort();
    const abort = (running.current = new AbortController());
    setBusy(true);
    setError(null);
    try {
      const used = terrain ? surface : 'dsm';
      const { figures, image } = await measureChange(chosenLater, chosenEarlier, used, abort.signal);
      controller?.showChange(image);
      setShown({ figures, limit: image.limit, caption: `${label(chosenLater)} less ${label(chosenEarlier)} (${used.toUpperCase()}), m` });
    } catch (failure) {
      if (!abort.signal.aborted) setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      if (running.current === abort) setBusy(false);
    }
  };
  const remove = () => {
    controller?.clearChange();
    setShown(null);
  };

  return (
    <section class="map-section" aria-labelledby="change-heading">
      <h2 id="change-heading">Change between surveys</h2>
      <label class="map-field">
        <span>Later</span>
        <select value={chosenLater.id} onChange={(event) => setLaterId(Number(event.currentTarget.value))}>
          {later.map((task) => (
            <option key={task.id} value={task.id}>{label(task)}</option>
          ))}
        </select>
      </label>
      <label class="map-field">
        <span>Earlier</span>
        <select value={chosenEarlier.id} onChange={(event) => setEarlierId(Number(event.currentTarget.value))}>
          {earlier.map((task) => (
            <option key={task.id} value={task.id}>{label(task)}</option>
          ))}
        </select>
      </label>
      {terrain && (
        <label class="map-field">
          <span>Model</span>
          <select value={surface} onChange={(event) => setSurface(event.currentTarget.value as Surface)}>
            <option value="dsm">Surface (DSM)</option>
            <option value="dtm">Terrain (DTM)</option>
          </select>
        </label>
      )}
      <div class="row">
        <button type="button" disabled={busy || !controller} onClick={show}>Show change</button>
        {shown && <button type="button" onClick={remove}>Remove change</button>}
      </div>
      {busy && <p class="muted map-note" role="status">Comparing the surveys where their models are…</p>}
      {error && <p class="error map-note" role="alert">{error}</p>}
      {shown && (
        <div class="map-result" data-testid="change-result" data-cut={String(shown.figures.cut)} data-fill={String(shown.figures.fill)}>
          <Legend
            gradient={`linear-gradient(to right, ${CHANGE_STOPS.join(', ')})`}
            range={[-shown.limit, shown.limit]}
            unit="m"
            description={`Change from ${-shown.limit} m (red, lower) to ${shown.limit} m (blue, higher)`}
            caption={shown.caption}
            testId="change-legend"
          />
          <strong>Cut: {formatVolume(shown.figures.cut)}, fill: {formatVolume(shown.figures.fill)}</strong>
          <span class="muted">Net {formatVolume(shown.figures.net)}; changed over {formatArea(shown.figures.changed_area)} of {formatArea(shown.figures.area)}</span>
        </div>
      )}
    </section>
  );
}
