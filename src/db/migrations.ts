// Schema migrations, one list for SQLite and PostgreSQL, applied on every start. A migration, once
// released, never changes: later needs get a new entry. Data a migration inserts is written out here
// (not imported) so that it stays what it was when the migration first ran.
import { type ColumnDefinitionBuilder, type Kysely, type Migration, Migrator, PostgresAdapter, sql } from 'kysely';
import type { Database } from './schema.ts';

type Columns = (col: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;

function dialectHelpers(db: Kysely<any>) {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const id: Columns = (col) =>
    postgres ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement();
  return { id };
}

const timestampNow = () => new Date().toISOString();

const MODELS = ['project', 'task', 'preset', 'processingnode', 'user', 'group'];
const ACTIONS = ['add', 'change', 'delete', 'view'];

// The first release's system presets, as its first start wrote them: 0006 recognises them by these values.
const STARTER_PRESETS: { name: string; options: { name: string; value: boolean | number | string }[] }[] = [
  { name: 'Default', options: [{ name: 'dsm', value: true }] },
  { name: 'Fast Orthophoto', options: [{ name: 'fast-orthophoto', value: true }] },
  {
    name: 'DSM + DTM',
    options: [
      { name: 'dsm', value: true },
      { name: 'dtm', value: true },
      { name: 'smrf-threshold', value: 0.4 },
      { name: 'smrf-window', value: 24 },
    ],
  },
  {
    name: 'High Resolution',
    options: [
      { name: 'pc-quality', value: 'high' },
      { name: 'feature-quality', value: 'high' },
      { name: 'dsm', value: true },
      { name: 'dem-resolution', value: 2 },
      { name: 'orthophoto-resolution', value: 2 },
    ],
  },
  {
    name: '3D Model',
    options: [
      { name: 'pc-quality', value: 'high' },
      { name: 'feature-quality', value: 'high' },
      { name: 'pc-las', value: true },
      { name: 'crop', value: 0 },
    ],
  },
  {
    name: 'Forest',
    options: [
      { name: 'min-num-features', value: 18000 },
      { name: 'feature-quality', value: 'high' },
      { name: 'pc-filter', value: 5 },
      { name: 'dsm', value: true },
    ],
  },
  {
    name: 'Buildings',
    options: [
      { name: 'pc-quality', value: 'high' },
      { name: 'dsm', value: true },
      { name: 'dtm', value: true },
      { name: 'orthophoto-resolution', value: 3 },
    ],
  },
];

// The system presets WebODM creates at its first start, with its values (numbers as the strings it sends), so that
// WebODM's users find the presets they know and scripts that choose a preset by name keep working. Names the
// engine does not know are ignored by the node, as NodeODM ignores them.
export const WEBODM_PRESETS: typeof STARTER_PRESETS = [
  { name: 'Default', options: [{ name: 'auto-boundary', value: true }, { name: 'dsm', value: true }] },
  { name: 'Fast Orthophoto', options: [{ name: 'auto-boundary', value: true }, { name: 'fast-orthophoto', value: true }] },
  {
    name: 'Field',
    options: [
      { name: 'sfm-algorithm', value: 'planar' },
      { name: 'fast-orthophoto', value: true },
      { name: 'matcher-neighbors', value: 4 },
    ],
  },
  {
    name: 'DSM + DTM',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'dsm', value: true },
      { name: 'dtm', value: true },
    ],
  },
  {
    name: 'High Resolution',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'dsm', value: true },
      { name: 'dem-resolution', value: '1.0' },
      { name: 'orthophoto-resolution', value: '1.0' },
    ],
  },
  {
    name: 'Volume Analysis',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'dsm', value: true },
      { name: 'dem-resolution', value: '2' },
      { name: 'pc-quality', value: 'high' },
    ],
  },
  {
    name: '3D Model',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'mesh-octree-depth', value: '12' },
      { name: 'use-3dmesh', value: true },
      { name: 'pc-quality', value: 'high' },
      { name: 'mesh-size', value: '300000' },
    ],
  },
  {
    name: 'Buildings',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'mesh-size', value: '300000' },
      { name: 'feature-quality', value: 'high' },
      { name: 'pc-quality', value: 'high' },
    ],
  },
  {
    name: 'Forest',
    options: [
      { name: 'auto-boundary', value: true },
      { name: 'min-num-features', value: '18000' },
      { name: 'use-3dmesh', value: true },
      { name: 'feature-quality', value: 'medium' },
    ],
  },
  { name: 'Multispectral', options: [{ name: 'auto-boundary', value: true }, { name: 'radiometric-calibration', value: 'camera' }] },
];

