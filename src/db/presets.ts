// Processing-option presets: system presets (owner null) for everyone, the others for their owner.
import type { Kysely, Updateable } from 'kysely';
import { type Database, type PresetsTable, flag, defined, now } from './schema.ts';

export function visiblePresets(db: Kysely<Database>, userId: number) {
  return db
    .selectFrom('presets')
    .selectAll('presets')
    .where((eb) => eb.or([eb('presets.system', '=', 1), eb('presets.owner_id', '=', userId)]));
}

export async function insertPreset(
  db: Kysely<Database>,
  preset: { ownerId: number | null; name: string; options: unknown[]; system: boolean },
): Promise<number> {
  const row = await db
    .insertInto('presets')
    .values({
      owner_id: preset.ownerId,
      name: preset.name,
      options: JSON.stringify(preset.options),
      system: flag(preset.system),
      created_at: now(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function updatePreset(db: Kysely<Database>, id: number, changes: Updateable<PresetsTable>): Promise<void> {
  const set = defined(changes);
  if (Object.keys(set).length) await db.updateTable('presets').set(set).where('id', '=', id).execute();
}

export async function deletePreset(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('presets').where('id', '=', id).execute();
}
