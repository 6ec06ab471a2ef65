// Drives tasks through processing nodes from the database alone. Every tick it takes the leases of due tasks
// (one statement per pool, so several service instances on one database never work on the same task), advances
// each by one step, and gives the lease back with the time the task is next due. Leases are measured on the
// database's clock. Long transfers and short steps (polls, the user's actions) have pools of their own, so that
// big uploads never hold back a cancel. While a step runs, a heartbeat extends the lease and watches for a
// user's action (cancel, remove); a new action, a lost lease or a renewal that fails aborts the step at once,
// and the step's writes are refused from then on (see updateLeasedTask). A service that dies leaves leases that
// simply run out: another instance, or this one after a restart, takes the task up where the database says it is.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database, Task } from '../../db/schema.ts';
import { type TaskPool, claimDueTasks, releaseTask, renewLease } from '../../db/task-leases.ts';

export interface SchedulerSettings {
  /** How often due tasks are looked for. */
  tickMs: number;
  /** How long a lease lasts without a heartbeat. */
  leaseMs: number;
  /** Steps of each pool that this instance runs at the same time. */
  concurrency: Record<TaskPool, number>;
}

/** What a step knows of its lease: whose it is, the signal that stops the step, and how to stop it itself. */
export interface StepLease {
  owner: string;
  signal: AbortSignal;
  abort(reason: Error): void;
}

/** One step of a task's life; answers the delay before its next step (null: no more steps). */
export type Step = (task: Task, lease: StepLease) => Promise<number | null>;

/** The step lost its lease, or the user asked for another action: it stops, writing nothing more. */
export class StepSuperseded extends Error {}

export class TaskScheduler {
  readonly instanceId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = true;
  private readonly active: Record<TaskPool, Map<number, Promise<void>>> = { transfer: new Map(), short: new Map() };
  private readonly controllers = new Set<AbortController>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: FastifyBaseLogger,
    private readonly settings: SchedulerSettings,
    private readonly step: Step,
    /** Work of every tick besides the steps (finishing what was left behind). */
    private readonly sweep: () => Promise<void>,
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
    await Promise.allSettled(Object.values(this.active).flatMap((steps) => [...steps.values()]));
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
      for (const pool of ['short', 'transfer'] as const) await this.fill(pool);
      await this.sweep();
    } catch (error) {
      this.log.error({ err: error }, 'task scheduler tick failed');
    } finally {
      this.running = false;
      if (!this.stopped) this.schedule(this.settings.tickMs);
    }
  }

  private async fill(pool: TaskPool): Promise<void> {
    const active = this.active[pool];
    const room = this.settings.concurrency[pool] - active.size;
    if (room <= 0) return;
    for (const task of await claimDueTasks(this.db, this.instanceId, this.settings.leaseMs, room, pool)) {
      const work = this.advance(task).finally(() => {
        active.delete(task.id);
        // A freed slot may be waited for.
        this.wake();
      });
      active.set(task.id, work);
    }
  }

  private async advance(task: Task): Promise<void> {
    const controller = new AbortController();
    this.controllers.add(controller);
    const lease: StepLease = { owner: this.instanceId, signal: controller.signal, abort: (reason) => controller.abort(reason) };
    const heartbeat = setInterval(() => void this.beat(task, controller), Math.max(50, this.settings.leaseMs / 3));
    let delay: number | null = this.settings.tickMs;
    try {
      delay = await this.step(task, lease);
    } catch (error) {
      if (!controller.signal.aborted) this.log.error({ err: error, task: task.id }, 'task step failed');
      else this.log.info({ task: task.id }, `task step stopped: ${(controller.signal.reason as Error).message}`);
    } finally {
      clearInterval(heartbeat);
      this.controllers.delete(controller);
    }
    // A task with no more steps is released too, so that a later action of the user finds it free at once.
    await releaseTask(this.db, task.id, this.instanceId, delay ?? 0).catch((error) =>
      this.log.error({ err: error, task: task.id }, 'cannot release task'),
    );
  }

  /** Extends the lease; a lease lost or not renewed, or a new action of the user, aborts the step. */
  private async beat(task: Task, controller: AbortController): Promise<void> {
    try {
      const renewed = await renewLease(this.db, task.id, this.instanceId, this.settings.leaseMs);
      if (!renewed) controller.abort(new StepSuperseded('the lease on the task was lost'));
      else if (renewed.pendingAction !== null && renewed.pendingAction !== task.pending_action) {
        controller.abort(new StepSuperseded('the user asked for another action'));
      }
    } catch (error) {
      // Unsure whether the lease still holds, the step stops rather than risk working beside another instance.
      controller.abort(new StepSuperseded(`the lease on the task could not be renewed: ${(error as Error).message}`));
    }
  }
}