async function initial(db: Kysely<any>): Promise<void> {
  const { id } = dialectHelpers(db);
  const text = 'text';

  await db.schema
    .createTable('users')
    .addColumn('id', 'integer', id)
    .addColumn('username', 'varchar(150)', (c) => c.notNull().unique())
    .addColumn('password', 'varchar(255)', (c) => c.notNull())
    .addColumn('email', 'varchar(254)', (c) => c.notNull().defaultTo(''))
    .addColumn('first_name', 'varchar(150)', (c) => c.notNull().defaultTo(''))
    .addColumn('last_name', 'varchar(150)', (c) => c.notNull().defaultTo(''))
    .addColumn('is_superuser', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_staff', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('last_login', text)
    .addColumn('date_joined', text, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('groups')
    .addColumn('id', 'integer', id)
    .addColumn('name', 'varchar(150)', (c) => c.notNull().unique())
    .execute();

  await db.schema
    .createTable('user_groups')
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('group_id', 'integer', (c) => c.notNull().references('groups.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('user_groups_pk', ['user_id', 'group_id'])
    .execute();
  await db.schema.createIndex('user_groups_group').on('user_groups').column('group_id').execute();

  await db.schema
    .createTable('permissions')
    .addColumn('id', 'integer', id)
    .addColumn('codename', 'varchar(100)', (c) => c.notNull().unique())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .execute();

  for (const [owner, table] of [
    ['user', 'user_permissions'],
    ['group', 'group_permissions'],
  ]) {
    await db.schema
      .createTable(table)
      .addColumn(`${owner}_id`, 'integer', (c) => c.notNull().references(`${owner}s.id`).onDelete('cascade'))
      .addColumn('permission_id', 'integer', (c) => c.notNull().references('permissions.id').onDelete('cascade'))
      .addPrimaryKeyConstraint(`${table}_pk`, [`${owner}_id`, 'permission_id'])
      .execute();
  }

  await db.schema
    .createTable('projects')
    .addColumn('id', 'integer', id)
    .addColumn('owner_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', text, (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', text, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('projects_owner').on('projects').column('owner_id').execute();
  await db.schema.createIndex('projects_created_at').on('projects').column('created_at').execute();

  for (const [owner, table] of [
    ['user', 'project_user_permissions'],
    ['group', 'project_group_permissions'],
  ]) {
    await db.schema
      .createTable(table)
      .addColumn('project_id', 'integer', (c) => c.notNull().references('projects.id').onDelete('cascade'))
      .addColumn(`${owner}_id`, 'integer', (c) => c.notNull().references(`${owner}s.id`).onDelete('cascade'))
      .addColumn('permission', 'varchar(16)', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ['project_id', `${owner}_id`, 'permission'])
      .execute();
    await db.schema.createIndex(`${table}_${owner}`).on(table).columns([`${owner}_id`, 'permission']).execute();
  }

  await db.schema
    .createTable('processing_nodes')
    .addColumn('id', 'integer', id)
    .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('token', 'varchar(1024)', (c) => c.notNull().defaultTo(''))
    .addColumn('api_version', 'varchar(32)', (c) => c.notNull().defaultTo(''))
    .addColumn('engine', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('engine_version', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('queue_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_images', 'integer')
    .addColumn('available_options', text, (c) => c.notNull().defaultTo('[]'))
    .addColumn('last_refreshed', text)
    .addColumn('created_at', text, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tasks')
    .addColumn('id', 'integer', id)
    .addColumn('project_id', 'integer', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('processing_node_id', 'integer', (c) => c.references('processing_nodes.id').onDelete('set null'))
    .addColumn('uuid', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('name', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('images_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('available_assets', text, (c) => c.notNull().defaultTo('[]'))
    .addColumn('processing_time', 'bigint', (c) => c.notNull().defaultTo(-1))
    .addColumn('auto_processing_node', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('status', 'integer')
    .addColumn('last_error', text)
    .addColumn('options', text, (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', text, (c) => c.notNull())
    .addColumn('pending_action', 'integer')
    .addColumn('upload_progress', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('resize_progress', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('running_progress', 'double precision', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('tasks_project').on('tasks').column('project_id').execute();
  await db.schema.createIndex('tasks_processing_node').on('tasks').column('processing_node_id').execute();

  await db.schema
    .createTable('presets')
    .addColumn('id', 'integer', id)
    .addColumn('owner_id', 'integer', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('options', text, (c) => c.notNull().defaultTo('[]'))
    .addColumn('system', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', text, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('presets_owner').on('presets').column('owner_id').execute();

  await db
    .insertInto('permissions')
    .values(
      MODELS.flatMap((model) =>
        ACTIONS.map((action) => ({ codename: `${action}_${model}`, name: `Can ${action} ${model}` })),
      ),
    )
    .execute();

  const created = timestampNow();
  await db
    .insertInto('presets')
    .values(
      STARTER_PRESETS.map((preset) => ({
        owner_id: null,
        name: preset.name,
        options: JSON.stringify(preset.options),
        system: 1,
        created_at: created,
      })),
    )
    .execute();
}

/** What the scheduler needs to drive tasks through processing nodes, and what the task API reports. */
async function taskProcessing(db: Kysely<any>): Promise<void> {
  const columns: [string, string, Columns][] = [
    // A task created with partial=true waits for its files (upload/, then commit/) before it is processed.
    ['partial', 'integer', (c) => c.notNull().defaultTo(0)],
    // The service instance working on the task, and until when: nobody else touches it before then. Without an
    // owner, the time is when the task is next due (the scheduler's "not before").
    ['lease_owner', 'varchar(64)', (c) => c],
    ['lease_until', 'text', (c) => c],
    // Console lines received from the node, the offset of the next with_output request.
    ['console_lines', 'integer', (c) => c.notNull().defaultTo(0)],
    // Since when the assigned node has not answered; null while it does.
    ['unreachable_since', 'text', (c) => c],
    ['import_url', 'text', (c) => c],
    ['extent', 'text', (c) => c],
    ['statistics', 'text', (c) => c.notNull().defaultTo('{}')],
    ['size', 'bigint', (c) => c.notNull().defaultTo(0)],
  ];
  for (const [name, type, build] of columns) {
    await db.schema.alterTable('tasks').addColumn(name, type as 'text', build).execute();
  }
  await db.schema.createIndex('tasks_due').on('tasks').columns(['partial', 'lease_until']).execute();
  // A project with tasks is deleted in two steps: hidden at once, removed once the scheduler has removed its tasks.
  await db.schema
    .alterTable('projects')
    .addColumn('deleting', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

/** Leases for the work that one service instance at a time does among several on one database. */
async function leases(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('leases')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('owner', 'varchar(64)')
    .addColumn('until', 'text')
    .execute();
}

/**
 * Bounded retries of a failing step, and the mark of a task whose results wait on its node, which sends the step
 * that fetches them to the pool of long transfers.
 */
async function taskAttempts(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('tasks').addColumn('download_pending', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

/** Each user's storage quota in MB, as WebODM's profiles hold it; -1 (or 0) means none. */
async function userQuotas(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('quota', 'bigint', (c) => c.notNull().defaultTo(-1))
    .execute();
}

/**
 * WebODM's presets in place of the first release's: a starter preset goes only where nobody changed it, and a
 * WebODM preset comes only where no system preset has its name yet.
 */
async function webodmPresets(db: Kysely<any>): Promise<void> {
  const system = await db.selectFrom('presets').select(['id', 'name', 'options']).where('system', '=', 1).where('owner_id', 'is', null).execute();
  const original = new Map(STARTER_PRESETS.map((preset) => [preset.name, JSON.stringify(preset.options)]));
  const unchanged = system.filter((row) => original.get(row.name) === row.options).map((row) => row.id as number);
  if (unchanged.length > 0) await db.deleteFrom('presets').where('id', 'in', unchanged).execute();
  const kept = new Set(system.filter((row) => !unchanged.includes(row.id)).map((row) => row.name as string));
  const added = WEBODM_PRESETS.filter((preset) => !kept.has(preset.name));
  if (added.length === 0) return;
  const created = timestampNow();
  await db
    .insertInto('presets')
    .values(added.map((preset) => ({ owner_id: null, name: preset.name, options: JSON.stringify(preset.options), system: 1, created_at: created })))
    .execute();
}

/**
 * Public access as WebODM has it: a public task (or any task of a public project) is read by anyone with its
 * link, and public_edit lets them save its 3D scene too. The Potree scene each task keeps (JSON, WebODM's field).
 */
async function publicAccess(db: Kysely<any>): Promise<void> {
  for (const table of ['tasks', 'projects']) {
    await db.schema.alterTable(table).addColumn('public', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable(table).addColumn('public_edit', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  await db.schema.alterTable('tasks').addColumn('potree_scene', 'text', (c) => c.notNull().defaultTo('{}')).execute();
}

/**
 * WebODM's task fields tags, resize_to, epsg, wkt, crop and compacted, and project tags. Tags are stored as WebODM
 * stores them: one text of space-separated tags.
 */
async function webodmTaskFields(db: Kysely<any>): Promise<void> {
  const columns: [string, string, Columns][] = [
    ['tags', 'text', (c) => c.notNull().defaultTo('')],
    // The longest side of the photographs in pixels once resized before processing; -1: not resized.
    ['resize_to', 'integer', (c) => c.notNull().defaultTo(-1)],
    // The CRS of the results (orthophoto, else DSM, else DTM): its EPSG code, or its WKT when it has no code.
    ['epsg', 'integer', (c) => c],
    ['wkt', 'text', (c) => c],
    // A GeoJSON polygon (WGS84) that the results are shown cropped to; null: none.
    ['crop', 'text', (c) => c],
    // The photographs were removed to save space (compact/): the results stay, processing from the start cannot.
    ['compacted', 'integer', (c) => c.notNull().defaultTo(0)],
  ];
  for (const [name, type, build] of columns) {
    await db.schema.alterTable('tasks').addColumn(name, type as 'text', build).execute();
  }
  await db.schema.alterTable('projects').addColumn('tags', 'text', (c) => c.notNull().defaultTo('')).execute();
}

export const MIGRATIONS: Record<string, Migration> = {
  '0001_initial': { up: initial },
  '0002_task_processing': { up: taskProcessing },
  '0003_leases': { up: leases },
  '0004_task_attempts': { up: taskAttempts },
  '0005_user_quotas': { up: userQuotas },
  '0006_webodm_presets': { up: webodmPresets },
  '0007_public_access': { up: publicAccess },
  '0008_webodm_task_fields': { up: webodmTaskFields },
};

export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  // On PostgreSQL the bookkeeping tables go in the schema the connection works in: without this, Kysely looks
  // for them in every schema and takes another schema's tables (another Aeromap on the same database) for ours.
  const migrationTableSchema =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS }, migrationTableSchema });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    const which = failed ? ` ${failed.migrationName}` : '';
    throw new Error(`database migration${which} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
}
