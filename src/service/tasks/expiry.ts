// Uploads left unfinished expire (PARTIAL_UPLOAD_EXPIRY_HOURS): partial tasks never committed, with their files,
// and chunks of uploads and imports whose last piece never came. Otherwise a client that gives up half-way
// holds the disk forever.
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { stalePartialTasks } from '../../db/expiry.ts';
import type { Database } from '../../db/schema.ts';
import { deleteTask } from '../../db/tasks.ts';
import { existingTaskFolders, externalStagingRoot, importStaging, taskFolder } from '../layout.ts';

export interface ExpirySettings {
  dataDir: string;
  expiryMs: number;
}

async function entries(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).map((name) => path.join(dir, name));
}

/** The folders where upload chunks wait: each task's, the imports', and per project the external products'. */
async function chunkFolders(dataDir: string): Promise<string[]> {
  const external = await entries(externalStagingRoot(dataDir));
  return [importStaging(dataDir), ...external, ...(await existingTaskFolders(dataDir)).map((folder) => folder.chunks)];
}

/** When a chunk file, or a folder of uploaded files, last changed (undefined when gone). */
async function lastChangeMs(entry: string): Promise<number | undefined> {
  const info = await stat(entry).catch(() => undefined);
  if (!info?.isDirectory()) return info?.mtimeMs;
  const inside = await Promise.all((await entries(entry)).map(lastChangeMs));
  return Math.max(info.mtimeMs, ...inside.filter((ms) => ms !== undefined));
}

async function removeStaleChunks(dataDir: string, cutoffMs: number): Promise<number> {
  let removed = 0;
  for (const folder of await chunkFolders(dataDir)) {
    for (const file of await entries(folder)) {
      const changed = await lastChangeMs(file);
      if (changed === undefined || changed >= cutoffMs) continue;
      await rm(file, { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}

/** Removes what expired; answers how many partial tasks and chunk files went. */
export async function sweepExpiredUploads(db: Kysely<Database>, settings: ExpirySettings): Promise<{ tasks: number; chunks: number }> {
  const cutoffMs = Date.now() - settings.expiryMs;
  const tasks = await stalePartialTasks(db, new Date(cutoffMs).toISOString());
  for (const task of tasks) {
    await rm(taskFolder(settings.dataDir, task.project_id, task.id).root, { recursive: true, force: true });
    await deleteTask(db, task.id);
  }
  return { tasks: tasks.length, chunks: await removeStaleChunks(settings.dataDir, cutoffMs) };
}

/** Sweeps every `everyMs` (and once at the start) until stopped. */
export function startExpirySweep(db: Kysely<Database>, log: FastifyBaseLogger, settings: ExpirySettings, everyMs: number): () => void {
  const sweep = () =>
    sweepExpiredUploads(db, settings)
      .then((gone) => (gone.tasks || gone.chunks) && log.info(gone, 'expired uploads removed'))
      .catch((error: Error) => log.warn(`sweeping expired uploads failed: ${error.message}`));
  sweep();
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
