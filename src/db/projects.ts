// Projects, their tasks' ids, and the per-user and per-group permissions that share them.
import { type Kysely, type Updateable, sql } from 'kysely';
import { type Database, type Flag, type Project, type ProjectPermission, type ProjectsTable, defined, now } from './schema.ts';

export interface Viewer {
  id: number;
  superuser: boolean;
}

/**
 * Projects the viewer may see: all for superusers; otherwise owned ones and those shared with "view". A project
 * being deleted is seen by nobody.
 */
export function visibleProjects(db: Kysely<Database>, viewer: Viewer) {
  const all = db.selectFrom('projects').selectAll('projects').where('projects.deleting', '=', 0);
  if (viewer.superuser) return all;
  return all.where((eb) =>
    eb.or([
      eb('projects.owner_id', '=', viewer.id),
      eb(
        'projects.id',
        'in',
        eb
          .selectFrom('project_user_permissions')
          .select('project_id')
          .where('user_id', '=', viewer.id)
          .where('permission', '=', 'view'),
      ),
      eb(
        'projects.id',
        'in',
        eb
          .selectFrom('project_group_permissions')
          .innerJoin('user_groups', 'user_groups.group_id', 'project_group_permissions.group_id')
          .select('project_group_permissions.project_id')
          .where('user_groups.user_id', '=', viewer.id)
          .where('project_group_permissions.permission', '=', 'view'),
      ),
    ]),
  );
}

/**
 * The visible projects with the ids of their tasks, in order, as text ("1,2,3"; null without tasks), so that one
 * query answers a project and its tasks: on PostgreSQL every query is a round trip.
 */
export function visibleProjectsWithTaskIds(db: Kysely<Database>, viewer: Viewer) {
  return visibleProjects(db, viewer).select((eb) =>
    eb
      .selectFrom('tasks')
      .select(sql<string | null>`string_agg(cast(tasks.id as text), ',' order by tasks.id)`.as('ids'))
      .whereRef('tasks.project_id', '=', 'projects.id')
      .as('task_ids'),
  );
}

/** The ids that visibleProjectsWithTaskIds lists. */
export const parseTaskIds = (text: string | null): number[] => (text ? text.split(',').map(Number) : []);

/** The permissions granted to a user on each project, directly or through the user's groups. */
export async function grantsOf(
  db: Kysely<Database>,
  userId: number,
  projectIds: number[],
): Promise<Map<number, Set<ProjectPermission>>> {
  const grants = new Map(projectIds.map((id) => [id, new Set<ProjectPermission>()]));
  if (projectIds.length === 0) return grants;
  const rows = await db
    .selectFrom('project_user_permissions')
    .select(['project_id', 'permission'])
    .where('user_id', '=', userId)
    .where('project_id', 'in', projectIds)
    .unionAll(
      db
        .selectFrom('project_group_permissions')
        .innerJoin('user_groups', 'user_groups.group_id', 'project_group_permissions.group_id')
        .select(['project_group_permissions.project_id', 'project_group_permissions.permission'])
        .where('user_groups.user_id', '=', userId)
        .where('project_group_permissions.project_id', 'in', projectIds),
    )
    .execute();
  for (const row of rows) grants.get(row.project_id)?.add(row.permission);
  return grants;
}

export async function taskIdsOf(db: Kysely<Database>, projectIds: number[]): Promise<Map<number, number[]>> {
  const tasks = new Map(projectIds.map((id) => [id, [] as number[]]));
  if (projectIds.length === 0) return tasks;
  const rows = await db
    .selectFrom('tasks')
    .select(['id', 'project_id'])
    .where('project_id', 'in', projectIds)
    .orderBy('id')
    .execute();
  for (const row of rows) tasks.get(row.project_id)?.push(row.id);
  return tasks;
}

