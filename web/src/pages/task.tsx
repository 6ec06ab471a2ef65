// One task: its state, tags and progress, the quality of its result, its console, its downloads, and what can be
// done with it (map, 3D, ground control, share, cancel, restart from a stage, duplicate, backup, compact, remove).
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { type Project, type Task, api, taskPath } from '../api.ts';
import { Confirm } from '../components/confirm.tsx';
import { Console } from '../components/console.tsx';
import { ShareTask } from '../components/share-task.tsx';
import { TagsEditor } from '../components/tags.tsx';
import { TaskStatus } from '../../../src/protocol/status.ts';
import { assetLabel, bytes, duration, isActive, percent, statusClass, statusText } from '../format.ts';

const POLL_MS = 2000;

export function TaskPage({ pid, tid }: { pid: string; tid: string }) {
  const projectId = Number(pid);
  const taskId = Number(tid);
  const [task, setTask] = useState<Task | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [canChange, setCanChange] = useState(false);
  const load = () => api<Task>(`${taskPath(projectId, taskId)}/`).then(setTask, (e: Error) => setError(e.message));

  useEffect(() => {
    void load();
    api<Project>(`/api/projects/${projectId}/`).then((project) => setCanChange(project.permissions.includes('change')), () => setCanChange(false));
  }, [projectId, taskId]);
  useEffect(() => {
    if (!task || !isActive(task)) return;
    const timer = setTimeout(load, POLL_MS);
    return () => clearTimeout(timer);
  }, [task]);

  if (error && !task) {
    return (
      <div class="page">
        <p role="alert" class="error">
          {error}
        </p>
        <a href="/dashboard/">Back to the projects</a>
      </div>
    );
  }
  if (!task) return <div class="page muted">Loading…</div>;
  return (
    <div class="page task-page">
      <p>
        <a href="/dashboard/">← Projects</a>
      </p>
      <div class="toolbar">
        <h1 class="grow">{task.name || `Task #${task.id}`}</h1>
        <span class={`badge ${statusClass(task)}`} data-testid="task-status">
          {statusText(task)}
        </span>
      </div>
      {task.last_error && (
        <p role="alert" class="error">
          {task.last_error}
        </p>
      )}
      <Progress task={task} onChanged={load} />
      <Actions task={task} onChanged={load} />
      <Quality task={task} />
      <ShareTask task={task} canChange={canChange} onChanged={load} />
      <Downloads task={task} />
      <section class="panel">
        <h2>Console</h2>
        <Console projectId={projectId} taskId={taskId} live={isActive(task)} />
      </section>
    </div>
  );
}

function Progress({ task, onChanged }: { task: Task; onChanged: () => Promise<unknown> }) {
  const saveTags = async (tags: string[]) => {
    await api(`${taskPath(task.project, task.id)}/`, { method: 'PATCH', body: { tags } });
    await onChanged();
  };
  // Photographs are resized only when a task asks for it: the bar would otherwise sit at 0 %.
  const bars: [string, number][] = [
    ['Upload', task.upload_progress],
    ...(task.resize_progress > 0 ? [['Resize', task.resize_progress] as [string, number]] : []),
    ['Processing', task.running_progress],
  ];
  return (
    <section class="panel">
      <dl class="facts">
        <dt>Tags</dt>
        <dd>
          <TagsEditor tags={task.tags} onSave={saveTags} />
        </dd>
        <dt>Photographs</dt>
        <dd>{task.compacted ? `${task.images_count} (removed by Compact; the results stay)` : task.images_count}</dd>
        <dt>Processing time</dt>
        <dd>{task.processing_time > 0 ? duration(task.processing_time) : '–'}</dd>
        <dt>Node</dt>
        <dd>{task.processing_node_name ?? (task.auto_processing_node ? 'automatic' : '–')}</dd>
        <dt>Created</dt>
        <dd>{new Date(task.created_at).toLocaleString()}</dd>
        <dt>Size</dt>
        <dd>{task.size ? bytes(task.size * 2 ** 20) : '–'}</dd>
        <dt>Options</dt>
        <dd>{task.options.length ? task.options.map((o) => `${o.name}=${String(o.value)}`).join(', ') : 'defaults'}</dd>
      </dl>
      {bars.map(([label, value]) => (
        <div class="progress-row" key={label}>
          <span>{label}</span>
          <progress max={1} value={value} aria-label={`${label} progress`} />
          <span>{percent(value)}</span>
        </div>
      ))}
    </section>
  );
}

