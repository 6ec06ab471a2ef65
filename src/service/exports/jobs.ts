// Export jobs, WebODM's Celery tasks for exports: each made by an engine process (`aeromap-engine export`), at
// most EXPORT_WORKERS at once, and kept on disk under DATA_DIR (media/tmp/exports/{id}/) until they expire. The
// state is the folder alone, so any instance of the service that shares DATA_DIR answers for any job: a result
// counts once its `done` file is written after the engine exits (never while it is half written), and a job
// whose instance stopped is seen by its `alive` file going stale, and answered as failed rather than waited
// for forever.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FastifyBaseLogger } from 'fastify';
import { engineEnvironment } from '../../protocol/environment.ts';
import { exportFolder, exportsFolder } from '../layout.ts';

const execFileAsync = promisify(execFile);

/** How often an instance touches the jobs it holds, and when an untouched one counts as abandoned. */
const ALIVE_EVERY_MS = 10_000;
const ABANDONED_AFTER_MS = 60_000;
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ExportJobSettings {
  dataDir: string;
  enginePath: string;
  /** Most engine processes at once. */
  workers: number;
  /** Jobs older than this are removed. */
  expiryMs: number;
  /** An export that runs longer is stopped and failed. */
  timeoutMs?: number;
}

/** What a client is told of a job (WebODM's workers/check). */
export type JobState = { ready: false } | { ready: true; error?: string };

interface JobRecord {
  filename: string;
  /** The result's file name in the job's folder. */
  result: string;
}

type JobView = { error: string } | { done: boolean; file: string; record: JobRecord };

export type JobResult = { file: string; filename: string } | { error: string } | null;

/** The last `[ERROR]` line of the engine's console: its reason for failing. */
export function engineError(output: string): string | null {
  const lines = output.split('\n').filter((line) => line.startsWith('[ERROR]'));
  return lines.length ? lines[lines.length - 1].slice('[ERROR]'.length).trim() : null;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

export class ExportJobs {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** The jobs this instance holds, queued or running. */
  private readonly held = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly settings: ExportJobSettings,
    private readonly log: FastifyBaseLogger,
  ) {
    const alive = setInterval(() => void this.touchHeld(), ALIVE_EVERY_MS);
    const sweep = setInterval(() => void this.sweep(), Math.min(3_600_000, settings.expiryMs / 4));
    for (const timer of [alive, sweep]) timer.unref();
    this.timers.push(alive, sweep);
  }

  /**
   * Queues an export: the engine's arguments, given the result's path and that of the `input` (JSON written
   * beside it for the engine to read, where the request is too large for a command line). Answers its id.
   */
  async start(args: (output: string, input: string) => string[], filename: string, extension: string, input?: unknown): Promise<string> {
    const id = randomUUID();
    const folder = exportFolder(this.settings.dataDir, id);
    const record: JobRecord = { filename, result: `result.${extension}` };
    await mkdir(folder.root, { recursive: true });
    await writeFile(folder.alive, '');
    await writeFile(folder.job, JSON.stringify(record));
    if (input !== undefined) await writeFile(folder.input, JSON.stringify(input));
    this.held.add(id);
    void this.run(id, args(path.join(folder.root, record.result), folder.input));
    return id;
  }

  async state(id: string): Promise<JobState> {
    const job = await this.read(id);
    if (!job) return { ready: false };
    if ('error' in job) return { ready: true, error: job.error };
    if (job.done) return { ready: true };
    return { ready: false };
  }

  /** The result's file and download name; its error; null while it is not ready (or no such job is known). */
  async result(id: string): Promise<JobResult> {
    const job = await this.read(id);
    if (!job) return null;
    if ('error' in job) return { error: job.error };
    return job.done ? { file: job.file, filename: job.record.filename } : null;
  }

  /** Removes the jobs older than the expiry that no instance still works on. */
  async sweep(): Promise<number> {
    const cutoff = Date.now() - this.settings.expiryMs;
    let removed = 0;
    for (const id of await readdir(exportsFolder(this.settings.dataDir)).catch(() => [] as string[])) {
      if (!JOB_ID.test(id) || this.held.has(id)) continue;
      const folder = exportFolder(this.settings.dataDir, id);
      const info = await stat(folder.root).catch(() => undefined);
      if (!info || info.mtimeMs >= cutoff) continue;
      await rm(folder.root, { recursive: true, force: true });
      removed++;
    }
    if (removed) this.log.info({ removed }, 'expired exports removed');
    return removed;
  }

  close(): void {
    for (const timer of this.timers) clearInterval(timer);
  }

  private async read(id: string): Promise<JobView | null> {
    if (!JOB_ID.test(id)) return null;
    const folder = exportFolder(this.settings.dataDir, id);
    let record: JobRecord;
    try {
      record = JSON.parse(await readFile(folder.job, 'utf8')) as JobRecord;
    } catch {
      return null;
    }
    const error = await readFile(folder.error, 'utf8').catch(() => null);
    if (error !== null) return { error };
    const file = path.join(folder.root, record.result);
    if (await exists(folder.done)) return (await exists(file)) ? { done: true, file, record } : { error: 'The export made no file' };
    const alive = await stat(folder.alive).catch(() => undefined);
    if (!alive || Date.now() - alive.mtimeMs > ABANDONED_AFTER_MS) {
      return { error: 'The export was interrupted: the service stopped while making it. Start it again.' };
    }
    return { done: false, file, record };
  }

  private async run(id: string, args: string[]): Promise<void> {
    const folder = exportFolder(this.settings.dataDir, id);
    await this.turn();
    try {
      await execFileAsync(this.settings.enginePath, args, {
        env: engineEnvironment(),
        maxBuffer: 16 * 2 ** 20,
        timeout: this.settings.timeoutMs ?? 3_600_000,
        killSignal: 'SIGKILL',
      });
      await writeFile(folder.done, '');
    } catch (error) {
      const failure = error as { stdout?: string; killed?: boolean; message: string };
      const reason = failure.killed ? 'The export took too long and was stopped' : (engineError(failure.stdout ?? '') ?? failure.message);
      this.log.warn({ export: id, reason }, 'export failed');
      await writeFile(folder.error, reason).catch(() => {});
    } finally {
      this.held.delete(id);
      this.running--;
      this.waiting.shift()?.();
    }
  }

  /** Waits for a free worker. */
  private async turn(): Promise<void> {
    if (this.running >= this.settings.workers) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
  }

  private async touchHeld(): Promise<void> {
    const now = new Date();
    for (const id of this.held) await utimes(exportFolder(this.settings.dataDir, id).alive, now, now).catch(() => {});
  }
}
