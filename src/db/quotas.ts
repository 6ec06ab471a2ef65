// Storage quotas, as WebODM counts them: a user's used space is the size of the tasks of the projects they own.
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export interface Profile {
  user: number;
  quota: number;
}

export function listProfiles(db: Kysely<Database>): Promise<Profile[]> {
  return db.selectFrom('users').select(['id as user', 'quota']).orderBy('id').execute();
}

export function findProfile(db: Kysely<Database>, userId: number): Promise<Profile | undefined> {
  return db.selectFrom('users').select(['id as user', 'quota']).where('id', '=', userId).executeTakeFirst();
}

export async function setQuota(db: Kysely<Database>, userId: number, quota: number): Promise<void> {
  await db.updateTable('users').set({ quota }).where('id', '=', userId).execute();
}

/** Bytes held by the tasks of the projects the user owns. */
export async function usedBytes(db: Kysely<Database>, userId: number): Promise<number> {
  const row = await db
    .selectFrom('tasks')
    .innerJoin('projects', 'projects.id', 'tasks.project_id')
    .where('projects.owner_id', '=', userId)
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('tasks.size'), eb.lit(0)).as('used'))
    .executeTakeFirstOrThrow();
  return Number(row.used);
}

/** The owner of a project and their quota; undefined for a project that does not exist. */
export function projectOwnerQuota(db: Kysely<Database>, projectId: number): Promise<Profile | undefined> {
  return db
    .selectFrom('projects')
    .innerJoin('users', 'users.id', 'projects.owner_id')
    .where('projects.id', '=', projectId)
    .select(['users.id as user', 'users.quota'])
    .executeTakeFirst();
}
