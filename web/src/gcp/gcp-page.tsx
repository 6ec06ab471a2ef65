// The ground-control editor of a task (/gcp/project/{pid}/task/{tid}/): surveyed points imported from a CSV or
// text file in their CRS (or the task's own gcp_list.txt, marks and all); for each point, the photographs that see
// it, with the spot the service predicts from the task's model (or the GPS before there is one); the target
// clicked in a zoomed view of a few; each point a control point or a checkpoint; the result saved as the task's
// gcp_list.txt, and the task restarted from the structure-from-motion stage to use it.
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Task, api, taskPath } from '../api.ts';
import { jsonJob } from '../map/jobs.ts';
import { Marker, type Sighting } from './marker.tsx';
import { type ColumnOrder, type ControlPoint, type Mark, type PointSet, isGcpList, parseGcpList, parsePointFile, writeGcpList } from './points.ts';

interface Sightings {
  source: 'model' | 'gps';
  /** Per point, the photographs whose marks miss where the others place it: of something else. */
  points: { name: string; sightings: Sighting[]; disagreeing: string[] }[];
}

/** Marks a control point needs to place the model (one mark is a direction, not a position). */
const MIN_MARKS = 2;
const THUMBNAIL_SIZE = 240;

async function predict(base: string, set: PointSet, points: ControlPoint[], signal: AbortSignal): Promise<Sightings> {
  const body = {
    crs: set.crs,
    points: points.map(({ name, x, y, z, marks }) => ({ name, x, y, z, marks: Object.entries(marks).map(([image, m]) => ({ image, ...m })) })),
  };
  return jsonJob<Sightings>(`${base}/gcp/sightings`, body, signal);
}

