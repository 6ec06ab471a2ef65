// Tasks: their rows, what the API shows of them, and the removal of projects with their tasks. The leases through
// which instances drive them are in task-leases.ts.
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { compiledQuery } from './compiled.ts';
import { makeDue } from './task-leases.ts';
import { PendingAction } from '../protocol/status.ts';
import { type Viewer, visibleProjects } from './projects.ts';
import { type Database, type Flag, type Project, type Task, type TaskUpdate, defined, now } from './schema.ts';


export function tasksOf(db: Kysely<Database>, projectId: number) {
  return db.selectFrom('tasks').selectAll('tasks').where('tasks.project_id', '=', projectId);
}

export function findProjectTask(db: Kysely<Database>, projectId: number, id: number): Promise<Task | undefined> {
  return tasksOf(db, projectId).where('tasks.id', '=', id).executeTakeFirst();
}

/** A task with its project, unless the project is being deleted (then nobody sees either). */
export async function findTaskAndProject(
  db: Kysely<Database>,
  projectId: number,
  id: number,
): Promise<{ task: Task; project: Project } | undefined> {
  const project = await db.selectFrom('projects').selectAll().where('id', '=', projectId).where('deleting', '=', 0).executeTakeFirst();
  const task = project && (await findProjectTask(db, projectId, id));
  return task && { task, project };
}

/** A task that is open to anyone (public, or of a public project), by id alone: the public pages' lookup. */
export function findOpenTask(db: Kysely<Database>, id: number): Promise<Task | undefined> {
  return db
    .selectFrom('tasks')
    .innerJoin('projects', 'projects.id', 'tasks.project_id')
    .selectAll('tasks')
    .where('tasks.id', '=', id)
    .where('projects.deleting', '=', 0)
    .where((eb) => eb.or([eb('tasks.public', '=', 1), eb('projects.public', '=', 1)]))
    .executeTakeFirst();
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
    public?: Flag;
    public_edit?: Flag;
    tags?: string;
    resize_to?: number;
    crop?: string | null;
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
  'public',
  'public_edit',
  'potree_scene',
  'tags',
  'resize_to',
  'epsg',
  'wkt',
  'crop',
  'compacted',
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

/**
 * A task as the API shows it when the viewer (null: someone signed out) may read it: the viewer sees its project,
 * or the task or its project is public. One query, as the task is polled.
 */
export function readableShownTask(db: Kysely<Database>, viewer: Viewer | null, projectId: number, id: number): Promise<ShownTask | undefined> {
  return tasksWithNode(db)
    .innerJoin('projects', 'projects.id', 'tasks.project_id')
    .where('tasks.id', '=', id)
    .where('tasks.project_id', '=', projectId)
    .where('projects.deleting', '=', 0)
    .where((eb) => {
      const open = [eb('tasks.public', '=', 1), eb('projects.public', '=', 1)];
      if (!viewer) return eb.or(open);
      const visible = visibleProjects(db, viewer).clearSelect().select('projects.id').where('projects.id', '=', projectId);
      return eb.or([...open, eb('tasks.project_id', 'in', visible)]);
    })
    .executeTakeFirst();
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
      // A node's options (the engine's whole option list) are read for the first of its tasks only (read on every
      // row, they would make a task list many times slower); visibleTasksOf gives them to the others.
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

/**
 * Asks again for the removal of every task of a project marked for deletion that is not pending removal (a
 * removal that was lost, or a task that arrived late), and answers the projects marked for deletion that have no
 * task left, whose folder and row are still to go.
 */
export async function sweepDeletingProjects(db: Kysely<Database>): Promise<number[]> {
  const deleting = db.selectFrom('projects').select('projects.id').where('projects.deleting', '=', 1);
  await db
    .updateTable('tasks')
    .set((eb) => ({
      pending_action: PendingAction.REMOVE,
      partial: 0,
      lease_until: eb.case().when('lease_owner', 'is', null).then(sql<null>`null`).else(eb.ref('lease_until')).end(),
    }))
    .where('project_id', 'in', deleting)
    .where((eb) => eb.or([eb('pending_action', 'is', null), eb('pending_action', '!=', PendingAction.REMOVE)]))
    .execute();
  const empty = await deleting
    .where((eb) => eb.not(eb.exists(eb.selectFrom('tasks').select('tasks.id').whereRef('tasks.project_id', '=', 'projects.id'))))
    .execute();
  return empty.map((project) => project.id);
}

/** Bumps a node's queue count when a task is assigned to it, so the next choice sees it before the refresh. */
export async function bumpQueueCount(db: Kysely<Database>, nodeId: number): Promise<void> {
  await db
    .updateTable('processing_nodes')
    .set((eb) => ({ queue_count: eb('queue_count', '+', 1) }))
    .where('id', '=', nodeId)
    .execute();
}

/**
 * A new row that copies a task into a project: its fields and results, not its place on a node (the copy has
 * no node uuid, so that processing it again starts anew from its own files) nor its lease.
 */
export async function insertTaskCopy(db: Kysely<Database>, task: Task, into: { project_id: number; name: string }): Promise<number> {
  const { id: _id, ...fields } = task;
  const row = await db
    .insertInto('tasks')
    .values({
      ...fields,
      ...into,
      uuid: '',
      created_at: now(),
      lease_owner: null,
      lease_until: null,
      console_lines: 0,
      unreachable_since: null,
      attempts: 0,
      download_pending: 0,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
