// The 3D view of a task: its point cloud streamed from the COPC file, its textured model on demand, and
// measurements of distance, height, angle, area and profile, and a clip box. Loaded only when opened, so three.js stays out of the other
// pages.
import { useEffect, useRef, useState } from 'preact/hooks';
import { taskPath } from '../api.ts';
import { ProfileChart } from '../map/profile-chart.tsx';
import { type Measurement, TOOLS } from './measure-tools.ts';
import { CLASS_COLOURS, type ColourMode } from './point-material.ts';
import { ViewerSession } from './session.ts';
import './viewer3d.css';

const metres = (v: number) => `${v.toFixed(2)} m`;
const signed = (v: number) => `${v >= 0 ? '+' : '−'}${metres(Math.abs(v))}`;
const FIGURE: Record<Measurement['tool'], (v: number) => string> = {
  distance: metres,
  height: metres,
  angle: (v) => `${v.toFixed(1)}°`,
  area: (v) => `${v.toFixed(2)} m²`,
  profile: metres,
  clip: (v) => `${v.toFixed(1)} m²`,
};

/** A link of the panel, back to the pages around the 3D view. */
export interface PageLink {
  label: string;
  href: string;
}

/** The links of a signed-in user's 3D view: the task's page and its map. */
const memberLinks = (pid: string, tid: string): PageLink[] => [
  { label: 'Task', href: `/project/${pid}/task/${tid}/` },
  { label: 'Map', href: `/map/project/${pid}/task/${tid}/` },
];

export default function ModelPage({ pid, tid, links = memberLinks(pid, tid) }: { pid: string; tid: string; links?: PageLink[] }) {
  const container = useRef<HTMLDivElement>(null);
  const [session, setSession] = useState<ViewerSession | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const pressed = useRef<{ x: number; y: number } | null>(null);

  useEffect(() => {
    let opened: ViewerSession;
    try {
      opened = new ViewerSession(container.current!, pid, tid);
    } catch {
      setFailure('This browser cannot show 3D: WebGL is not available or is turned off.');
      return;
    }
    setSession(opened);
    void opened.start();
    return () => {
      opened.dispose();
      setSession(null);
    };
  }, [pid, tid]);

  const state = session?.state.value;
  return (
    <div class="viewer3d-page">
      <div
        id="viewer3d"
        ref={container}
        class={`viewer3d${state?.tool ? ' measuring' : ''}`}
        tabIndex={0}
        role="application"
        aria-label="3D view. Drag or use the arrow keys to orbit, + and - to zoom."
        aria-describedby="viewer3d-status"
        data-points={state?.points ?? 0}
        data-nodes={state?.nodes ?? 0}
        data-bytes={state?.bytes ?? 0}
        data-first-points-ms={state?.firstPointsMs == null ? '' : Math.round(state.firstPointsMs)}
        data-model-loaded={state?.modelLoaded ? 'true' : 'false'}
        data-model-streamed={state?.modelStreamed ? 'true' : 'false'}
        data-model-centre={state?.modelCentre?.map((v) => v.toFixed(2)).join(',') ?? ''}
        {...pointerClicks(session, pressed)}
        onKeyDown={(e) => e.key === 'Escape' && session?.state.value.tool && session.setTool(null)}
      />
      {failure ? (
        <div class="viewer3d-panel" role="alert">
          <p class="viewer3d-error">{failure}</p>
        </div>
      ) : (
        session && state && <Panel session={session} tid={tid} links={links} />
      )}
    </div>
  );
}

/** A click is a press and release without a drag: dragging orbits, and must not drop measurement points. */
function pointerClicks(session: ViewerSession | null, down: { current: { x: number; y: number } | null }) {
  return {
    onPointerDown: (e: PointerEvent) => {
      down.current = e.isPrimary ? { x: e.clientX, y: e.clientY } : null;
    },
    onPointerUp: (e: PointerEvent) => {
      const start = down.current;
      down.current = null;
      if (!session || !start || Math.hypot(e.clientX - start.x, e.clientY - start.y) > 5) return;
      const rect = (e.currentTarget as HTMLElement).getBoundingClientRect();
      const [x, y] = [e.clientX - rect.left, e.clientY - rect.top];
      if (session.state.value.tool) session.measureAt(x, y);
      else session.pickCamera(x, y);
    },
  };
}

