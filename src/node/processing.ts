// One run of a task: the engine on the task folder, its console and progress recorded as they come, then
// task_output.txt and all.zip, then the end state. Every change is written to the store at once.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_OUTPUTS, buildArchive } from './archive.ts';
import type { ConsoleLog } from './console-log.ts';
import { failureMessage, spawnEngine, type EngineExit } from '../protocol/engine.ts';
import type { DataLayout } from './layout.ts';
import { groupHeldBytes } from './memory.ts';
import { TaskStatus } from '../protocol/status.ts';
import type { TaskRecord } from './model.ts';
import { partialName } from '../files/safe-path.ts';
import type { TaskStore } from './store.ts';

/** Share of the progress bar that the engine's run takes; the rest is building all.zip. */
const ENGINE_SHARE = 0.95;
/** Options that would make a resumed run redo the stages that the interrupted run had already finished. */
const RERUN_OPTIONS = new Set(['rerun-from', 'rerun-all']);

type EndStatus = typeof TaskStatus.COMPLETED | typeof TaskStatus.FAILED;

export interface ProcessingContext {
  store: TaskStore;
  layout: DataLayout;
  enginePath: string;
  /** Whether the engine may reach loopback and private networks (the nodes that sm-cluster names). */
  allowPrivateUrls: boolean;
  consoleOf(uuid: string): ConsoleLog;
  /** Called once a run has ended the task (completed or failed). */
  onEnded(task: TaskRecord): void;
  /** An engine run that lasts longer is stopped and its task failed; null: no limit. */
  maxRuntimeMs: number | null;
  /** An engine run whose processes hold more memory is stopped and its task failed; null: no limit. */
  maxMemoryBytes: number | null;
}

/** How often a run's memory is read against --max-memory. */
const MEMORY_CHECK_MS = 1000;

type Overrun = 'runtime' | 'memory' | null;

export class TaskProcessor {
  constructor(private readonly ctx: ProcessingContext) {}

  /** Runs the task; never rejects: whatever goes wrong fails the task, unless the run was stopped. */
  async run(uuid: string, signal: AbortSignal): Promise<void> {
    try {
      await this.process(uuid, signal);
    } catch (err) {
      if (!signal.aborted) this.end(uuid, TaskStatus.FAILED, `Internal error: ${(err as Error).message}`);
    }
  }

  private async process(uuid: string, signal: AbortSignal): Promise<void> {
    const { store } = this.ctx;
    const before = store.getTask(uuid);
    if (!before) return;
    const task = store.updateTask(uuid, {
      status: TaskStatus.RUNNING,
      startedAt: before.startedAt ?? Date.now(),
      errorMessage: null,
    })!;
    const { exit, overran } = await this.runEngine(task, signal);
    if (signal.aborted) return;
    if (overran !== null) {
      this.end(uuid, TaskStatus.FAILED, this.overrunMessage(overran));
      return;
    }
    const failure = failureMessage(exit);
    if (failure !== null) {
      // The engine's own [ERROR] line, when it printed one, already ends the console.
      this.end(uuid, TaskStatus.FAILED, failure, exit.lastError === null);
      return;
    }
    try {
      await this.packageOutputs(task, signal);
    } catch (err) {
      if (!signal.aborted) this.end(uuid, TaskStatus.FAILED, `Cannot build all.zip: ${(err as Error).message}`);
      return;
    }
    if (!signal.aborted) this.end(uuid, TaskStatus.COMPLETED, null);
  }

  private overrunMessage(overran: NonNullable<Overrun>): string {
    const round = (value: number) => Math.round(value * 100) / 100;
    return overran === 'runtime'
      ? `The task ran longer than this node allows (${round((this.ctx.maxRuntimeMs ?? 0) / 60_000)} minutes, --max-runtime)`
      : `The task needed more memory than this node allows (${round((this.ctx.maxMemoryBytes ?? 0) / 2 ** 30)} GB, --max-memory)`;
  }

  private async runEngine(task: TaskRecord, signal: AbortSignal): Promise<{ exit: EngineExit; overran: Overrun }> {
    const { store, layout } = this.ctx;
    const log = this.ctx.consoleOf(task.uuid);
    const options = task.engineStarted ? task.options.filter((o) => !RERUN_OPTIONS.has(o.name)) : task.options;
    const optionsFile = layout.optionsFile(task.uuid);
    await mkdir(path.dirname(optionsFile), { recursive: true });
    await writeFile(optionsFile, JSON.stringify(options));
    let progress = task.progress;
    let started = task.engineStarted;
    const engine = spawnEngine(this.ctx.enginePath, layout.taskDir(task.uuid), optionsFile, {
      allowPrivateUrls: this.ctx.allowPrivateUrls,
      maxMemoryBytes: this.ctx.maxMemoryBytes,
    }, {
      onLine: (line) => log.append(line),
      onProgress: (percent) => {
        // Only ever forward: a resumed run reports its stages again from where it starts.
        const next = Math.max(progress, Math.min(100, Math.max(0, percent)) * ENGINE_SHARE);
        if (next === progress && started) return;
        progress = next;
        started = true;
        store.updateTask(task.uuid, { progress, engineStarted: true });
      },
    });
    store.updateTask(task.uuid, { enginePid: engine.pid ?? null });
    const stop = (): void => engine.kill();
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    let overran: Overrun = null;
    const overrun = (why: NonNullable<Overrun>): void => {
      overran ??= why;
      stop();
    };
    const { maxRuntimeMs, maxMemoryBytes } = this.ctx;
    const timer = maxRuntimeMs === null ? undefined : setTimeout(() => overrun('runtime'), maxRuntimeMs);
    const watch = maxMemoryBytes === null || engine.pid === undefined ? undefined : setInterval(() => {
      void groupHeldBytes(engine.pid!).then((bytes) => {
        if (bytes > maxMemoryBytes) overrun('memory');
      });
    }, MEMORY_CHECK_MS);
    try {
      return { exit: await engine.exited, overran };
    } finally {
      clearTimeout(timer);
      clearInterval(watch);
      signal.removeEventListener('abort', stop);
      store.updateTask(task.uuid, { enginePid: null });
    }
  }

  /** task_output.txt (the console, as ODM leaves it among its outputs), then all.zip. */
  private async packageOutputs(task: TaskRecord, signal: AbortSignal): Promise<void> {
    const { layout } = this.ctx;
    const log = this.ctx.consoleOf(task.uuid);
    const dir = layout.taskDir(task.uuid);
    const lines = log.read();
    const tmp = partialName(dir);
    try {
      await writeFile(tmp, lines.length > 0 ? lines.join('\n') + '\n' : '');
      await rename(tmp, path.join(dir, 'task_output.txt'));
    } finally {
      await rm(tmp, { force: true });
    }
    log.append('[INFO] Compressing all.zip');
    const files = await buildArchive(dir, task.outputs ?? DEFAULT_OUTPUTS, layout.archive(task.uuid), signal);
    log.append(`[INFO] all.zip holds ${files} files`);
  }

  private end(uuid: string, status: EndStatus, error: string | null, logError = true): void {
    const changes = status === TaskStatus.COMPLETED ? { progress: 100 } : {};
    const task = this.ctx.store.updateTask(uuid, { ...changes, status, errorMessage: error, finishedAt: Date.now() });
    if (error && logError) this.ctx.consoleOf(uuid).append(`[ERROR] ${error}`);
    if (task) this.ctx.onEnded(task);
  }
}
