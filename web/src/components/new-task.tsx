// A new task: photographs (and a GCP file) dropped or picked, seen as thumbnails with their count and size before
// anything is sent; a preset, the options and the node; then the chunked upload with its progress, speed and time
// left. An upload cut by a reload is offered again: picking the same files sends only what is missing.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, listAll } from '../api.ts';
import { bytes, duration, percent } from '../format.ts';
import { type NodeOption, type OptionPair, type OptionValue, changedOptions } from '../options.ts';
import { type PendingUpload, TaskUpload, type UploadProgress, fileKey, forgetUpload } from '../upload.ts';
import { OptionsEditor } from './options-editor.tsx';

interface Preset {
  id: number;
  name: string;
  options: OptionPair[];
}

interface NodeItem {
  id: number;
  hostname: string;
  port: number;
  label: string;
  online: boolean;
  max_images: number | null;
}

const ACCEPTED = /\.(jpe?g|tiff?|png|dng|cr[23]|nef|arw|raf|rw2|orf|pef|srw|txt|mp4|mov|avi|srt)$/i;
const VIDEO = /\.(mp4|mov|avi)$/i;
const THUMBNAILS = 24;

export function NewTask({ projectId, resume, onDone, onCancel }: { projectId: number; resume?: PendingUpload; onDone: () => void; onCancel: () => void }) {
  const [files, setFiles] = useState<File[]>([]);
  const [name, setName] = useState(resume?.taskName ?? defaultName());
  const [presets, setPresets] = useState<Preset[]>([]);
  const [available, setAvailable] = useState<NodeOption[]>([]);
  const [nodes, setNodes] = useState<NodeItem[]>([]);
  const [nodeId, setNodeId] = useState<string>('auto');
  const [values, setValues] = useState(new Map<string, OptionValue>());
  const [showOptions, setShowOptions] = useState(false);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);

  useEffect(() => {
    listAll<Preset>('/api/presets/').then(setPresets, () => setPresets([]));
    api<NodeOption[]>('/api/processingnodes/options/').then(setAvailable, () => setAvailable([]));
    listAll<NodeItem>('/api/processingnodes/?has_available_options=true').then(setNodes, () => setNodes([]));
  }, []);

  // Kept while the files are: the thumbnails' object URLs live as long as this list.
  const images = useMemo(() => files.filter((f) => !/\.(txt|srt)$/i.test(f.name) && !VIDEO.test(f.name)), [files]);
  const videos = files.filter((f) => VIDEO.test(f.name));
  // A video holds many views: with one, fewer photographs will do.
  const enough = videos.length > 0 || images.length >= 3;
  const gcp = files.find((f) => /\.txt$/i.test(f.name));
  const totalBytes = files.reduce((sum, f) => sum + f.size, 0);
  const alreadySent = resume ? files.filter((f) => resume.done.includes(fileKey(f))).length : 0;
  const node = nodes.find((n) => String(n.id) === nodeId);
  const tooMany = node?.max_images != null && images.length > node.max_images;

  const addFiles = (list: FileList | null) => {
    if (!list) return;
    const picked = [...list].filter((f) => ACCEPTED.test(f.name));
    // A file picked twice is added once; another file of the same name (a second flight's DJI_0001.JPG) is kept,
    // and the server stores it under a name of its own.
    setFiles((current) => {
      const seen = new Set(current.map(fileKey));
      return [...current, ...picked.filter((f) => !seen.has(fileKey(f)))];
    });
  };

  const applyPreset = (id: string) => {
    const preset = presets.find((p) => String(p.id) === id);
    setValues(new Map((preset?.options ?? []).map((o) => [o.name, o.value])));
  };

  const start = async () => {
    setError(null);
    try {
      let taskId = resume?.taskId;
      if (taskId === undefined) {
        const created = await api<{ id: number }>(`/api/projects/${projectId}/tasks/`, {
          method: 'POST',
          body: {
            name,
            partial: true,
            options: changedOptions(available, values),
            ...(node ? { processing_node: node.id, auto_processing_node: false } : { auto_processing_node: true }),
          },
        });
        taskId = created.id;
      }
      const upload = new TaskUpload(projectId, taskId, name, files, setProgress, resume?.done ?? []);
      await upload.run();
      onDone();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };

  const discard = async () => {
    if (resume) {
      await api(`/api/projects/${projectId}/tasks/${resume.taskId}/remove/`, { method: 'POST' }).catch(() => undefined);
      forgetUpload(resume.taskId);
    }
    onCancel();
  };

  if (progress) return <UploadStatus progress={progress} error={error} onRetry={start} onClose={onCancel} />;

  return (
    <section class="panel new-task" aria-label="New task">
      <h3>{resume ? `Resume the upload of “${resume.taskName}”` : 'New task'}</h3>
      {resume && (
        <p class="muted">
          {resume.done.length} of {resume.total} files were sent before the page was closed. Choose the same files again: only the missing ones are sent.
        </p>
      )}
      <div
        class={`drop-zone${dragging ? ' dragging' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          addFiles(e.dataTransfer?.files ?? null);
        }}
      >
        <p>Drop photographs or videos (with their DJI .srt), and a GCP file (.txt) here, or</p>
        <label class="button">
          Choose files
          <input type="file" multiple accept="image/*,.txt,.dng,.cr2,.cr3,.nef,.arw,.raf,.rw2,.orf,.pef,.srw,.tif,.tiff,video/mp4,video/quicktime,.mp4,.mov,.avi,.srt" class="visually-hidden" onChange={(e) => addFiles(e.currentTarget.files)} data-testid="file-input" />
        </label>
      </div>
      {files.length > 0 && (
        <div class="stack">
          <p data-testid="file-count">
            <strong>{images.length}</strong> photographs{videos.length > 0 ? `, ${videos.length} video${videos.length > 1 ? 's' : ''}` : ''}
            {gcp ? ` and the GCP file ${gcp.name}` : ''}, {bytes(totalBytes)}
            {resume && ` (${alreadySent} already sent)`}
            <button type="button" class="link" onClick={() => setFiles([])}>
              clear
            </button>
          </p>
          {images.length > 0 && !enough && <p class="error">A map needs at least 3 overlapping photographs.</p>}
          {tooMany && <p class="error">The chosen node takes at most {node!.max_images} photographs.</p>}
          <Thumbnails files={images} />
        </div>
      )}
      <div class="grid2">
        <label>
          Task name
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} maxLength={255} disabled={Boolean(resume)} />
        </label>
        <label>
          Preset
          <select onChange={(e) => applyPreset(e.currentTarget.value)} disabled={Boolean(resume)}>
            <option value="">Node defaults</option>
            {presets.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Processing node
          <select value={nodeId} onChange={(e) => setNodeId(e.currentTarget.value)} disabled={Boolean(resume)}>
            <option value="auto">Automatic (the least busy)</option>
            {nodes.map((n) => (
              <option key={n.id} value={n.id} disabled={!n.online}>
                {n.label || `${n.hostname}:${n.port}`}
                {n.online ? '' : ' (offline)'}
              </option>
            ))}
          </select>
        </label>
      </div>
      {!resume && (
        <details open={showOptions} onToggle={(e) => setShowOptions((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>Options ({changedOptions(available, values).length} changed)</summary>
          {showOptions && <OptionsEditor available={available} values={values} onChange={setValues} />}
        </details>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <div class="row">
        <button type="button" class="primary" disabled={(resume ? files.length < 1 : !enough) || tooMany} onClick={start}>
          {resume ? 'Resume upload' : `Upload and process ${images.length + videos.length || ''}`}
        </button>
        <button type="button" onClick={discard}>
          {resume ? 'Discard this upload' : 'Cancel'}
        </button>
      </div>
    </section>
  );
}

function defaultName(): string {
  const now = new Date();
  return `Task of ${now.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })} ${now.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}`;
}

function Thumbnails({ files }: { files: File[] }) {
  const urls = useMemo(() => files.slice(0, THUMBNAILS).map((f) => ({ name: f.name, url: URL.createObjectURL(f) })), [files]);
  useEffect(() => () => urls.forEach((u) => URL.revokeObjectURL(u.url)), [urls]);
  return (
    <ul class="thumbnails" aria-label="Chosen photographs">
      {urls.map((u) => (
        <li key={u.name}>
          <img src={u.url} alt={u.name} loading="lazy" decoding="async" />
        </li>
      ))}
      {files.length > THUMBNAILS && <li class="more">+{files.length - THUMBNAILS}</li>}
    </ul>
  );
}

function UploadStatus({ progress, error, onRetry, onClose }: { progress: UploadProgress; error: string | null; onRetry: () => void; onClose: () => void }) {
  const fraction = progress.totalBytes ? progress.sentBytes / progress.totalBytes : 0;
  return (
    <section class="panel" aria-label="Upload">
      <h3>Uploading</h3>
      <progress max={1} value={fraction} aria-label="Upload progress" data-testid="upload-progress" />
      <p>
        {percent(fraction)} · {progress.filesDone} of {progress.filesTotal} files · {bytes(progress.sentBytes)} of {bytes(progress.totalBytes)}
        {progress.speed > 0 && ` · ${bytes(progress.speed)}/s`}
        {progress.secondsLeft !== null && ` · ${duration(progress.secondsLeft * 1000)} left`}
      </p>
      {progress.retrying && <p class="muted">{progress.retrying}</p>}
      {error && (
        <>
          <p role="alert" class="error">
            {error}
          </p>
          <div class="row">
            <button type="button" class="primary" onClick={onRetry}>
              Try again
            </button>
            <button type="button" onClick={onClose}>
              Close
            </button>
          </div>
        </>
      )}
    </section>
  );
}
