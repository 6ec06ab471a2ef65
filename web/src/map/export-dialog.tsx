// The Export dialog of the map: a layer of one of the map's tasks, a format and a CRS (the task's own, an EPSG
// code or a PROJ string); an orthophoto drawn as a vegetation index exports as that index or in its own colours;
// an elevation model also as contour lines at an interval.
// The export runs on the server while the dialog waits, then offers the file.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Task } from '../api.ts';
import { Modal } from '../components/confirm.tsx';
import { type CrsChoice, type ExportBody, type ExportDone, type ExportLayer, describeIndex, drawsElevation, exportBody, exportFormats, exportLayers, isContours, runExport } from './export.ts';
import type { PlantStyle } from './plant.ts';
import { DEFAULT_RAMP, RAMPS } from './ramps.ts';

type Phase = { kind: 'choosing' } | { kind: 'running' } | { kind: 'done'; result: ExportDone } | { kind: 'failed'; message: string };

interface Props {
  tasks: Task[];
  /** The vegetation index a task's orthophoto is drawn as on the map, or null. */
  plantOf: (taskId: number) => PlantStyle | null;
  onClose: () => void;
}

export function ExportDialog({ tasks, plantOf, onClose }: Props) {
  const [taskId, setTaskId] = useState(tasks[0]?.id);
  const task = tasks.find((candidate) => candidate.id === taskId) ?? tasks[0];
  const layers = task ? exportLayers(task) : [];
  const [layer, setLayer] = useState<ExportLayer | undefined>(layers[0]?.layer);
  const current = layers.find((entry) => entry.layer === layer)?.layer ?? layers[0]?.layer;
  const formats = current ? exportFormats(current) : [];
  const [format, setFormat] = useState(formats[0]?.format ?? '');
  const chosenFormat = formats.some((entry) => entry.format === format) ? format : (formats[0]?.format ?? '');
  const [crsKind, setCrsKind] = useState<CrsChoice['kind']>('task');
  const [epsg, setEpsg] = useState('');
  const [proj, setProj] = useState('');
  const [colorMap, setColorMap] = useState(DEFAULT_RAMP);
  const [hillshade, setHillshade] = useState(true);
  const [interval, setInterval] = useState('1');
  const [simplify, setSimplify] = useState('0.1');
  // As WebODM: an orthophoto drawn as an index exports as drawn unless the user asks for its own colours.
  const [asIndex, setAsIndex] = useState(true);
  const plant = task && current === 'orthophoto' ? plantOf(task.id) : null;
  const [phase, setPhase] = useState<Phase>({ kind: 'choosing' });
  const running = useRef<AbortController | null>(null);
  useEffect(() => () => running.current?.abort(), []);

  const crs: CrsChoice = crsKind === 'epsg' ? { kind: 'epsg', code: epsg } : crsKind === 'proj' ? { kind: 'proj', text: proj } : { kind: 'task' };
  const contours = isContours(chosenFormat);
  const style = { colorMap, hillshade, plant: asIndex ? plant : null, contours: { interval, simplify } };
  const body = current ? exportBody(current, chosenFormat, crs, style) : { error: 'This task has nothing to export.' };
  const problem = 'error' in body ? (body.error as string) : null;

  async function start() {
    if (!task || !current || problem) return;
    const controller = new AbortController();
    running.current = controller;
    setPhase({ kind: 'running' });
    try {
      const result = await runExport(task, current, chosenFormat, body as ExportBody, controller.signal);
      if (!controller.signal.aborted) setPhase({ kind: 'done', result });
    } catch (failure) {
      if (!controller.signal.aborted) setPhase({ kind: 'failed', message: failure instanceof Error ? failure.message : String(failure) });
    }
  }

  const busy = phase.kind === 'running';
  return (
    <Modal title="Export" onClose={onClose}>
      <form
        class="export-form"
        onSubmit={(event) => {
          event.preventDefault();
          void start();
        }}
      >
        {tasks.length > 1 && (
          <label>
            Task
            <select value={task?.id} disabled={busy} onChange={(event) => setTaskId(Number(event.currentTarget.value))}>
              {tasks.map((entry) => (
                <option key={entry.id} value={entry.id}>{entry.name || `Task ${entry.id}`}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Layer
          <select value={current} disabled={busy} onChange={(event) => setLayer(event.currentTarget.value as ExportLayer)}>
            {layers.map((entry) => (
              <option key={entry.layer} value={entry.layer}>{entry.label}</option>
            ))}
          </select>
        </label>
        <label>
          Format
          <select value={chosenFormat} disabled={busy} onChange={(event) => setFormat(event.currentTarget.value)}>
            {formats.map((entry) => (
              <option key={entry.format} value={entry.format}>{entry.label}</option>
            ))}
          </select>
        </label>
        {current && drawsElevation(current, chosenFormat) && (
          <>
            <label>
              Colour map
              <select value={colorMap} disabled={busy} onChange={(event) => setColorMap(event.currentTarget.value)}>
                {RAMPS.map((ramp) => (
                  <option key={ramp.name} value={ramp.name}>{ramp.label}</option>
                ))}
              </select>
            </label>
            <label class="export-check">
              <input type="checkbox" checked={hillshade} disabled={busy} onChange={(event) => setHillshade(event.currentTarget.checked)} />
              Hillshade
            </label>
          </>
        )}
        {contours && (
          <>
            <label>
              Interval (m)
              <input inputMode="decimal" value={interval} disabled={busy} onInput={(event) => setInterval(event.currentTarget.value)} />
            </label>
            <label>
              Simplify within (m)
              <input inputMode="decimal" value={simplify} disabled={busy} onInput={(event) => setSimplify(event.currentTarget.value)} />
            </label>
          </>
        )}
        {plant && (
          <fieldset class="export-choice" disabled={busy}>
            <legend>Orthophoto as</legend>
            <label class="export-check">
              <input type="radio" name="orthophoto" checked={asIndex} onChange={() => setAsIndex(true)} />
              Plant Health: {describeIndex(plant, chosenFormat)}
            </label>
            <label class="export-check">
              <input type="radio" name="orthophoto" checked={!asIndex} onChange={() => setAsIndex(false)} />
              The orthophoto itself
            </label>
          </fieldset>
        )}
        <fieldset class="export-choice" disabled={busy || chosenFormat === 'kmz'}>
          <legend>Coordinate system{chosenFormat === 'kmz' ? ' (KMZ is always WGS 84)' : ''}</legend>
          <label class="export-check">
            <input type="radio" name="crs" checked={crsKind === 'task'} onChange={() => setCrsKind('task')} />
            The task's own
          </label>
          <label class="export-check">
            <input type="radio" name="crs" checked={crsKind === 'epsg'} onChange={() => setCrsKind('epsg')} />
            EPSG code
          </label>
          {crsKind === 'epsg' && <input aria-label="EPSG code" inputMode="numeric" placeholder="4326" value={epsg} onInput={(event) => setEpsg(event.currentTarget.value)} />}
          <label class="export-check">
            <input type="radio" name="crs" checked={crsKind === 'proj'} onChange={() => setCrsKind('proj')} />
            PROJ string
          </label>
          {crsKind === 'proj' && <input aria-label="PROJ string" placeholder="+proj=utm +zone=33 +datum=WGS84" value={proj} onInput={(event) => setProj(event.currentTarget.value)} />}
        </fieldset>
        {problem && (crsKind !== 'task' || contours) && <p class="muted map-note">{problem}</p>}
        {phase.kind === 'running' && <p class="muted map-note" role="status">Exporting… this can take a while for large surveys.</p>}
        {phase.kind === 'failed' && <p class="error map-note" role="alert">The export failed: {phase.message}</p>}
        {phase.kind === 'done' && (
          <p class="map-note" role="status">
            Ready: <a href={phase.result.url} download={phase.result.filename}>{phase.result.filename}</a>
          </p>
        )}
        <div class="actions">
          <button type="button" onClick={onClose}>Close</button>
          <button type="submit" class="primary" disabled={busy || Boolean(problem)}>{busy ? 'Exporting…' : 'Export'}</button>
        </div>
      </form>
    </Modal>
  );
}
