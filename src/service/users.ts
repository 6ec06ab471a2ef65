// The admin API for users, /api/admin/users/ (staff only). Passwords are hashed whenever they are set; the
// API shows only the hash. Deleting a user deletes the projects the user owns, with their files.
import { type Static, Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { missingIds } from '../db/links.ts';
import { ownedProjectIds } from '../db/projects.ts';
import { type Database, type User, flag, now } from '../db/schema.ts';
import { deleteUser, findUserByUsername, insertUser, updateUser, userLinks } from '../db/users.ts';
import { fieldErrors, permissionDenied } from './errors.ts';
import type { TokenService } from './auth.ts';
import { hashPassword } from './passwords.ts';
import { destroyProjects } from './projects.ts';
import { type Context, type ResourceDefinition, registerResource } from './resource.ts';
import { Body, Id, Nullable, Timestamp, USERNAME_PATTERN } from './schemas.ts';
import type { App } from './typed-app.ts';

export const UserSchema = Type.Object(
  {
    id: Id,
    password: Type.String({ description: 'The hash, pbkdf2_sha256$<iterations>$<salt>$<hash>' }),
    last_login: Nullable(Timestamp),
    is_superuser: Type.Boolean(),
    username: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    email: Type.String(),
    is_staff: Type.Boolean(),
    is_active: Type.Boolean(),
    date_joined: Timestamp,
    groups: Type.Array(Type.Integer(), { description: 'Ids of the groups the user belongs to' }),
    user_permissions: Type.Array(Type.Integer(), { description: 'Ids of permissions of the user' }),
  },
  { $id: 'User' },
);
type UserItem = Static<typeof UserSchema>;

const UserBody = Body({
  username: Type.String({ minLength: 1, maxLength: 150, pattern: USERNAME_PATTERN, description: 'Letters, digits and @ . + - _' }),
  password: Type.String({ minLength: 1, maxLength: 4096, description: 'Stored hashed' }),
  first_name: Type.String({ maxLength: 150, default: '' }),
  last_name: Type.String({ maxLength: 150, default: '' }),
  email: Type.String({ maxLength: 254, pattern: '^$|^[^@\\s]+@[^@\\s]+$', default: '' }),
  is_superuser: Type.Boolean({ default: false }),
  is_staff: Type.Boolean({ default: false }),
  is_active: Type.Boolean({ default: false, description: 'False unless given, as the spec says' }),
  groups: Type.Array(Id, { default: [], maxItems: 10000 }),
  user_permissions: Type.Array(Id, { default: [], maxItems: 10000 }),
});
type UserFields = Partial<Static<typeof UserBody>>;

async function validate(db: Kysely<Database>, body: UserFields, self?: User): Promise<void> {
  const errors: Record<string, string[]> = {};
  if (body.username !== undefined && body.username !== self?.username && (await findUserByUsername(db, body.username))) {
    errors.username = ['A user with that username already exists.'];
  }
  for (const [field, table] of [
    ['groups', 'groups'],
    ['user_permissions', 'permissions'],
  ] as const) {
    const missing = await missingIds(db, table, body[field] ?? []);
    if (missing.length) errors[field] = missing.map((id) => `Invalid pk "${id}" - object does not exist.`);
  }
  if (Object.keys(errors).length) throw fieldErrors(errors);
}

/** The columns a body sets; a password equal to the stored hash (a GET echoed back by PUT) is kept as it is. */
async function columnsOf(body: UserFields, iterations: number, self?: User) {
  const password =
    body.password === undefined || body.password === self?.password ? undefined : await hashPassword(body.password, iterations);
  const optionalFlag = (value: boolean | undefined) => (value === undefined ? undefined : flag(value));
  return {
    username: body.username,
    password,
    first_name: body.first_name,
    last_name: body.last_name,
    email: body.email,
    is_superuser: optionalFlag(body.is_superuser),
    is_staff: optionalFlag(body.is_staff),
    is_active: optionalFlag(body.is_active),
  };
}

/**
 * Staff who are not superusers manage ordinary accounts only: making a superuser, or changing or deleting one
 * (its password included), would hand them every right.
 */
function requireSuperuserFor(ctx: Context, target: Pick<User, 'is_superuser'> | undefined, grants: boolean | undefined): void {
  if (ctx.user.superuser) return;
  if (target?.is_superuser === 1 || grants === true) {
    throw permissionDenied('Only a superuser can create, change or delete a superuser.');
  }
}

async function present(ctx: Context, rows: User[]): Promise<UserItem[]> {
  const links = await userLinks(ctx.db, rows.map((row) => row.id));
  return rows.map((row) => ({
    id: row.id,
    password: row.password,
    last_login: row.last_login,
    is_superuser: row.is_superuser === 1,
    username: row.username,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    is_staff: row.is_staff === 1,
    is_active: row.is_active === 1,
    date_joined: row.date_joined,
    groups: links.groups.get(row.id) ?? [],
    user_permissions: links.permissions.get(row.id) ?? [],
  }));
}

function definition(deps: UserDeps): ResourceDefinition<User, UserItem, typeof UserBody, typeof UserBody> {
  return {
    path: '/api/admin/users',
    table: 'users',
    noun: 'user',
    plural: 'users',
    item: UserSchema,
    createBody: UserBody,
    updateBody: UserBody,
    adminOnly: 'all',
    list: {
      paged: true,
      filters: {
        email: { kind: 'string', column: 'users.email' },
        username: { kind: 'string', column: 'users.username' },
      },
      ordering: {
        id: 'users.id',
        username: 'users.username',
        email: 'users.email',
        date_joined: 'users.date_joined',
        last_login: 'users.last_login',
      },
      defaultOrdering: ['id'],
    },
    scope: (ctx) => ctx.db.selectFrom('users').selectAll('users'),
    present,
    async create(ctx, body) {
      requireSuperuserFor(ctx, undefined, body.is_superuser);
      await validate(ctx.db, body);
      const columns = await columnsOf(body, deps.passwordIterations);
      return insertUser(
        ctx.db,
        { ...columns, username: body.username, password: columns.password as string, date_joined: now() },
        { groups: body.groups, user_permissions: body.user_permissions },
      );
    },
    async update(ctx, user, body) {
      requireSuperuserFor(ctx, user, body.is_superuser);
      await validate(ctx.db, body, user);
      await updateUser(ctx.db, user.id, await columnsOf(body, deps.passwordIterations, user), {
        groups: body.groups,
        user_permissions: body.user_permissions,
      });
      deps.tokens.userChanged(user.id);
    },
    async remove(ctx, user) {
      requireSuperuserFor(ctx, user, undefined);
      await destroyProjects(ctx.db, deps.dataDir, await ownedProjectIds(ctx.db, user.id), true);
      await deleteUser(ctx.db, user.id);
      deps.tokens.userChanged(user.id);
    },
  };
}

interface UserDeps {
  db: Kysely<Database>;
  dataDir: string;
  passwordIterations: number;
  tokens: TokenService;
}

export async function userRoutes(app: App, deps: UserDeps) {
  registerResource(app, deps.db, definition(deps));
}