function Panel({ session, tid, links }: { session: ViewerSession; tid: string; links: PageLink[] }) {
  const state = session.state.value;
  const [size, setSize] = useState(2);
  const [mode, setMode] = useState<ColourMode>('rgb');
  const [budget, setBudget] = useState(3);
  const cloudReady = state.cloudMessage === null || state.nodes > 0;
  return (
    <details class="viewer3d-panel" open>
      <summary>
        <span>{state.task?.name || `Task ${tid}`}</span>
      </summary>
      {links.length > 0 && (
        <p class="viewer3d-back">
          {links.map((link, index) => (
            <span key={link.href}>
              {index > 0 && ' · '}
              <a href={link.href}>{link.label}</a>
            </span>
          ))}
        </p>
      )}
      <p id="viewer3d-status" class="viewer3d-status" aria-live="polite">
        {status(state)}
      </p>
      {state.cloudMessage && <p class="viewer3d-error" role="alert">{state.cloudMessage}</p>}
      <label class="viewer3d-check">
        <input type="checkbox" checked={state.showCloud} disabled={!session.viewer.cloud} onChange={(e) => session.setShowCloud(e.currentTarget.checked)} />
        Point cloud
      </label>
      {state.hasModel && (
        <label class="viewer3d-check">
          <input type="checkbox" checked={state.showModel} onChange={(e) => session.setShowModel(e.currentTarget.checked)} />
          Textured model
          {state.modelProgress !== null && <span class="viewer3d-muted">{state.modelProgress ? ` ${Math.round(state.modelProgress * 100)} %` : ' …'}</span>}
        </label>
      )}
      {state.modelMessage && <p class="viewer3d-error" role="alert">{state.modelMessage}</p>}
      {state.hasCameras && (state.nodes > 0 || state.modelLoaded) && (
        <label class="viewer3d-check">
          <input type="checkbox" checked={state.showCameras} onChange={(e) => void session.setShowCameras(e.currentTarget.checked)} />
          Cameras
        </label>
      )}
      {state.camerasMessage && <p class="viewer3d-error" role="alert">{state.camerasMessage}</p>}
      {state.showCameras && <Photo session={session} />}
      {cloudReady && session.viewer.cloud && (
        <>
          <label class="viewer3d-field">
            <span>Point size</span>
            <input type="range" min={1} max={8} step={0.5} value={size} onInput={(e) => { const v = Number(e.currentTarget.value); setSize(v); session.setPointSize(v); }} />
          </label>
          <label class="viewer3d-field">
            <span>Colour</span>
            <select value={mode} onChange={(e) => { const v = e.currentTarget.value as ColourMode; setMode(v); session.setColourMode(v); }}>
              <option value="rgb">RGB</option>
              <option value="elevation">Elevation</option>
              <option value="class">Classification</option>
              {state.hasIntensity && <option value="intensity">Intensity</option>}
            </select>
          </label>
          {mode === 'class' && <ClassLegend />}
          <label class="viewer3d-field">
            <span>Points</span>
            <input
              type="range"
              min={0.5}
              max={10}
              step={0.5}
              value={budget}
              aria-valuetext={`${budget} million points at most`}
              onChange={(e) => { const v = Number(e.currentTarget.value); setBudget(v); session.setPointBudget(v * 1e6); }}
            />
          </label>
        </>
      )}
      <div class="viewer3d-tools" role="group" aria-label="Measure">
        {TOOLS.map(({ tool, label }) => (
          <button key={tool} type="button" class={state.tool === tool ? 'primary' : ''} aria-pressed={state.tool === tool} onClick={() => session.setTool(state.tool === tool ? null : tool)}>
            {label}
          </button>
        ))}
      </div>
      {state.tool && <MeasureResult session={session} />}
      {state.clipped && (
        <button type="button" onClick={() => session.setClip(null)}>
          Show all (end the clip)
        </button>
      )}
      <button type="button" onClick={() => void session.saveView()}>
        Save view
      </button>
      {state.viewMessage && <p class="viewer3d-muted" role="status">{state.viewMessage}</p>}
    </details>
  );
}

/** The photograph of the camera clicked, opening whole in a new tab. */
function Photo({ session }: { session: ViewerSession }) {
  const { photo, task } = session.state.value;
  if (!photo || !task) return <p class="viewer3d-muted">Click a camera to see its photograph.</p>;
  const base = `${taskPath(task.project, task.id)}/images`;
  const name = encodeURIComponent(photo);
  return (
    <figure class="viewer3d-photo">
      <a href={`${base}/download/${name}`} target="_blank" rel="noopener">
        <img src={`${base}/thumbnail/${name}?size=320`} alt={`Photograph ${photo}`} />
      </a>
      <figcaption>{photo}</figcaption>
    </figure>
  );
}

function ClassLegend() {
  return (
    <ul class="viewer3d-legend" aria-label="Point classes">
      {CLASS_COLOURS.map(({ code, name, colour }) => (
        <li key={code}>
          <span class="viewer3d-swatch" style={{ background: colour }} />
          {name}
        </li>
      ))}
    </ul>
  );
}

function MeasureResult({ session }: { session: ViewerSession }) {
  const { tool, picks, measurement, profile } = session.state.value;
  if (!measurement) {
    const hint = TOOLS.find((t) => t.tool === tool)?.hint ?? '';
    return <p class="viewer3d-muted">{picks.length === 0 ? hint : `${picks.length} point${picks.length > 1 ? 's' : ''}: click the next.`}</p>;
  }
  const label = TOOLS.find((t) => t.tool === measurement.tool)?.label ?? '';
  return (
    <div class="viewer3d-result" data-testid="measure-result" data-kind={measurement.tool} data-value={measurement.value.toFixed(3)} aria-live="polite">
      <strong>{label}: {FIGURE[measurement.tool](measurement.value)}</strong>
      {measurement.details.map(({ label: name, metres: value }) => (
        <span key={name}>
          {name} {name === 'vertical' ? signed(value) : metres(value)}
        </span>
      ))}
      {measurement.tool === 'area' && <span class="viewer3d-muted">More clicks add corners; Escape or Area again ends it.</span>}
      {profile && (profile.some((p) => p.height !== null) ? <ProfileChart points={profile} /> : <span class="viewer3d-muted">No points drawn along the line: come closer and pick it again.</span>)}
    </div>
  );
}

function status(state: ViewerSession['state']['value']): string {
  if (!state.task) return state.cloudMessage ? '' : 'Loading the task…';
  if (!state.points && state.cloudLoading && !state.cloudMessage) return 'Loading the point cloud…';
  if (!state.showCloud) return state.nodes ? 'Point cloud hidden.' : '';
  return `${state.points.toLocaleString()} points in ${state.nodes} nodes${state.cloudLoading ? ', loading more…' : ''}`;
}