export async function insertProject(
  db: Kysely<Database>,
  ownerId: number,
  fields: { name: string; description: string; tags: string; public?: Flag; public_edit?: Flag },
): Promise<number> {
  const row = await db
    .insertInto('projects')
    .values({ owner_id: ownerId, ...fields, created_at: now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function updateProject(db: Kysely<Database>, id: number, changes: Updateable<ProjectsTable>): Promise<void> {
  const set = defined(changes);
  if (Object.keys(set).length) await db.updateTable('projects').set(set).where('id', '=', id).execute();
}

/** Deletes the projects' rows; their tasks and permission rows go with them (ON DELETE CASCADE). */
export async function deleteProjects(db: Kysely<Database>, ids: number[]): Promise<void> {
  if (ids.length) await db.deleteFrom('projects').where('id', 'in', ids).execute();
}

export async function ownedProjectIds(db: Kysely<Database>, ownerId: number): Promise<number[]> {
  const rows = await db.selectFrom('projects').select('id').where('owner_id', '=', ownerId).execute();
  return rows.map((row) => row.id);
}

export async function ownerName(db: Kysely<Database>, project: Project): Promise<string> {
  const row = await db.selectFrom('users').select('username').where('id', '=', project.owner_id).executeTakeFirstOrThrow();
  return row.username;
}

export interface Sharing {
  users: { username: string; permissions: ProjectPermission[] }[];
  groups: { groupname: string; permissions: ProjectPermission[] }[];
}

/** Rows sorted by name, then permission, folded into one entry per name. */
function foldByName(rows: { name: string; permission: ProjectPermission }[]) {
  const entries: { name: string; permissions: ProjectPermission[] }[] = [];
  for (const row of rows) {
    const last = entries.at(-1);
    if (last?.name === row.name) last.permissions.push(row.permission);
    else entries.push({ name: row.name, permissions: [row.permission] });
  }
  return entries;
}

/** Who a project is shared with, by name, with their permissions in the order add, change, delete, view. */
export async function sharingOf(db: Kysely<Database>, projectId: number): Promise<Sharing> {
  const [users, groups] = await Promise.all([
    db
      .selectFrom('project_user_permissions')
      .innerJoin('users', 'users.id', 'project_user_permissions.user_id')
      .select(['users.username as name', 'project_user_permissions.permission'])
      .where('project_user_permissions.project_id', '=', projectId)
      .orderBy('users.username')
      .orderBy('project_user_permissions.permission')
      .execute(),
    db
      .selectFrom('project_group_permissions')
      .innerJoin('groups', 'groups.id', 'project_group_permissions.group_id')
      .select(['groups.name as name', 'project_group_permissions.permission'])
      .where('project_group_permissions.project_id', '=', projectId)
      .orderBy('groups.name')
      .orderBy('project_group_permissions.permission')
      .execute(),
  ]);
  return {
    users: foldByName(users).map(({ name, permissions }) => ({ username: name, permissions })),
    groups: foldByName(groups).map(({ name, permissions }) => ({ groupname: name, permissions })),
  };
}

function uniquePairs(grants: { id: number; permissions: ProjectPermission[] }[]): [number, ProjectPermission][] {
  const keys = new Set(grants.flatMap((grant) => grant.permissions.map((permission) => `${grant.id}:${permission}`)));
  return [...keys].map((key) => {
    const [id, permission] = key.split(':');
    return [Number(id), permission as ProjectPermission];
  });
}

/** Replaces every user and group permission of a project with the given ones; run it in a transaction. */
export async function replaceSharing(
  trx: Kysely<Database>,
  projectId: number,
  users: { id: number; permissions: ProjectPermission[] }[],
  groups: { id: number; permissions: ProjectPermission[] }[],
): Promise<void> {
  await trx.deleteFrom('project_user_permissions').where('project_id', '=', projectId).execute();
  await trx.deleteFrom('project_group_permissions').where('project_id', '=', projectId).execute();
  const userRows = uniquePairs(users).map(([user_id, permission]) => ({ project_id: projectId, user_id, permission }));
  const groupRows = uniquePairs(groups).map(([group_id, permission]) => ({ project_id: projectId, group_id, permission }));
  if (userRows.length) await trx.insertInto('project_user_permissions').values(userRows).execute();
  if (groupRows.length) await trx.insertInto('project_group_permissions').values(groupRows).execute();
}

export async function revokeUser(db: Kysely<Database>, projectId: number, userId: number): Promise<void> {
  await db
    .deleteFrom('project_user_permissions')
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .execute();
}
