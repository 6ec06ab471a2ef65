// The first start: with no user in the database, a superuser is created so that someone can sign in.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Database, now } from '../db/schema.ts';
import { countUsers, insertFirstUser } from '../db/users.ts';
import { hashPassword } from './passwords.ts';

export interface FirstAdmin {
  username: string;
  /** Set when the password was generated; it is shown once and stored only as a hash. */
  generatedPassword?: string;
}

export async function ensureFirstAdmin(
  db: Kysely<Database>,
  admin: { username: string; password: string | undefined },
  passwordIterations: number,
): Promise<FirstAdmin | undefined> {
  if ((await countUsers(db)) > 0) return undefined; // the usual start: no password to hash
  const generatedPassword = admin.password ? undefined : randomBytes(12).toString('base64url');
  const created = await insertFirstUser(db, {
    username: admin.username,
    password: await hashPassword(admin.password ?? (generatedPassword as string), passwordIterations),
    is_superuser: 1,
    is_staff: 1,
    is_active: 1,
    date_joined: now(),
  });
  return created ? { username: admin.username, generatedPassword } : undefined;
}
