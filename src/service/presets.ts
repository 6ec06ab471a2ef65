// Presets: named sets of processing options at /api/presets/ (and the spec's PATCH /presets/{id}/).
// A user sees their own presets and the system ones; only admins create, change or delete system presets.
import { type Static, Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { deletePreset, insertPreset, updatePreset, visiblePresets } from '../db/presets.ts';
import { type Database, type Preset, flag } from '../db/schema.ts';
import { type Principal, isAdmin } from './auth.ts';
import { permissionDenied } from './errors.ts';
import { type ResourceDefinition, registerResource } from './resource.ts';
import { Id, TaskOptions, Timestamp } from './schemas.ts';
import type { App } from './typed-app.ts';

export const PresetSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    options: TaskOptions,
    created_at: Timestamp,
    system: Type.Boolean({ description: 'Visible to every user; changed by admins only' }),
  },
  { $id: 'Preset' },
);
type PresetItem = Static<typeof PresetSchema>;

const PresetBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  options: Type.Optional(TaskOptions),
  system: Type.Optional(Type.Boolean({ description: 'Admins only' })),
});

function requireSystemRights(user: Principal, system: boolean | undefined): void {
  if (system && !isAdmin(user)) throw permissionDenied('Only administrators can manage system presets.');
}

const definition: ResourceDefinition<Preset, PresetItem, typeof PresetBody, typeof PresetBody> = {
  path: '/api/presets',
  table: 'presets',
  noun: 'preset',
  plural: 'presets',
  item: PresetSchema,
  createBody: PresetBody,
  updateBody: PresetBody,
  patchAliases: ['/presets/:id/'],
  list: {
    paged: false,
    filters: {
      id: { kind: 'integer', column: 'presets.id' },
      name: { kind: 'string', column: 'presets.name' },
      system: { kind: 'boolean', column: 'presets.system' },
    },
    ordering: { id: 'presets.id', name: 'presets.name', created_at: 'presets.created_at', system: 'presets.system' },
    defaultOrdering: ['id'],
  },
  scope: (ctx) => visiblePresets(ctx.db, ctx.user.id),
  present: async (_ctx, rows) =>
    rows.map((row) => ({
      id: row.id,
      name: row.name,
      options: JSON.parse(row.options),
      created_at: row.created_at,
      system: row.system === 1,
    })),
  create(ctx, body) {
    requireSystemRights(ctx.user, body.system);
    const system = body.system ?? false;
    return insertPreset(ctx.db, { ownerId: system ? null : ctx.user.id, name: body.name, options: body.options ?? [], system });
  },
  async update(ctx, preset, body) {
    requireSystemRights(ctx.user, preset.system === 1 || body.system);
    // A system preset made private becomes the admin's own.
    const ownerId = body.system === undefined ? undefined : body.system ? null : (preset.owner_id ?? ctx.user.id);
    await updatePreset(ctx.db, preset.id, {
      name: body.name,
      options: body.options && JSON.stringify(body.options),
      system: body.system === undefined ? undefined : flag(body.system),
      owner_id: ownerId,
    });
  },
  async remove(ctx, preset) {
    requireSystemRights(ctx.user, preset.system === 1);
    await deletePreset(ctx.db, preset.id);
  },
};

export async function presetRoutes(app: App, { db }: { db: Kysely<Database> }) {
  registerResource(app, db, definition);
}
