// The admin API for groups, /api/admin/groups/ (staff only).
import { type Static, Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { deleteGroup, findGroupByName, groupPermissions, insertGroup, updateGroup } from '../db/groups.ts';
import { missingIds } from '../db/links.ts';
import type { Database, Group } from '../db/schema.ts';
import { fieldErrors } from './errors.ts';
import { type ResourceDefinition, registerResource } from './resource.ts';
import { Body, Id } from './schemas.ts';
import type { App } from './typed-app.ts';

export const GroupSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    permissions: Type.Array(Type.Integer(), { description: 'Ids of permissions of the group' }),
  },
  { $id: 'Group' },
);
type GroupItem = Static<typeof GroupSchema>;

const GroupBody = Body({
  name: Type.String({ minLength: 1, maxLength: 150 }),
  permissions: Type.Array(Id, { default: [], maxItems: 10000 }),
});

async function validate(db: Kysely<Database>, body: Partial<Static<typeof GroupBody>>, self?: Group): Promise<void> {
  const errors: Record<string, string[]> = {};
  if (body.name !== undefined && body.name !== self?.name && (await findGroupByName(db, body.name))) {
    errors.name = ['A group with that name already exists.'];
  }
  const missing = await missingIds(db, 'permissions', body.permissions ?? []);
  if (missing.length) errors.permissions = missing.map((id) => `Invalid pk "${id}" - object does not exist.`);
  if (Object.keys(errors).length) throw fieldErrors(errors);
}

const definition: ResourceDefinition<Group, GroupItem, typeof GroupBody, typeof GroupBody> = {
  path: '/api/admin/groups',
  table: 'groups',
  noun: 'group',
  plural: 'groups',
  item: GroupSchema,
  createBody: GroupBody,
  updateBody: GroupBody,
  adminOnly: 'all',
  list: {
    paged: true,
    filters: { name: { kind: 'string', column: 'groups.name' } },
    ordering: { id: 'groups.id', name: 'groups.name' },
    defaultOrdering: ['id'],
  },
  scope: (ctx) => ctx.db.selectFrom('groups').selectAll('groups'),
  async present(ctx, rows) {
    const permissions = await groupPermissions(ctx.db, rows.map((row) => row.id));
    return rows.map((row) => ({ id: row.id, name: row.name, permissions: permissions.get(row.id) ?? [] }));
  },
  async create(ctx, body) {
    await validate(ctx.db, body);
    return insertGroup(ctx.db, body.name, body.permissions);
  },
  async update(ctx, group, body) {
    await validate(ctx.db, body, group);
    await updateGroup(ctx.db, group.id, body);
  },
  remove: (ctx, group) => deleteGroup(ctx.db, group.id),
};

export async function groupRoutes(app: App, { db }: { db: Kysely<Database> }) {
  registerResource(app, db, definition);
}
