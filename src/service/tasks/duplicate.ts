// Copies of tasks (duplicate/ of a task, and of a project): a new row with the task's fields and results, and
// its files hard-linked where the file system allows (copied otherwise). Files are never written in place once
// there (results arrive by renames, resizing writes new files), so a link is as good as a copy; the console,
// which grows by appends, is copied.
import { copyFile, link, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Database, Task } from '../../db/schema.ts';
import { deleteTask, insertTaskCopy } from '../../db/tasks.ts';
import { PendingAction, isFinished } from '../../protocol/status.ts';
import { type TaskFolder, taskFolder } from '../layout.ts';
import { badRequest } from './intake.ts';

const MAX_NAME = 255;

/** WebODM's name of a copy. */
export const copyName = (name: string) => `Copy of ${name}`.slice(0, MAX_NAME);

/** A task that is being processed or changed cannot be copied: its files are not settled. */
export function checkDuplicable(task: Task): void {
  if (task.partial === 1 || task.status === null || !isFinished(task.status) || task.pending_action !== null) {
    const what = task.pending_action === PendingAction.IMPORT ? 'being imported' : 'waiting or processing';
    throw badRequest(`Task "${task.name}" is ${what}: only a task that has completed, failed or been canceled can be duplicated.`);
  }
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch {
    await copyFile(from, to);
  }
}

/** The folder's files under another root, linked; links, sockets and the like are left out. */
async function linkTree(from: string, to: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(from, { withFileTypes: true });
  } catch {
    return;
  }
  await mkdir(to, { recursive: true });
  for (const entry of entries) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) await linkTree(source, path.join(to, entry.name));
    else if (entry.isFile()) await linkOrCopy(source, path.join(to, entry.name));
  }
}

async function copyTaskFiles(from: TaskFolder, to: TaskFolder): Promise<void> {
  await mkdir(to.root, { recursive: true });
  await linkTree(from.images, to.images);
  await linkTree(from.assets, to.assets);
  await copyFile(from.console, to.console).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/** Copies a task (checked with checkDuplicable) into a project under a name; answers the copy's id. */
export async function duplicateTask(
  db: Kysely<Database>,
  dataDir: string,
  task: Task,
  into: { projectId: number; name: string },
): Promise<number> {
  const id = await insertTaskCopy(db, task, { project_id: into.projectId, name: into.name });
  const target = taskFolder(dataDir, into.projectId, id);
  try {
    await copyTaskFiles(taskFolder(dataDir, task.project_id, task.id), target);
  } catch (error) {
    await deleteTask(db, id);
    await rm(target.root, { recursive: true, force: true });
    throw error;
  }
  return id;
}
