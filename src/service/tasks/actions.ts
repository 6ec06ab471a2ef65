// The user's actions as the scheduler carries them out: cancel, remove, restart and compact, each telling the node
// first (best effort: a node that cannot be reached must not keep a task from being canceled or removed).
import { rm, stat } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import { findNode } from '../../db/processingnodes.ts';
import type { Database, ProcessingNode } from '../../db/schema.ts';
import { deleteProjectIfEmpty, projectAwaitsRemoval, sweepDeletingProjects } from '../../db/tasks.ts';
import { deleteLeasedTask } from '../../db/task-leases.ts';
import { NodeError } from '../../nodeclient/index.ts';
import { TaskStatus } from '../../protocol/status.ts';
import { folderSize } from './assets.ts';
import { resetConsole } from './console.ts';
import { type StepContext, clientOf, fail, nodeName, save, settled, superseded } from './context.ts';
import { readGcpList } from '../gcp/control.ts';
import { projectFolder } from '../layout.ts';

async function assignedNode(ctx: StepContext): Promise<ProcessingNode | undefined> {
  const { task } = ctx;
  if (task.uuid === '' || task.processing_node_id === null) return undefined;
  return findNode(ctx.db, task.processing_node_id);
}

/** Runs a call to the node, logging rather than throwing when the node cannot do it. */
async function tellNode(ctx: StepContext, node: ProcessingNode, what: string, call: () => Promise<void>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (error) {
    if (!(error instanceof NodeError)) throw error;
    ctx.log.warn({ task: ctx.task.id }, `cannot ${what} on processing node ${nodeName(node)}: ${error.message}`);
    return false;
  }
}

export async function cancelStep(ctx: StepContext): Promise<null> {
  const node = await assignedNode(ctx);
  if (node) await tellNode(ctx, node, 'cancel the task', () => clientOf(ctx, node).cancelTask(ctx.task.uuid));
  await save(ctx, { ...settled, status: TaskStatus.CANCELED, pending_action: null, unreachable_since: null });
  return null;
}

/** Removes the photographs of a finished task (compact/); its results, and so every download, stay. */
export async function compactStep(ctx: StepContext): Promise<null> {
  await rm(ctx.folder.images, { recursive: true, force: true });
  await save(ctx, { ...settled, pending_action: null, compacted: 1, size: await folderSize(ctx.folder.root) });
  return null;
}

/** Removes the node's copy, the task's files and its row; a project being deleted goes with its last task. */
export async function removeStep(ctx: StepContext): Promise<null> {
  const { task } = ctx;
  const node = await assignedNode(ctx);
  if (node) await tellNode(ctx, node, 'remove the task', () => clientOf(ctx, node).removeTask(task.uuid));
  await rm(ctx.folder.root, { recursive: true, force: true });
  if (!(await deleteLeasedTask(ctx.db, task, ctx.lease.owner))) superseded(ctx);
  if (await projectAwaitsRemoval(ctx.db, task.project_id)) await removeProject(ctx.db, ctx.settings.dataDir, task.project_id);
  return null;
}

/**
 * The folder before the row: once the project is gone nothing of it is left, and a crash in between leaves a
 * row that the next sweep finishes.
 */
async function removeProject(db: Kysely<Database>, dataDir: string, projectId: number): Promise<void> {
  await rm(projectFolder(dataDir, projectId), { recursive: true, force: true });
  await deleteProjectIfEmpty(db, projectId);
}

/**
 * Finishes the deletion of projects that a lost removal or a crash left behind: their tasks are asked to go again,
 * and those that have none left go. Runs at every tick of the scheduler.
 */
export function sweepProjects(db: Kysely<Database>, dataDir: string): () => Promise<void> {
  return async () => {
    for (const projectId of await sweepDeletingProjects(db)) await removeProject(db, dataDir, projectId);
  };
}

/**
 * Gives the node the task's new ground control points; false where it cannot take them (only an Aeromap node can:
 * NodeODM has no way to change a task's files) or has no list to take.
 */
async function giveGcp(ctx: StepContext, node: ProcessingNode): Promise<boolean> {
  const list = await readGcpList(ctx.folder);
  if (node.engine !== 'aeromap' || !list) return false;
  return tellNode(ctx, node, 'replace the ground control points', () => clientOf(ctx, node).replaceGcp(ctx.task.uuid, list.text));
}

/**
 * Restarts the task: on the same node when it still has the task (it reuses its results, and rerun-from
 * applies) and has its ground control points, otherwise from a new upload, without rerun-from, which only means
 * something to the old node.
 */
export async function restartStep(ctx: StepContext): Promise<number | null> {
  const { task } = ctx;
  const options = JSON.parse(task.options) as { name: string; value: unknown }[];
  await resetConsole(ctx.folder.console);
  const fresh = {
    ...settled,
    pending_action: null,
    status: null,
    last_error: null,
    processing_time: -1,
    running_progress: 0,
    console_lines: 0,
    unreachable_since: null,
  };
  const node = await assignedNode(ctx);
  const gcpChanged = await stat(ctx.folder.gcpChanged).then(() => true, () => false);
  if (node && (!gcpChanged || (await giveGcp(ctx, node)))) {
    const restarted = await tellNode(ctx, node, 'restart the task', () =>
      clientOf(ctx, node).restartTask(task.uuid, options),
    );
    if (restarted) {
      await rm(ctx.folder.gcpChanged, { force: true });
      await save(ctx, { ...fresh, status: TaskStatus.QUEUED });
      return 0;
    }
  }
  if (task.processing_node_id === null && !task.auto_processing_node) {
    return fail(ctx, 'Cannot restart a task that has no processing node.');
  }
  if (task.compacted) {
    return fail(ctx, 'Cannot restart a compacted task from the start: its photographs were removed, and its node no longer has it.');
  }
  const withoutRerun = options.filter((option) => option.name !== 'rerun-from');
  await rm(ctx.folder.gcpChanged, { force: true }); // the new upload carries the list
  await save(ctx, { ...fresh, uuid: '', upload_progress: 0, options: JSON.stringify(withoutRerun) });
  return 0;
}
