// What every step of a task's life works with: the database, the task's folder, the settings, and the few
// writes that several steps share (saving under the lease, failing a task).
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { ZipLimits } from '../../files/zip-extract.ts';
import type { Database, ProcessingNode, Task, TaskUpdate } from '../../db/schema.ts';
import { NodeClient } from '../../nodeclient/index.ts';
import { updateLeasedTask } from '../../db/task-leases.ts';
import { TaskStatus } from '../../protocol/status.ts';
import { appendConsole } from './console.ts';
import { type TaskFolder, taskFolder } from '../layout.ts';
import { type StepLease, StepSuperseded } from './scheduler.ts';

export interface ProcessingSettings {
  dataDir: string;
  /** Between two looks at a task that a node is processing. */
  pollMs: number;
  /** Between two looks for a node, or at a node that does not answer. */
  retryMs: number;
  /** A node that has not answered for this long is taken as gone. */
  nodeOfflineAfterMs: number;
  /** Limit of the quick calls to a node. */
  nodeTimeoutMs: number;
  /** What an all.zip (from a node, or imported) may unpack to. */
  zipLimits: ZipLimits;
  /** Imports by URL: the most bytes fetched, and how long the server may take to start answering. */
  importMaxBytes: number;
  importTimeoutMs: number;
  /** Whether those URLs may reach loopback and private networks. */
  allowPrivateUrls: boolean;
  /** Disk space kept free (MIN_FREE_DISK_GB): downloads stop short of it. */
  minFreeBytes: number;
  /** The engine whose `tiles` command builds the tile pyramids that imported results lack. */
  enginePath: string;
  /** Steps that fail in a row before the task is failed, and the pause after the first (doubled each time). */
  maxAttempts: number;
  retryBackoffMs: number;
}

export interface StepContext {
  db: Kysely<Database>;
  log: FastifyBaseLogger;
  settings: ProcessingSettings;
  task: Task;
  folder: TaskFolder;
  lease: StepLease;
  signal: AbortSignal;
}

export const nodeName = (node: Pick<ProcessingNode, 'hostname' | 'port'>) => `${node.hostname}:${node.port}`;

export function clientOf(ctx: StepContext, node: ProcessingNode): NodeClient {
  return new NodeClient(node, { quickTimeoutMs: ctx.settings.nodeTimeoutMs });
}

export function stepContext(
  db: Kysely<Database>,
  log: FastifyBaseLogger,
  settings: ProcessingSettings,
  task: Task,
  lease: StepLease,
): StepContext {
  return { db, log, settings, task, lease, signal: lease.signal, folder: taskFolder(settings.dataDir, task.project_id, task.id) };
}

/** The step's write; one that finds the lease gone or another action asked for stops the step instead. */
export async function save(ctx: StepContext, changes: TaskUpdate): Promise<void> {
  if (!(await updateLeasedTask(ctx.db, ctx.task, ctx.lease.owner, changes))) superseded(ctx);
  Object.assign(ctx.task, changes);
}

export function superseded(ctx: StepContext): never {
  const error = new StepSuperseded('the task was taken over, or the user asked for another action');
  ctx.lease.abort(error);
  throw error;
}

/**
 * Ends the task as FAILED with a reason the user can act on; the reason also ends the console. The pending
 * action it clears is the one the step handles: save writes nothing if another was asked for meanwhile.
 */
export async function fail(ctx: StepContext, reason: string): Promise<null> {
  await appendConsole(ctx.folder.console, [`[ERROR] ${reason}`]);
  await save(ctx, { ...settled, status: TaskStatus.FAILED, last_error: reason, pending_action: null, unreachable_since: null });
  ctx.log.warn({ task: ctx.task.id }, `task failed: ${reason}`);
  return null;
}

/** What a task that has reached an end no longer waits for. */
export const settled = { attempts: 0, download_pending: 0 } as const;

/** Writes at most once a second, for progress figures that change continuously. */
export function throttled(write: (value: number) => Promise<void>, everyMs = 1000): (value: number) => void {
  let last = 0;
  return (value) => {
    const at = Date.now();
    if (at - last < everyMs && value < 1) return;
    last = at;
    write(value).catch(() => undefined);
  };
}
