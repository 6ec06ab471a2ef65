// Drives tasks through processing nodes from the database alone. Every tick it takes the lease of due tasks
// (one conditional UPDATE each, so several service instances on one database never work on the same task),
// advances each by one step, and gives the lease back with the time the task is next due. While a step runs,
// a heartbeat extends the lease and watches for a user's action (cancel, remove), which aborts a long upload
// or download. A service that dies leaves leases that simply run out: another instance, or this one after a
// restart, takes the task up where the database says it is.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database, Task } from '../../db/schema.ts';
import { claimTask, dueTaskIds, releaseTask, renewLease } from '../../db/tasks.ts';

export interface SchedulerSettings {
  /** How often due tasks are looked for. */
  tickMs: number;
  /** How long a lease lasts without a heartbeat. */
  leaseMs: number;
  /** Tasks advanced at the same time by this instance. */
  concurrency: number;
}

/** One step of a task's life; answers the delay before its next step (null: no more steps). */
export type Step = (task: Task, signal: AbortSignal) => Promise<number | null>;

export class TaskScheduler {
  readonly instanceId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = true;
  private readonly active = new Map<number, Promise<void>>();
  private readonly controllers = new Set<AbortController>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: FastifyBaseLogger,
    private readonly settings: SchedulerSettings,
    private readonly step: Step,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops taking tasks and aborts the steps under way; their leases run out for whoever comes next. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const controller of this.controllers) controller.abort(new Error('the service is stopping'));
    await Promise.allSettled([...this.active.values()]);
  }

  /** Looks for due tasks now (after an API action), rather than at the next tick. */
  wake(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    this.running = true;
    try {
      const room = this.settings.concurrency - this.active.size;
      if (room > 0) {
        const ids = (await dueTaskIds(this.db, room * 2)).filter((id) => !this.active.has(id));
        for (const id of ids.slice(0, room)) {
          const task = await claimTask(this.db, id, this.instanceId, this.settings.leaseMs);
          if (task) this.launch(task);
        }
      }
    } catch (error) {
      this.log.error({ err: error }, 'task scheduler tick failed');
    } finally {
      this.running = false;
      if (!this.stopped) this.schedule(this.settings.tickMs);
    }
  }

  private launch(task: Task): void {
    const work = this.advance(task).finally(() => {
      this.active.delete(task.id);
      // A freed slot may be waited for.
      this.wake();
    });
    this.active.set(task.id, work);
  }

  private async advance(task: Task): Promise<void> {
    const controller = new AbortController();
    this.controllers.add(controller);
    const heartbeat = setInterval(() => void this.beat(task, controller), Math.max(50, this.settings.leaseMs / 3));
    let delay: number | null = this.settings.tickMs;
    try {
      delay = await this.step(task, controller.signal);
    } catch (error) {
      if (!controller.signal.aborted) this.log.error({ err: error, task: task.id }, 'task step failed');
    } finally {
      clearInterval(heartbeat);
      this.controllers.delete(controller);
    }
    // A task with no more steps is released too, so that a later action of the user finds it free at once.
    await releaseTask(this.db, task.id, this.instanceId, delay ?? 0).catch((error) =>
      this.log.error({ err: error, task: task.id }, 'cannot release task'),
    );
  }

  /** Extends the lease; a lost lease or a new action of the user aborts the step. */
  private async beat(task: Task, controller: AbortController): Promise<void> {
    try {
      const { held, pendingAction } = await renewLease(this.db, task.id, this.instanceId, this.settings.leaseMs);
      if (!held) controller.abort(new Error('the lease on the task was lost'));
      else if (pendingAction !== null && pendingAction !== task.pending_action) {
        controller.abort(new Error('the user asked for another action'));
      }
    } catch (error) {
      this.log.warn({ err: error, task: task.id }, 'cannot renew task lease');
    }
  }
}
