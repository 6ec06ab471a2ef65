// The queue: starts queued tasks in the order they were queued, never more than `parallel` at once, and never a
// task whose previous run is still ending.
import type { TaskStore } from './store.ts';

export type StopReason = 'cancel' | 'remove' | 'shutdown';

/** Runs one task to its end; when `signal` aborts it stops early and leaves the task's state to the caller. */
export type Processor = (uuid: string, signal: AbortSignal) => Promise<void>;

interface ActiveRun {
  controller: AbortController;
  done: Promise<void>;
}

export class TaskQueue {
  private readonly active = new Map<string, ActiveRun>();
  private closed = false;

  constructor(
    private readonly store: TaskStore,
    private readonly parallel: number,
    private readonly process: Processor,
  ) {}

  /** Starts queued tasks while slots are free; called whenever a task is queued or a run ends. */
  pump(): void {
    if (this.closed) return;
    for (const task of this.store.queuedTasks()) {
      if (this.active.size >= this.parallel) return;
      if (!this.active.has(task.uuid)) this.start(task.uuid);
    }
  }

  private start(uuid: string): void {
    const controller = new AbortController();
    const done = this.process(uuid, controller.signal).finally(() => {
      this.active.delete(uuid);
      this.pump();
    });
    this.active.set(uuid, { controller, done });
  }

  /** Stops the task's run, if it has one, and waits until it has ended. */
  async stop(uuid: string, reason: StopReason): Promise<void> {
    const run = this.active.get(uuid);
    if (!run) return;
    run.controller.abort(reason);
    await run.done;
  }

  /** Stops every run; the tasks stay RUNNING in the store, so that the next start of the node resumes them. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.active.keys()].map((uuid) => this.stop(uuid, 'shutdown')));
  }
}
