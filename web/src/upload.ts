// Uploads a task's files through the API's partial flow: the task is created partial, each file goes in chunks
// with Dropzone's fields (dzuuid, dzchunkindex, dztotalchunkcount, dzchunkbyteoffset) to .../upload/, then
// .../commit/ starts processing. A chunk that fails for the network or a 5xx is sent again with a growing pause,
// so a dropped connection only delays the upload; the files already in are remembered in localStorage, so that
// after a reload the same files picked again skip what was sent.
import { ApiError, api, taskPath } from './api.ts';

export const CHUNK_BYTES = 4 * 1024 * 1024;
const PARALLEL_FILES = 3;
const MAX_TRIES = 20;
const STORE_PREFIX = 'aeromap.upload.';

export interface UploadProgress {
  sentBytes: number;
  totalBytes: number;
  filesDone: number;
  filesTotal: number;
  /** Bytes per second over the last few seconds. */
  speed: number;
  /** Seconds left at that speed; null until it is known. */
  secondsLeft: number | null;
  /** Set while a chunk waits to be sent again. */
  retrying: string | null;
}

/** An upload interrupted by a reload: its task, and the files already in. */
export interface PendingUpload {
  projectId: number;
  taskId: number;
  taskName: string;
  done: string[];
  total: number;
}

/** What tells a picked file from another: two flights' photographs may share a name, even a size. */
export const fileKey = (file: File) => `${file.name}:${file.size}:${file.lastModified}`;

export function pendingUploads(): PendingUpload[] {
  const found: PendingUpload[] = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key?.startsWith(STORE_PREFIX)) continue;
    try {
      found.push(JSON.parse(localStorage.getItem(key)!) as PendingUpload);
    } catch {
      localStorage.removeItem(key);
    }
  }
  return found;
}

export function forgetUpload(taskId: number): void {
  localStorage.removeItem(STORE_PREFIX + taskId);
}

function remember(pending: PendingUpload): void {
  localStorage.setItem(STORE_PREFIX + pending.taskId, JSON.stringify(pending));
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** Worth sending again: the network failed, or the server had a passing fault. A 4xx is the file's own fault. */
const transient = (error: unknown) => !(error instanceof ApiError) || error.status >= 500 || error.status === 429;

/** A speed averaged over a sliding window of samples. */
class SpeedMeter {
  private samples: { at: number; bytes: number }[] = [];
  add(bytes: number): void {
    const at = performance.now();
    this.samples.push({ at, bytes });
    while (this.samples.length > 2 && at - this.samples[0].at > 8000) this.samples.shift();
  }
  perSecond(): number {
    if (this.samples.length < 2) return 0;
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    const sent = this.samples.slice(1).reduce((sum, s) => sum + s.bytes, 0);
    return last.at > first.at ? (sent * 1000) / (last.at - first.at) : 0;
  }
}

export class TaskUpload {
  private readonly controller = new AbortController();
  private readonly meter = new SpeedMeter();
  private progress: UploadProgress;
  private readonly pending: PendingUpload;

  constructor(
    private readonly projectId: number,
    private readonly taskId: number,
    taskName: string,
    private readonly files: File[],
    private readonly onProgress: (progress: UploadProgress) => void,
    alreadyDone: string[] = [],
  ) {
    const done = new Set(alreadyDone);
    this.pending = { projectId, taskId, taskName, done: [...done], total: files.length };
    const sent = files.filter((f) => done.has(fileKey(f)));
    this.progress = {
      sentBytes: sent.reduce((sum, f) => sum + f.size, 0),
      totalBytes: files.reduce((sum, f) => sum + f.size, 0),
      filesDone: sent.length,
      filesTotal: files.length,
      speed: 0,
      secondsLeft: null,
      retrying: null,
    };
    remember(this.pending);
  }

  abort(): void {
    this.controller.abort(new DOMException('Upload canceled', 'AbortError'));
  }

  /** Sends every file not yet in, then commits the task. */
  async run(): Promise<void> {
    const done = new Set(this.pending.done);
    const queue = this.files.filter((f) => !done.has(fileKey(f)));
    this.report();
    const workers = Array.from({ length: Math.min(PARALLEL_FILES, queue.length) }, async () => {
      for (let file = queue.shift(); file; file = queue.shift()) await this.sendFile(file);
    });
    await Promise.all(workers);
    await this.withRetries('commit', () => api(`${taskPath(this.projectId, this.taskId)}/commit/`, { method: 'POST', signal: this.controller.signal }));
    forgetUpload(this.taskId);
  }

  private async sendFile(file: File): Promise<void> {
    const chunks = Math.max(1, Math.ceil(file.size / CHUNK_BYTES));
    const id = crypto.randomUUID();
    for (let index = 0; index < chunks; index++) {
      const offset = index * CHUNK_BYTES;
      const blob = file.slice(offset, Math.min(file.size, offset + CHUNK_BYTES));
      await this.withRetries(file.name, () => {
        const form = new FormData();
        form.append('dzuuid', id);
        form.append('dzchunkindex', String(index));
        form.append('dztotalchunkcount', String(chunks));
        form.append('dzchunkbyteoffset', String(offset));
        form.append('images', blob, file.name);
        return api(`${taskPath(this.projectId, this.taskId)}/upload/`, { method: 'POST', body: form, signal: this.controller.signal });
      });
      this.meter.add(blob.size);
      this.progress.sentBytes += blob.size;
      this.report();
    }
    this.pending.done.push(fileKey(file));
    remember(this.pending);
    this.progress.filesDone++;
    this.report();
  }

  private async withRetries<T>(what: string, send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await send();
        if (this.progress.retrying) {
          this.progress.retrying = null;
          this.report();
        }
        return result;
      } catch (error) {
        if (this.controller.signal.aborted || !transient(error) || attempt >= MAX_TRIES) throw error;
        this.progress.retrying = `${what}: ${error instanceof Error ? error.message : 'failed'}; trying again (${attempt}/${MAX_TRIES - 1})`;
        this.report();
        await sleep(Math.min(30_000, 1000 * attempt), this.controller.signal);
      }
    }
  }

  private report(): void {
    // While a chunk waits to be sent again, nothing moves: no speed, and no time left to promise.
    const speed = this.progress.retrying ? 0 : this.meter.perSecond();
    const left = this.progress.totalBytes - this.progress.sentBytes;
    this.progress.speed = speed;
    this.progress.secondsLeft = speed > 0 ? left / speed : null;
    this.onProgress({ ...this.progress });
  }
}
