// Groups of users and their catalogue permissions.
import type { Kysely } from 'kysely';
import { linkedIds, replaceLinks } from './links.ts';
import type { Database, Group } from './schema.ts';

export function findGroupByName(db: Kysely<Database>, name: string): Promise<Group | undefined> {
  return db.selectFrom('groups').selectAll().where('name', '=', name).executeTakeFirst();
}

export function insertGroup(db: Kysely<Database>, name: string, permissions: number[]): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const { id } = await trx.insertInto('groups').values({ name }).returning('id').executeTakeFirstOrThrow();
    await replaceLinks(trx, 'group_permissions', id, permissions);
    return id;
  });
}

export function updateGroup(
  db: Kysely<Database>,
  id: number,
  changes: { name?: string; permissions?: number[] },
): Promise<void> {
  return db.transaction().execute(async (trx) => {
    if (changes.name !== undefined) await trx.updateTable('groups').set({ name: changes.name }).where('id', '=', id).execute();
    if (changes.permissions) await replaceLinks(trx, 'group_permissions', id, changes.permissions);
  });
}

export async function deleteGroup(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('groups').where('id', '=', id).execute();
}

export function groupPermissions(db: Kysely<Database>, groupIds: number[]): Promise<Map<number, number[]>> {
  return linkedIds(db, 'group_permissions', groupIds);
}