export default function GcpPage({ pid, tid }: { pid: string; tid: string }) {
  const base = taskPath(Number(pid), Number(tid));
  const { route } = useLocation();
  const [task, setTask] = useState<Task | null>(null);
  const [set, setSet] = useState<PointSet | null>(null);
  const [found, setFound] = useState<Record<string, Sighting[]>>({});
  const [disagreeing, setDisagreeing] = useState<Record<string, string[]>>({});
  const [source, setSource] = useState<Sightings['source'] | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [photo, setPhoto] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);

  const refresh = async (next: PointSet, points: ControlPoint[]) => {
    const controller = new AbortController();
    setBusy('Finding the points in the photographs…');
    try {
      const result = await predict(base, next, points, controller.signal);
      setSource(result.source);
      setFound((old) => ({ ...old, ...Object.fromEntries(result.points.map((p) => [p.name, p.sightings])) }));
      setDisagreeing((old) => ({ ...old, ...Object.fromEntries(result.points.map((p) => [p.name, p.disagreeing])) }));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(null);
    }
  };
  const open = (next: PointSet) => {
    setSet(next);
    setFound({});
    setDisagreeing({});
    setSelected(next.points[0]?.name ?? null);
    setPhoto(null);
    void refresh(next, next.points);
  };

  useEffect(() => {
    api<Task>(`${base}/`).then(setTask, (e: Error) => setError(e.message));
    api<{ gcp_list: string }>(`${base}/gcp/`).then(
      ({ gcp_list }) => open(parseGcpList(gcp_list)),
      (e: ApiError) => e.status !== 404 && setError(e.message),
    );
  }, [base]);

  const update = (name: string, change: (point: ControlPoint) => ControlPoint) => {
    if (!set) return null;
    const next = { ...set, points: set.points.map((p) => (p.name === name ? change(p) : p)) };
    setSet(next);
    setSaved(null);
    return next;
  };
  const mark = (name: string, image: string, at: Mark | null) => {
    const next = update(name, (p) => {
      const marks = { ...p.marks };
      if (at) marks[image] = at;
      else delete marks[image];
      return { ...p, marks };
    });
    // The marks place the point better than its survey: the other photographs' spots follow them.
    if (next) void refresh(next, next.points.filter((p) => p.name === name));
  };

  const save = async (restart: boolean) => {
    if (!set || !task) return;
    setError(null);
    try {
      const summary = await api<{ points: number; marks: number; checkpoints: number }>(`${base}/gcp/`, { method: 'PUT', body: { gcp_list: writeGcpList(set) } });
      setSaved(`Saved ${summary.marks} marks of ${summary.points} points, ${summary.checkpoints} of them ${summary.checkpoints === 1 ? 'a checkpoint' : 'checkpoints'}.`);
      if (restart) {
        const options = [...task.options.filter((o) => o.name !== 'rerun-from'), { name: 'rerun-from', value: 'opensfm' }];
        await api(`${base}/restart/`, { method: 'POST', body: { options } });
        route(`/project/${pid}/task/${tid}/`);
      }
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const point = set?.points.find((p) => p.name === selected) ?? null;
  const sightings = point ? (found[point.name] ?? []) : [];
  const shown = sightings.find((s) => s.image === photo) ?? null;
  const photoUrl = (image: string) => `${base}/images/thumbnail/${encodeURIComponent(image)}`;
  return (
    <div class="page gcp-page">
      <p>
        <a href={`/project/${pid}/task/${tid}/`}>← {task?.name || 'Task'}</a>
      </p>
      <h1>Ground control</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <ImportForm onImport={(next) => (setError(null), open(next))} onError={setError} />
      {set && (
        <>
          <PointTable
            set={set}
            found={found}
            selected={selected}
            onSelect={(name) => (setSelected(name), setPhoto(null))}
            onRole={(name, check) => update(name, (p) => ({ ...p, check }))}
          />
          <p class="muted" aria-live="polite">
            {busy ?? (source === 'gps' ? 'Spots predicted from the photographs’ GPS: expect them metres off.' : source === 'model' ? 'Spots predicted from the task’s model.' : '')}
          </p>
          {point && (
            <section class="panel" aria-label={`Photographs of ${point.name}`}>
              <h2>
                {point.name}: {Object.keys(point.marks).length} marks
              </h2>
              {sightings.length === 0 && !busy && <p class="muted">No photograph sees this point.</p>}
              {(disagreeing[point.name] ?? []).length > 0 && (
                <p role="alert" class="error">
                  The marks in {disagreeing[point.name].join(', ')} miss where the other marks place {point.name}: of another target? They are left out of the predictions.
                </p>
              )}
              {shown && <Marker key={`${point.name}/${shown.image}`} photoUrl={photoUrl(shown.image)} pointName={point.name} sighting={shown} mark={point.marks[shown.image]} initialZoom={source === 'model' ? 4 : 2} onMark={(at) => mark(point.name, shown.image, at)} />}
              <ul class="gcp-photos">
                {sightings.map((s) => {
                  const at = point.marks[s.image] ?? s;
                  const thumbnail = new URLSearchParams({ size: String(THUMBNAIL_SIZE), draw_point: `${(at.x + 0.5) / s.width},${(at.y + 0.5) / s.height}`, point_color: point.marks[s.image] ? '00e060' : 'ffd400', point_radius: '3' });
                  return (
                    <li key={s.image}>
                      <button type="button" class={s.image === photo ? 'chosen' : ''} aria-pressed={s.image === photo} onClick={() => setPhoto(s.image)}>
                        <img src={`${photoUrl(s.image)}?${thumbnail}`} alt="" loading="lazy" />
                        <span class="gcp-photo-name">
                          {s.image}
                          {point.marks[s.image] ? ' ✓' : ''}
                        </span>
                        {disagreeing[point.name]?.includes(s.image) && <span class="error">This mark disagrees with the others: of another target?</span>}
                      </button>
                    </li>
                  );
                })}
              </ul>
            </section>
          )}
          <SaveBar set={set} saved={saved} canRestart={task !== null && !task.compacted && !task.partial} onSave={save} />
        </>
      )}
    </div>
  );
}

function ImportForm({ onImport, onError }: { onImport: (set: PointSet) => void; onError: (message: string) => void }) {
  const [crs, setCrs] = useState('');
  const [order, setOrder] = useState<ColumnOrder>('PENZ');
  const read = async (event: Event) => {
    event.preventDefault();
    const file = (event.currentTarget as HTMLFormElement).querySelector<HTMLInputElement>('input[type=file]')?.files?.[0];
    if (!file) return onError('Choose the file of surveyed points');
    try {
      const text = await file.text();
      onImport(isGcpList(text) ? parseGcpList(text) : parsePointFile(text, order, crs));
    } catch (err) {
      onError((err as Error).message);
    }
  };
  return (
    <form class="panel row" onSubmit={read} aria-label="Import points">
      <label class="inline">
        Surveyed points (CSV or text)
        <input type="file" accept=".csv,.txt,text/csv,text/plain" />
      </label>
      <label class="inline">
        Coordinate system
        <input type="text" value={crs} placeholder="EPSG:32611" onInput={(e) => setCrs(e.currentTarget.value)} />
      </label>
      <label class="inline">
        Columns
        <select value={order} onChange={(e) => setOrder(e.currentTarget.value as ColumnOrder)}>
          <option value="PENZ">Name, easting, northing, height</option>
          <option value="PNEZ">Name, northing, easting, height</option>
        </select>
      </label>
      <button type="submit">Import</button>
    </form>
  );
}

interface PointTableProps {
  set: PointSet;
  found: Record<string, Sighting[]>;
  selected: string | null;
  onSelect: (name: string) => void;
  onRole: (name: string, check: boolean) => void;
}

function PointTable({ set, found, selected, onSelect, onRole }: PointTableProps) {
  return (
    <section class="panel gcp-points" aria-label="Points">
      <p class="muted">Coordinates in {set.crs}</p>
      <table>
        <thead>
          <tr>
            <th>Point</th>
            <th>Use</th>
            <th>Marks</th>
            <th>Seen in</th>
          </tr>
        </thead>
        <tbody>
          {set.points.map((p) => (
            <tr key={p.name} class={p.name === selected ? 'chosen' : ''}>
              <td>
                <button type="button" class="link" aria-pressed={p.name === selected} onClick={() => onSelect(p.name)}>
                  {p.name}
                </button>
              </td>
              <td>
                <select aria-label={`Use of ${p.name}`} value={p.check ? 'check' : 'control'} onChange={(e) => onRole(p.name, e.currentTarget.value === 'check')}>
                  <option value="control">Control</option>
                  <option value="check">Checkpoint</option>
                </select>
              </td>
              <td>{Object.keys(p.marks).length}</td>
              <td>{found[p.name]?.length ?? '…'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

function SaveBar({ set, saved, canRestart, onSave }: { set: PointSet; saved: string | null; canRestart: boolean; onSave: (restart: boolean) => void }) {
  const marked = set.points.filter((p) => Object.keys(p.marks).length > 0);
  const control = marked.filter((p) => !p.check);
  const few = marked.filter((p) => Object.keys(p.marks).length < MIN_MARKS).map((p) => p.name);
  const download = () => {
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([writeGcpList(set)], { type: 'text/plain' }));
    link.download = 'gcp_list.txt';
    link.click();
    URL.revokeObjectURL(link.href);
  };
  return (
    <section class="panel" aria-label="Save">
      <p>
        {plural(control.length, 'control point')} and {plural(marked.length - control.length, 'checkpoint')} marked.
        {few.length > 0 && ` Mark ${few.join(', ')} in at least ${MIN_MARKS} photographs: one mark does not place a point.`}
        {control.length > 0 && control.length < 3 && ' Three control points at least are needed to georeference the model.'}
      </p>
      <div class="row">
        <button type="button" onClick={download} disabled={!marked.length}>
          Download gcp_list.txt
        </button>
        <button type="button" onClick={() => onSave(false)} disabled={!marked.length}>
          Save
        </button>
        {canRestart && (
          <button type="button" class="primary" onClick={() => onSave(true)} disabled={control.length < 3}>
            Save and restart
          </button>
        )}
      </div>
      {saved && <p role="status">{saved}</p>}
    </section>
  );
}
