// A task's backup (GET .../backup), in WebODM's layout so that either restores the other's: the photographs at
// the root, the results under assets/, the console as data/console_output.txt and the task's fields in
// data/backup.json. The import (tasks/import) recognises a backup by data/backup.json and restores all of them.
import { mkdir, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Task, TaskUpdate } from '../../db/schema.ts';
import { isImageName } from '../../protocol/files.ts';
import type { TaskFolder } from '../layout.ts';
import { filesUnder } from './assets.ts';
import { storedTags } from '../tags.ts';
import { type Crop, parseCrop } from './schema.ts';

export const BACKUP_FIELDS = 'data/backup.json';
const BACKUP_CONSOLE = 'data/console_output.txt';

/** WebODM's backup.json: created_at in seconds since 1970, tags space-separated, crop a GeoJSON Polygon or null. */
const BackupFields = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  processing_time: Type.Optional(Type.Number()),
  options: Type.Optional(
    Type.Array(Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }), value: Type.Union([Type.Boolean(), Type.Number(), Type.String()]) }), {
      maxItems: 1000,
    }),
  ),
  created_at: Type.Optional(Type.Number()),
  resize_to: Type.Optional(Type.Integer()),
  tags: Type.Optional(Type.String({ maxLength: 100_000 })),
  // A GeoJSON Polygon, checked by parseCrop.
  crop: Type.Optional(Type.Unknown()),
});
type BackupFields = Static<typeof BackupFields>;

export function backupFields(task: Task): BackupFields {
  return {
    name: task.name,
    processing_time: Number(task.processing_time),
    options: JSON.parse(task.options),
    created_at: Date.parse(task.created_at) / 1000,
    resize_to: task.resize_to,
    tags: task.tags,
    crop: task.crop === null ? null : JSON.parse(task.crop),
  };
}

export type BackupEntry = { name: string; file: string } | { name: string; data: Buffer };

/** What a backup holds, by name in the archive. */
export async function backupEntries(task: Task, folder: TaskFolder): Promise<BackupEntry[]> {
  const under = async (dir: string, prefix: string) =>
    (await filesUnder(dir).catch(() => [])).map((file) => ({ name: `${prefix}${file.relative}`, file: path.join(dir, file.relative) }));
  // Files being written (".partial-...") are not the task's yet.
  const photos = (await under(folder.images, '')).filter((entry) => !entry.name.includes('/') && !entry.name.startsWith('.'));
  const hasConsole = await stat(folder.console).then((info) => info.isFile(), () => false);
  const consoleEntry = hasConsole ? [{ name: BACKUP_CONSOLE, file: folder.console }] : [];
  return [
    ...photos,
    ...(await under(folder.assets, 'assets/')),
    ...consoleEntry,
    { name: BACKUP_FIELDS, data: Buffer.from(JSON.stringify(backupFields(task))) },
  ];
}

export interface RestoredBackup {
  /** The extracted results, to put in place as the task's assets. */
  assets: string;
  changes: TaskUpdate;
}

/**
 * An extracted archive that is a backup (it holds data/backup.json): the console and the photographs moved into
 * the task's folder, its fields read. Null for any other archive; an error for a backup whose fields are wrong.
 */
export async function restoreBackup(extracted: string, folder: TaskFolder): Promise<RestoredBackup | null> {
  let text: string;
  try {
    text = await readFile(path.join(extracted, BACKUP_FIELDS), 'utf8');
  } catch {
    return null;
  }
  let fields: unknown;
  try {
    fields = JSON.parse(text);
  } catch {
    throw new Error(`${BACKUP_FIELDS} is not JSON`);
  }
  if (!Value.Check(BackupFields, fields)) {
    const issue = Value.Errors(BackupFields, fields).First();
    throw new Error(`${BACKUP_FIELDS}: ${issue ? `${issue.path || 'the object'} ${issue.message}` : 'unexpected fields'}`);
  }
  await rm(folder.console, { force: true });
  await rename(path.join(extracted, BACKUP_CONSOLE), folder.console).catch(() => undefined);
  await mkdir(folder.images, { recursive: true });
  let photos = 0;
  for (const entry of await readdir(extracted, { withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith('.')) continue;
    await rename(path.join(extracted, entry.name), path.join(folder.images, entry.name));
    if (isImageName(entry.name)) photos++;
  }
  const assets = path.join(extracted, 'assets');
  await mkdir(assets, { recursive: true });
  const created = fields.created_at === undefined ? undefined : new Date(fields.created_at * 1000);
  let crop: Crop | null | undefined;
  try {
    crop = parseCrop(fields.crop as Crop | null | undefined);
  } catch {
    throw new Error(`${BACKUP_FIELDS}: /crop is not a GeoJSON Polygon in longitude and latitude`);
  }
  return {
    assets,
    changes: {
      name: fields.name,
      processing_time: fields.processing_time === undefined ? undefined : Math.round(fields.processing_time),
      options: fields.options && JSON.stringify(fields.options),
      created_at: created && !Number.isNaN(created.getTime()) ? created.toISOString() : undefined,
      resize_to: fields.resize_to,
      tags: fields.tags === undefined ? undefined : storedTags(fields.tags),
      crop: crop === undefined ? undefined : crop && JSON.stringify(crop),
      images_count: photos || undefined,
      // A backup without its photographs is of a compacted task.
      compacted: photos === 0 ? 1 : 0,
    },
  };
}