type Stats = Record<string, Record<string, unknown> | undefined> & { gsd?: number; area?: number; pointcloud?: { points?: number } };
/** The engine's residuals of control points or checkpoints (stats.json), metres. */
type Residuals = { rmse_horizontal?: number; rmse_vertical?: number; points?: unknown[] };

/** Root mean square errors of the points, horizontal and vertical; nothing where none was measured. */
function Accuracy({ label, residuals }: { label: string; residuals: Residuals | null | undefined }) {
  if (residuals?.rmse_horizontal == null || residuals.rmse_vertical == null) return null;
  return (
    <>
      <dt>
        {label} ({residuals.points?.length ?? 0})
      </dt>
      <dd>
        RMS error {residuals.rmse_horizontal.toFixed(3)} m horizontal, {residuals.rmse_vertical.toFixed(3)} m vertical
      </dd>
    </>
  );
}

function Quality({ task }: { task: Task }) {
  const stats = task.statistics as Stats;
  const reconstruction = stats.reconstruction as
    | {
        images_registered?: number;
        images_total?: number;
        mean_reprojection_error_px?: number;
        gcp_residual_m?: Residuals | null;
        checkpoint_residual_m?: Residuals | null;
        alignment?: { reference: string; applied: boolean; shift_m?: number[]; reason?: string };
      }
    | undefined;
  const quality = stats.quality as { verdict?: string; checks?: Record<string, { passed: boolean; message: string }> } | undefined;
  if (!reconstruction && stats.gsd == null) return null;
  const failed = Object.values(quality?.checks ?? {}).filter((c) => !c.passed);
  return (
    <section class="panel" aria-label="Quality">
      <h2>Result</h2>
      <dl class="facts" data-testid="quality">
        {reconstruction?.images_registered != null && (
          <>
            <dt>Photographs placed</dt>
            <dd>
              {reconstruction.images_registered} of {reconstruction.images_total}
            </dd>
          </>
        )}
        {reconstruction?.mean_reprojection_error_px != null && (
          <>
            <dt>Reprojection error</dt>
            <dd>{reconstruction.mean_reprojection_error_px.toFixed(2)} px</dd>
          </>
        )}
        <Accuracy label="Control points" residuals={reconstruction?.gcp_residual_m} />
        <Accuracy label="Checkpoints" residuals={reconstruction?.checkpoint_residual_m} />
        {reconstruction?.alignment && (
          <>
            <dt>Aligned to</dt>
            <dd>
              {reconstruction.alignment.reference}:{' '}
              {reconstruction.alignment.applied && reconstruction.alignment.shift_m
                ? `moved ${Math.hypot(reconstruction.alignment.shift_m[0], reconstruction.alignment.shift_m[1]).toFixed(2)} m across, ${reconstruction.alignment.shift_m[2].toFixed(2)} m up`
                : `not aligned (${reconstruction.alignment.reason})`}
            </dd>
          </>
        )}
        {typeof stats.gsd === 'number' && (
          <>
            <dt>Ground sampling distance</dt>
            <dd>{stats.gsd.toFixed(2)} cm/px</dd>
          </>
        )}
        {typeof stats.area === 'number' && (
          <>
            <dt>Area</dt>
            <dd>{stats.area >= 10_000 ? `${(stats.area / 10_000).toFixed(2)} ha` : `${Math.round(stats.area)} m²`}</dd>
          </>
        )}
        {typeof stats.pointcloud?.points === 'number' && (
          <>
            <dt>Points</dt>
            <dd>{stats.pointcloud.points.toLocaleString()}</dd>
          </>
        )}
        {quality?.verdict && (
          <>
            <dt>Verdict</dt>
            <dd>{quality.verdict}</dd>
          </>
        )}
      </dl>
      {failed.length > 0 && (
        <ul class="checks">
          {failed.map((c) => (
            <li key={c.message}>{c.message}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Downloads({ task }: { task: Task }) {
  if (!task.available_assets.length) return null;
  return (
    <section class="panel">
      <h2>Downloads</h2>
      <ul class="downloads">
        {task.available_assets.map((asset) => (
          <li key={asset}>
            <a href={`${taskPath(task.project, task.id)}/download/${asset}`} download={asset}>
              {assetLabel(asset)}
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Actions({ task, onChanged }: { task: Task; onChanged: () => Promise<unknown> }) {
  const { route } = useLocation();
  const [confirm, setConfirm] = useState<'cancel' | 'remove' | 'compact' | null>(null);
  // A compacted task has no photographs left: it restarts only from a later stage, on the node that has it.
  const stages = task.compacted && task.uuid === '' ? [] : task.can_rerun_from.filter(Boolean).slice(task.compacted ? 1 : 0);
  const [chosen, setFrom] = useState('');
  const from = task.compacted && !stages.includes(chosen) ? (stages[0] ?? '') : chosen;
  const [error, setError] = useState<string | null>(null);
  const base = taskPath(task.project, task.id);
  const act = async (action: string, body?: unknown) => {
    setError(null);
    try {
      await api(`${base}/${action}/`, { method: 'POST', body });
      await onChanged();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const duplicate = async () => {
    setError(null);
    try {
      const { task: copy } = await api<{ task: Task }>(`${base}/duplicate/`, { method: 'POST' });
      route(`/project/${copy.project}/task/${copy.id}/`);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const running = task.status === TaskStatus.QUEUED || task.status === TaskStatus.RUNNING;
  const ended = task.status === TaskStatus.FAILED || task.status === TaskStatus.CANCELED || task.status === TaskStatus.COMPLETED;
  const layers = task.available_assets.some((a) => /^(orthophoto|dsm|dtm)\.tif$/.test(a));
  const cloud = task.available_assets.includes('georeferenced_model.laz');
  return (
    <section class="panel row" aria-label="Actions">
      {layers && (
        <a class="button primary" href={`/map/project/${task.project}/task/${task.id}/`}>
          Open map
        </a>
      )}
      {cloud && (
        <a class="button" href={`/3d/project/${task.project}/task/${task.id}/`}>
          Open 3D view
        </a>
      )}
      {!task.compacted && task.images_count > 0 && (
        <a class="button" href={`/gcp/project/${task.project}/task/${task.id}/`}>
          Ground control
        </a>
      )}
      {running && task.pending_action === null && (
        <button type="button" onClick={() => setConfirm('cancel')}>
          Cancel
        </button>
      )}
      {ended && task.pending_action === null && (!task.compacted || stages.length > 0) && (
        <span class="row">
          <label class="inline">
            Restart from
            <select value={from} onChange={(e) => setFrom(e.currentTarget.value)} aria-label="Restart from stage">
              {!task.compacted && <option value="">the beginning</option>}
              {stages.map((stage) => (
                <option key={stage} value={stage}>
                  {stage}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => act('restart', from ? { options: [...task.options.filter((o) => o.name !== 'rerun-from'), { name: 'rerun-from', value: from }] } : undefined)}>
            Restart
          </button>
        </span>
      )}
      {ended && task.pending_action === null && (
        <button type="button" onClick={duplicate}>
          Duplicate
        </button>
      )}
      {ended && (
        <a class="button" href={`${base}/backup`} download>
          Backup
        </a>
      )}
      {ended && task.pending_action === null && !task.compacted && (
        <button type="button" onClick={() => setConfirm('compact')}>
          Compact
        </button>
      )}
      <button type="button" class="danger" onClick={() => setConfirm('remove')} disabled={task.pending_action === 2}>
        Remove
      </button>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {confirm === 'cancel' && (
        <Confirm title="Cancel task" message="Stop processing this task? It can be restarted later." action="Cancel task" onCancel={() => setConfirm(null)} onConfirm={() => (setConfirm(null), act('cancel'))} />
      )}
      {confirm === 'compact' && (
        <Confirm
          title="Compact task"
          message={`Delete the photographs of “${task.name}” to save space? Its results and downloads stay, but it can no longer be processed again from the start.`}
          action="Compact task"
          onCancel={() => setConfirm(null)}
          onConfirm={() => (setConfirm(null), act('compact'))}
        />
      )}
      {confirm === 'remove' && (
        <Confirm
          title="Remove task"
          message={`Remove “${task.name}” and all its files? This cannot be undone.`}
          action="Remove task"
          onCancel={() => setConfirm(null)}
          onConfirm={async () => {
            setConfirm(null);
            await act('remove');
            route('/dashboard/');
          }}
        />
      )}
    </section>
  );
}
