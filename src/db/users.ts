// Users and groups with their links to groups and catalogue permissions.
import { type Kysely, PostgresAdapter, type Updateable, sql } from 'kysely';
import { linkedIds, replaceLinks } from './links.ts';
import { type Database, type NewUser, type User, type UsersTable, defined, now } from './schema.ts';

export interface UserLinks {
  groups?: number[];
  user_permissions?: number[];
}

export function findUserById(db: Kysely<Database>, id: number): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserByUsername(db: Kysely<Database>, username: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();
}

export async function countUsers(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}

async function saveLinks(db: Kysely<Database>, userId: number, links: UserLinks): Promise<void> {
  if (links.groups) await replaceLinks(db, 'user_groups', userId, links.groups);
  if (links.user_permissions) await replaceLinks(db, 'user_permissions', userId, links.user_permissions);
}

export function insertUser(db: Kysely<Database>, user: NewUser, links: UserLinks = {}): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const { id } = await trx.insertInto('users').values(user).returning('id').executeTakeFirstOrThrow();
    await saveLinks(trx, id, links);
    return id;
  });
}

/**
 * Inserts `user` if the database has no user yet; answers whether it did. Instances starting together on one
 * PostgreSQL take turns (an advisory lock for this schema, held to the end of the transaction), so that only the
 * first creates the first user.
 */
export function insertFirstUser(db: Kysely<Database>, user: NewUser): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (trx.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`select pg_advisory_xact_lock(hashtext(current_schema() || '.first-user'))`.execute(trx);
    }
    if ((await countUsers(trx)) > 0) return false;
    await trx.insertInto('users').values(user).execute();
    return true;
  });
}

export function updateUser(
  db: Kysely<Database>,
  id: number,
  changes: Updateable<UsersTable>,
  links: UserLinks = {},
): Promise<void> {
  return db.transaction().execute(async (trx) => {
    const set = defined(changes);
    if (Object.keys(set).length) await trx.updateTable('users').set(set).where('id', '=', id).execute();
    await saveLinks(trx, id, links);
  });
}

export async function touchLastLogin(db: Kysely<Database>, id: number): Promise<void> {
  await db.updateTable('users').set({ last_login: now() }).where('id', '=', id).execute();
}

export async function deleteUser(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute();
}

export async function userLinks(db: Kysely<Database>, userIds: number[]) {
  const [groups, permissions] = await Promise.all([
    linkedIds(db, 'user_groups', userIds),
    linkedIds(db, 'user_permissions', userIds),
  ]);
  return { groups, permissions };
}

