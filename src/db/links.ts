// Many-to-many link tables (user_groups, user_permissions, group_permissions): read and replace the ids
// linked to an owner row.
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

interface LinkTables {
  user_groups: { owner: 'user_id'; target: 'group_id' };
  user_permissions: { owner: 'user_id'; target: 'permission_id' };
  group_permissions: { owner: 'group_id'; target: 'permission_id' };
}
export type LinkTable = keyof LinkTables;

const COLUMNS: { [T in LinkTable]: LinkTables[T] } = {
  user_groups: { owner: 'user_id', target: 'group_id' },
  user_permissions: { owner: 'user_id', target: 'permission_id' },
  group_permissions: { owner: 'group_id', target: 'permission_id' },
};

/** The linked ids of each owner, in ascending order; owners without links map to []. */
export async function linkedIds(db: Kysely<Database>, table: LinkTable, ownerIds: number[]): Promise<Map<number, number[]>> {
  const result = new Map(ownerIds.map((id) => [id, [] as number[]]));
  if (ownerIds.length === 0) return result;
  const { owner, target } = COLUMNS[table];
  // The link tables differ only in column names, which the typed builder cannot take as variables.
  const rows: { owner: number; target: number }[] = await (db as Kysely<any>)
    .selectFrom(table)
    .select([`${owner} as owner`, `${target} as target`])
    .where(owner, 'in', ownerIds)
    .orderBy(target)
    .execute();
  for (const row of rows) result.get(row.owner)?.push(row.target);
  return result;
}

export async function replaceLinks(db: Kysely<Database>, table: LinkTable, ownerId: number, targetIds: number[]): Promise<void> {
  const { owner, target } = COLUMNS[table];
  const untyped = db as Kysely<any>;
  await untyped.deleteFrom(table).where(owner, '=', ownerId).execute();
  const unique = [...new Set(targetIds)];
  if (unique.length) {
    await untyped
      .insertInto(table)
      .values(unique.map((id) => ({ [owner]: ownerId, [target]: id })))
      .execute();
  }
}

/** The ids among `ids` that have no row in `table`. */
export async function missingIds(db: Kysely<Database>, table: 'groups' | 'permissions', ids: number[]): Promise<number[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const found = await db.selectFrom(table).select('id').where('id', 'in', unique).execute();
  const present = new Set(found.map((row) => row.id));
  return unique.filter((id) => !present.has(id));
}
