// Leases: work that one service instance at a time does among several sharing a database. The holder renews
// its lease before it ends; once it has ended (the holder stopped or died), the next instance to ask takes it.
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

/** Takes or renews the lease `name` for `owner` for `ms` milliseconds; answers whether `owner` holds it. */
export async function takeLease(db: Kysely<Database>, name: string, owner: string, ms: number): Promise<boolean> {
  await db.insertInto('leases').values({ name, owner: null, until: null }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const at = new Date();
  const result = await db
    .updateTable('leases')
    .set({ owner, until: new Date(at.getTime() + ms).toISOString() })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '=', owner), eb('until', '<=', at.toISOString())]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
