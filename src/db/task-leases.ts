// The leases through which service instances share the work of driving tasks. A lease is taken with one
// conditional UPDATE, so on one database only one instance can hold a task at a time; its times are the
// database's, and a step writes only while it holds its lease (updateLeasedTask).
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { databaseTime, isPostgres } from './clock.ts';
import { PendingAction, TaskStatus } from '../protocol/status.ts';
import { type Database, type Task, type TaskUpdate, defined } from './schema.ts';

/** Makes a task not held by anyone due now. */
export async function makeDue(db: Kysely<Database>, id: number): Promise<void> {
  await db.updateTable('tasks').set({ lease_until: null }).where('id', '=', id).where('lease_owner', 'is', null).execute();
}

/** The scheduler's two pools: long transfers, and the short steps that must never wait behind them. */
export type TaskPool = 'transfer' | 'short';

/**
 * Whether a task's next step is a long transfer: an import by URL, the upload of its files to its node (it has a
 * node and the node has not taken it yet), or the download of its results.
 */
function isTransfer(eb: ExpressionBuilder<Database, 'tasks'>) {
  // Never NULL (which NOT would keep NULL), so that the short pool is exactly the rest.
  return eb.or([
    eb.and([eb('pending_action', 'is not', null), eb('pending_action', '=', PendingAction.IMPORT)]),
    eb.and([
      eb('pending_action', 'is', null),
      eb.or([
        eb.and([eb('status', 'is', null), eb('processing_node_id', 'is not', null)]),
        eb('download_pending', '=', 1),
      ]),
    ]),
  ]);
}

/**
 * Takes the leases of up to `limit` due tasks of a pool, the longest waiting first, and answers them. One
 * statement: on PostgreSQL the rows it picks are locked and skipped by other instances (SKIP LOCKED), so
 * instances claiming at once take different tasks; SQLite has a single writer.
 */
export async function claimDueTasks(
  db: Kysely<Database>,
  owner: string,
  leaseMs: number,
  limit: number,
  pool: TaskPool,
): Promise<Task[]> {
  const due = db
    .selectFrom('tasks')
    .select('id')
    .where('partial', '=', 0)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', databaseTime(db))]))
    .where((eb) =>
      eb.or([
        eb('pending_action', 'is not', null),
        eb('status', 'is', null),
        eb('status', 'in', [TaskStatus.QUEUED, TaskStatus.RUNNING]),
      ]),
    )
    .where((eb) => (pool === 'transfer' ? isTransfer(eb) : eb.not(isTransfer(eb))))
    .orderBy('lease_until')
    .orderBy('id')
    .limit(limit)
    .$if(isPostgres(db), (query) => query.forUpdate().skipLocked());
  return db
    .updateTable('tasks')
    .set({ lease_owner: owner, lease_until: databaseTime(db, leaseMs) })
    .where('id', 'in', due)
    .returningAll()
    .execute();
}

/** A step's task, as it was when the step wrote last: the step may write while its pending action is this one. */
export type StepTask = Pick<Task, 'id' | 'pending_action'>;

/** The step still holds the lease (its own, not run out) and the user asked for nothing new since it began. */
function stillTheStep(db: Kysely<Database>, task: StepTask, owner: string) {
  return (eb: ExpressionBuilder<Database, 'tasks'>) =>
    eb.and([
      eb('id', '=', task.id),
      eb('lease_owner', '=', owner),
      eb('lease_until', '>', databaseTime(db)),
      task.pending_action === null ? eb('pending_action', 'is', null) : eb('pending_action', '=', task.pending_action),
    ]);
}

/**
 * A step's write: made only while the step holds the task's lease and the task's pending action is the one the
 * step works on, so that a user's cancel or remove, or another instance that took the task over, is never
 * overwritten. Answers whether it was made.
 */
export async function updateLeasedTask(db: Kysely<Database>, task: StepTask, owner: string, changes: TaskUpdate): Promise<boolean> {
  const result = await db.updateTable('tasks').set(defined(changes)).where(stillTheStep(db, task, owner)).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes a task on the same condition as updateLeasedTask; answers whether it did. */
export async function deleteLeasedTask(db: Kysely<Database>, task: StepTask, owner: string): Promise<boolean> {
  const result = await db.deleteFrom('tasks').where(stillTheStep(db, task, owner)).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/**
 * Extends a lease that its owner still holds and that has not run out; answers the task's pending action, or
 * undefined when the lease is lost (another instance may take the task, or already has).
 */
export async function renewLease(
  db: Kysely<Database>,
  id: number,
  owner: string,
  leaseMs: number,
): Promise<{ pendingAction: number | null } | undefined> {
  const row = await db
    .updateTable('tasks')
    .set({ lease_until: databaseTime(db, leaseMs) })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('lease_until', '>', databaseTime(db))
    .returning('pending_action')
    .executeTakeFirst();
  return row && { pendingAction: row.pending_action };
}

/** Gives a lease back; the task is next due after `delayMs`, or now when an action arrived meanwhile. */
export async function releaseTask(db: Kysely<Database>, id: number, owner: string, delayMs: number): Promise<void> {
  await db
    .updateTable('tasks')
    .set((eb) => ({
      lease_owner: null,
      lease_until:
        delayMs <= 0
          ? null
          : eb.case().when('pending_action', 'is not', null).then(sql<null>`null`).else(databaseTime(db, delayMs)).end(),
    }))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}
