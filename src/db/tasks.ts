// Tasks: their rows, and the leases through which service instances share the work of driving them. A lease
// is taken with one conditional UPDATE, so on one database only one instance can hold a task at a time.
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { compiledQuery } from './compiled.ts';
import { type Viewer, visibleProjects } from './projects.ts';
import { type Database, type Task, type TaskUpdate, defined, now } from './schema.ts';

export const TaskStatus = { QUEUED: 10, RUNNING: 20, FAILED: 30, COMPLETED: 40, CANCELED: 50 } as const;
export const PendingAction = { CANCEL: 1, REMOVE: 2, RESTART: 3, IMPORT: 5 } as const;

export function tasksOf(db: Kysely<Database>, projectId: number) {
  return db.selectFrom('tasks').selectAll('tasks').where('tasks.project_id', '=', projectId);
}

export function findTask(db: Kysely<Database>, id: number): Promise<Task | undefined> {
  return db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findProjectTask(db: Kysely<Database>, projectId: number, id: number): Promise<Task | undefined> {
  return tasksOf(db, projectId).where('tasks.id', '=', id).executeTakeFirst();
}

export async function insertTask(
  db: Kysely<Database>,
  task: {
    project_id: number;
    name: string;
    processing_node_id: number | null;
    auto_processing_node: 0 | 1;
    options: string;
    partial: 0 | 1;
    status?: number | null;
    pending_action?: number | null;
    import_url?: string | null;
  },
): Promise<number> {
  const row = await db
    .insertInto('tasks')
    .values({ status: null, pending_action: null, lease_owner: null, lease_until: null, ...task, created_at: now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function updateTask(db: Kysely<Database>, id: number, changes: TaskUpdate): Promise<void> {
  const set = defined(changes);
  if (Object.keys(set).length) await db.updateTable('tasks').set(set).where('id', '=', id).execute();
}

export async function deleteTask(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('tasks').where('id', '=', id).execute();
}

/**
 * Sets a pending action and makes the task due at once, unless an instance holds it: that instance sees the
 * action at its next heartbeat.
 */
export async function requestAction(db: Kysely<Database>, id: number, action: number, changes: TaskUpdate = {}): Promise<void> {
  await db
    .updateTable('tasks')
    .set({ ...defined(changes), pending_action: action })
    .where('id', '=', id)
    .execute();
  await makeDue(db, id);
}

/** Makes a task not held by anyone due now. */
export async function makeDue(db: Kysely<Database>, id: number): Promise<void> {
  await db.updateTable('tasks').set({ lease_until: null }).where('id', '=', id).where('lease_owner', 'is', null).execute();
}

/** Ids of tasks with work to do whose lease has ended or who are due, the longest waiting first. */
export async function dueTaskIds(db: Kysely<Database>, limit: number, at = now()): Promise<number[]> {
  const rows = await db
    .selectFrom('tasks')
    .select('id')
    .where('partial', '=', 0)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', at)]))
    .where((eb) =>
      eb.or([
        eb('pending_action', 'is not', null),
        eb('status', 'is', null),
        eb('status', 'in', [TaskStatus.QUEUED, TaskStatus.RUNNING]),
      ]),
    )
    .orderBy('lease_until')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}

/** Takes the lease of a due task; answers the task, or undefined when another instance was first. */
export async function claimTask(db: Kysely<Database>, id: number, owner: string, leaseMs: number): Promise<Task | undefined> {
  const at = new Date();
  const result = await db
    .updateTable('tasks')
    .set({ lease_owner: owner, lease_until: new Date(at.getTime() + leaseMs).toISOString() })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', at.toISOString())]))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return undefined;
  return findTask(db, id);
}

/**
 * Extends a lease the owner still holds; answers the task's pending action and whether the lease was still
 * held (it is lost when it ran out and another instance took the task).
 */
export async function renewLease(
  db: Kysely<Database>,
  id: number,
  owner: string,
  leaseMs: number,
): Promise<{ held: boolean; pendingAction: number | null }> {
  const result = await db
    .updateTable('tasks')
    .set({ lease_until: new Date(Date.now() + leaseMs).toISOString() })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  const row = await db.selectFrom('tasks').select('pending_action').where('id', '=', id).executeTakeFirst();
  return { held: Number(result.numUpdatedRows) === 1, pendingAction: row?.pending_action ?? null };
}

/** Gives a lease back; the task is next due after `delayMs`, or now when an action arrived meanwhile. */
export async function releaseTask(db: Kysely<Database>, id: number, owner: string, delayMs: number): Promise<void> {
  const row = await db.selectFrom('tasks').select('pending_action').where('id', '=', id).executeTakeFirst();
  const due = row?.pending_action != null || delayMs <= 0 ? null : new Date(Date.now() + delayMs).toISOString();
  await db
    .updateTable('tasks')
    .set({ lease_owner: null, lease_until: due })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/**
 * The columns of a task that its API replies show (its lease, console count and import source stay out), which a
 * query compiled once reads.
 */
const SHOWN_COLUMNS = [
  'id',
  'project_id',
  'processing_node_id',
  'uuid',
  'name',
  'images_count',
  'available_assets',
  'processing_time',
  'auto_processing_node',
  'status',
  'last_error',
  'options',
  'created_at',
  'pending_action',
  'upload_progress',
  'resize_progress',
  'running_progress',
  'partial',
  'extent',
  'statistics',
  'size',
] as const satisfies readonly (keyof Task)[];
const shownColumns = SHOWN_COLUMNS.map((column) => `tasks.${column}` as const);
const nodeColumns = [
  'processing_nodes.hostname as node_hostname',
  'processing_nodes.port as node_port',
  'processing_nodes.available_options as node_options',
] as const;

/** A task row as its API replies need it: the shown columns, with the name and options of its node. */
export type ShownTask = Pick<Task, (typeof SHOWN_COLUMNS)[number]> & {
  node_hostname: string | null;
  node_port: number | null;
  node_options: string | null;
};

/**
 * Task rows for the API's replies. All columns: built anew for each query, a list of the shown ones costs Kysely
 * more than reading the others costs SQLite.
 */
export function tasksWithNode(db: Kysely<Database>) {
  return db
    .selectFrom('tasks')
    .leftJoin('processing_nodes', 'processing_nodes.id', 'tasks.processing_node_id')
    .selectAll('tasks')
    .select(nodeColumns);
}

const visibleTaskRows = compiledQuery(
  (db, shape: { superuser: boolean; byStatus: boolean }, values: { viewer: number; project: number; status: number }) =>
    visibleProjects(db, { id: values.viewer, superuser: shape.superuser })
      .clearSelect()
      .where('projects.id', '=', values.project)
      .leftJoin('tasks', (join) => {
        const ofProject = join.onRef('tasks.project_id', '=', 'projects.id');
        return shape.byStatus ? ofProject.on('tasks.status', '=', values.status) : ofProject;
      })
      .leftJoin('processing_nodes', 'processing_nodes.id', 'tasks.processing_node_id')
      .select([...shownColumns, 'processing_nodes.hostname as node_hostname', 'processing_nodes.port as node_port'])
      // A node's options (13 kB from the engine) are read for the first of its tasks only (read on every row,
      // they made a list of 20 tasks eight times slower); visibleTasksOf gives them to the others.
      .select(
        sql<string | null>`case when row_number() over (
          partition by ${sql.ref('tasks.processing_node_id')} order by ${sql.ref('tasks.id')}
        ) = 1 then (
          select node.available_options from processing_nodes as node where node.id = ${sql.ref('tasks.processing_node_id')}
        ) end`.as('node_options'),
      )
      .orderBy('tasks.id'),
);

/**
 * A project's tasks (of one status, if given) by id, as the API shows them, when the viewer sees the project:
 * the project's visibility and its tasks in one query, so that PostgreSQL answers a list in one round trip.
 * Undefined when the viewer does not see the project.
 */
export async function visibleTasksOf(
  db: Kysely<Database>,
  viewer: Viewer,
  projectId: number,
  status?: number,
): Promise<ShownTask[] | undefined> {
  const rows = await visibleTaskRows(
    db,
    { superuser: viewer.superuser, byStatus: status !== undefined },
    { viewer: viewer.id, project: projectId, status: status ?? 0 },
  );
  if (rows.length === 0) return undefined;
  // A project without tasks comes as one row of nulls (the left join); the others are whole task rows.
  const tasks = rows.filter((row) => row.id !== null) as ShownTask[];
  // Each node's options, which came with one of its tasks, to all of them.
  const nodeOptions = new Map<number | null, string>();
  for (const task of tasks) if (task.node_options !== null) nodeOptions.set(task.processing_node_id, task.node_options);
  for (const task of tasks) task.node_options = nodeOptions.get(task.processing_node_id) ?? null;
  return tasks;
}

/** A project marked for deletion that has no task left. */
function emptyDeleting(db: Kysely<Database>, projectId: number) {
  return (eb: ExpressionBuilder<Database, 'projects'>) =>
    eb.and([
      eb('id', '=', projectId),
      eb('deleting', '=', 1),
      eb.not(eb.exists(db.selectFrom('tasks').select('id').where('project_id', '=', projectId))),
    ]);
}

/** Whether a project marked for deletion has no task left, so that its folder, then its row, can go. */
export async function projectAwaitsRemoval(db: Kysely<Database>, projectId: number): Promise<boolean> {
  return (await db.selectFrom('projects').select('id').where(emptyDeleting(db, projectId)).executeTakeFirst()) !== undefined;
}

/** Deletes a project marked for deletion once it has no task left; whether it did. */
export async function deleteProjectIfEmpty(db: Kysely<Database>, projectId: number): Promise<boolean> {
  const result = await db.deleteFrom('projects').where(emptyDeleting(db, projectId)).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Marks projects for deletion and asks for the removal of all their tasks. */
export async function markProjectsDeleting(db: Kysely<Database>, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('projects').set({ deleting: 1 }).where('id', 'in', ids).execute();
    await trx
      .updateTable('tasks')
      .set({ pending_action: PendingAction.REMOVE, partial: 0 })
      .where('project_id', 'in', ids)
      .execute();
    await trx.updateTable('tasks').set({ lease_until: null }).where('project_id', 'in', ids).where('lease_owner', 'is', null).execute();
  });
}

/** Bumps a node's queue count when a task is assigned to it, so the next choice sees it before the refresh. */
export async function bumpQueueCount(db: Kysely<Database>, nodeId: number): Promise<void> {
  await db
    .updateTable('processing_nodes')
    .set((eb) => ({ queue_count: eb('queue_count', '+', 1) }))
    .where('id', '=', nodeId)
    .execute();
}
