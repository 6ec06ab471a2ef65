// One step of a task's life, chosen from its row: a pending action first, then a node for it, the upload of its
// files, and polls until the node is done, when its all.zip is downloaded and unpacked. Each step is
// repeatable: if the service stops half-way, the next step starts again from what the row and the files say.
// A step that throws is tried again later, with a growing pause, a bounded number of times.
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { allNodes, findNode } from '../../db/processingnodes.ts';
import { type Database, type ProcessingNode, now } from '../../db/schema.ts';
import { bumpQueueCount } from '../../db/tasks.ts';
import { ignoredOptionsLine } from '../../protocol/options.ts';
import { PendingAction, TaskStatus } from '../../protocol/status.ts';
import { type NodeClient, NodeConnectionError, NodeResponseError, NodeServerError } from '../../nodeclient/index.ts';
import { isOnline } from '../refresher.ts';
import { cancelStep, compactStep, removeStep, restartStep } from './actions.ts';
import { resizeStep } from './resize.ts';
import { appendConsole } from './console.ts';
import {
  type ProcessingSettings,
  type StepContext,
  clientOf,
  fail,
  nodeName,
  save,
  settled,
  stepContext,
  throttled,
} from './context.ts';
import { completeFromZip } from './results.ts';
import { parseOptions, splitByNode } from './options.ts';
import { importStep } from './import.ts';
import { EXTERNAL_IMPORT, externalStep } from './external.ts';
import { type Step, StepSuperseded } from './scheduler.ts';
import { waitForDiskRoom } from './storage.ts';

/** Share of running_progress that the node's own progress covers; the download and unpacking take the rest. */
const NODE_SHARE = 0.9;
const DOWNLOAD_SHARE = 0.08;
/** The longest pause between two attempts of a failing step. */
const MAX_BACKOFF_MS = 5 * 60_000;

export function taskStep(db: Kysely<Database>, log: FastifyBaseLogger, settings: ProcessingSettings): Step {
  return async (task, lease) => {
    const ctx = stepContext(db, log, settings, task, lease);
    try {
      const delay = await nextStep(ctx);
      // Steps that end a task or handle an action count from 0 again themselves.
      if (ctx.task.attempts > 0 && ctx.task.pending_action === null) await save(ctx, { attempts: 0, last_error: null });
      return delay;
    } catch (error) {
      if (lease.signal.aborted || error instanceof StepSuperseded) throw error;
      return retryLater(ctx, error as Error);
    }
  };
}

/**
 * Counts a failed attempt and answers the pause before the next, doubled at each failure; the reason shows in
 * last_error meanwhile. After the last attempt the task fails with that reason.
 */
async function retryLater(ctx: StepContext, error: Error): Promise<number | null> {
  const attempts = ctx.task.attempts + 1;
  const { maxAttempts, retryBackoffMs } = ctx.settings;
  if (attempts >= maxAttempts) return fail(ctx, `${error.message} (gave up after ${attempts} attempts)`);
  const delay = Math.min(MAX_BACKOFF_MS, retryBackoffMs * 2 ** (attempts - 1));
  const reason = `Attempt ${attempts} of ${maxAttempts} failed, trying again in ${Math.ceil(delay / 1000)} s: ${error.message}`;
  ctx.log.warn({ task: ctx.task.id, err: error }, reason);
  await save(ctx, { attempts, last_error: reason });
  return delay;
}

async function nextStep(ctx: StepContext): Promise<number | null> {
  const { task } = ctx;
  switch (task.pending_action) {
    case PendingAction.REMOVE:
      return removeStep(ctx);
    case PendingAction.CANCEL:
      return cancelStep(ctx);
    case PendingAction.RESTART:
      return restartStep(ctx);
    case PendingAction.IMPORT:
      return task.import_url === EXTERNAL_IMPORT ? externalStep(ctx) : importStep(ctx);
    case PendingAction.COMPACT:
      return compactStep(ctx);
    case PendingAction.RESIZE:
      return resizeStep(ctx);
  }
  if (task.status !== null && task.status !== TaskStatus.QUEUED && task.status !== TaskStatus.RUNNING) return null;
  return processingStep(ctx);
}

async function processingStep(ctx: StepContext): Promise<number | null> {
  const { task } = ctx;
  const node = task.processing_node_id === null ? undefined : await findNode(ctx.db, task.processing_node_id);
  if (!node) {
    // The node was deleted under a task it held, or none was chosen yet.
    if (task.uuid !== '' && !task.auto_processing_node) return fail(ctx, 'Its processing node was removed.');
    if (!task.auto_processing_node) return fail(ctx, 'The task has no processing node.');
    return assignNode(ctx);
  }
  const client = clientOf(ctx, node);
  try {
    const delay = task.download_pending
      ? await collectResults(ctx, client)
      : task.status === null
        ? await submit(ctx, client, node)
        : await poll(ctx, client, node);
    if (ctx.task.unreachable_since !== null) await save(ctx, { unreachable_since: null });
    return delay;
  } catch (error) {
    if (error instanceof NodeConnectionError || error instanceof NodeServerError) return unreachable(ctx, node, error);
    throw error;
  }
}

/** The online node with room for the task and the shortest queue. */
async function assignNode(ctx: StepContext): Promise<number | null> {
  const at = Date.now();
  const online = (await allNodes(ctx.db).orderBy('id').execute()).filter((node) => isOnline(node, at));
  const images = ctx.task.images_count;
  const fitting = online.filter((node) => node.max_images === null || node.max_images >= images);
  if (fitting.length === 0) {
    if (online.length === 0) return ctx.settings.retryMs;
    const most = Math.max(...online.map((node) => node.max_images ?? 0));
    return fail(ctx, `No processing node takes ${images} images: the most any online node takes is ${most}.`);
  }
  const [chosen] = fitting.sort((a, b) => a.queue_count - b.queue_count || a.id - b.id);
  await bumpQueueCount(ctx.db, chosen.id);
  await save(ctx, { processing_node_id: chosen.id, unreachable_since: null });
  ctx.log.info({ task: ctx.task.id }, `task assigned to processing node ${nodeName(chosen)}`);
  return 0;
}

/**
 * Uploads the task's files through the chunked protocol. The node's uuid is recorded as soon as the node gives
 * it, and the end of the upload before the commit, so that a step that resumes (after a crash, or a lost answer)
 * goes on with that uuid (asking the node first whether it already has the task) rather than making a second.
 */
async function submit(ctx: StepContext, client: NodeClient, node: ProcessingNode): Promise<number | null> {
  const { task } = ctx;
  const files = await taskImages(ctx);
  try {
    if (task.uuid === '') {
      const { offered, ignored } = splitByNode(parseOptions(task.options), node);
      if (ignored.length > 0) {
        await appendConsole(ctx.folder.console, [ignoredOptionsLine(`Processing node ${nodeName(node)}`, ignored)]);
      }
      await save(ctx, { uuid: await client.initTask({ name: task.name || `Task #${task.id}`, options: offered, signal: ctx.signal }) });
    } else if (await nodeHasTask(client, task.uuid)) {
      return submitted(ctx);
    }
    if (task.upload_progress < 1) {
      // Below 1 until the node has answered for every file.
      const reportUpload = throttled((fraction) => save(ctx, { upload_progress: Math.min(0.999, fraction) }));
      await client.uploadFiles(task.uuid, files, { onProgress: reportUpload, signal: ctx.signal });
      await save(ctx, { upload_progress: 1 });
    }
    await client.commitTask(task.uuid, { signal: ctx.signal });
    return submitted(ctx);
  } catch (error) {
    if (error instanceof NodeResponseError) return fail(ctx, `The processing node refused the task: ${stripLabel(error.message)}`);
    throw error;
  }
}

async function taskImages(ctx: StepContext): Promise<{ name: string; path: string }[]> {
  let names: string[];
  try {
    names = await readdir(ctx.folder.images);
  } catch (error) {
    throw new Error(`The task's images cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`);
  }
  return names
    .filter((name) => !name.startsWith('.'))
    .sort()
    .map((name) => ({ name, path: path.join(ctx.folder.images, name) }));
}

/** Whether the node has the task committed; it knows nothing of an upload not yet committed. */
async function nodeHasTask(client: NodeClient, uuid: string): Promise<boolean> {
  try {
    await client.taskInfo(uuid);
    return true;
  } catch (error) {
    if (error instanceof NodeResponseError) return false;
    throw error;
  }
}

async function submitted(ctx: StepContext): Promise<number> {
  await save(ctx, { status: TaskStatus.QUEUED, upload_progress: 1, console_lines: 0, processing_time: -1, last_error: null });
  return 0;
}

/** The node's message without the address the client puts before it. */
const stripLabel = (message: string) => message.replace(/^[^\s:]+:\d+: /, '');

/** Asks the node how the task is doing, keeps the console and progress, and collects the results when done. */
async function poll(ctx: StepContext, client: NodeClient, node: ProcessingNode): Promise<number | null> {
  const { task } = ctx;
  let info;
  try {
    info = await client.taskInfo(task.uuid, task.console_lines);
  } catch (error) {
    if (!(error instanceof NodeResponseError)) throw error;
    // The node lost the task (its data was wiped, or it removed the task after its cleanup period).
    if (task.status === TaskStatus.QUEUED && task.auto_processing_node) {
      await save(ctx, { uuid: '', status: null, upload_progress: 0 });
      return 0;
    }
    return fail(ctx, `Processing node ${nodeName(node)} no longer has this task: ${stripLabel(error.message)}`);
  }
  const output = info.output ?? [];
  await appendConsole(ctx.folder.console, output);
  const code = info.status.code;
  // What a proxy leaves out while it forwards the task stays as it was.
  const common = {
    console_lines: task.console_lines + output.length,
    processing_time: info.processingTime === undefined ? task.processing_time : Math.round(info.processingTime),
    images_count: (info.imagesCount ?? 0) > 0 ? info.imagesCount! : task.images_count,
  };
  if (code === TaskStatus.COMPLETED) {
    // The download is a step of its own, in the pool of long transfers.
    await save(ctx, { ...common, status: TaskStatus.RUNNING, running_progress: NODE_SHARE, download_pending: 1 });
    return 0;
  }
  if (code === TaskStatus.FAILED) {
    await save(ctx, common);
    return fail(ctx, info.status.errorMessage || `Processing failed on ${nodeName(node)}.`);
  }
  if (code === TaskStatus.CANCELED) {
    await save(ctx, { ...common, ...settled, status: TaskStatus.CANCELED });
    return null;
  }
  const progress = info.progress === undefined ? task.running_progress : Math.min(NODE_SHARE, (info.progress / 100) * NODE_SHARE);
  await save(ctx, { ...common, status: code, running_progress: progress });
  return ctx.settings.pollMs;
}

/** Downloads all.zip (resuming a cut download) and unpacks it as the task's assets. */
async function collectResults(ctx: StepContext, client: NodeClient): Promise<number | null> {
  if (!existsSync(ctx.folder.allZip)) {
    const wait = await waitForDiskRoom(ctx);
    if (wait !== null) return wait;
    await mkdir(ctx.folder.work, { recursive: true });
    const reportDownload = throttled((fraction) => save(ctx, { running_progress: NODE_SHARE + DOWNLOAD_SHARE * fraction }));
    await client.downloadAllZip(ctx.task.uuid, ctx.folder.allZip, { signal: ctx.signal, onProgress: reportDownload });
  }
  return completeFromZip(ctx);
}

/**
 * A node that does not answer: tried again later, until it has been silent for the offline window. Then a
 * task it was processing fails (its work there is lost to us), and one not started moves to another node.
 */
async function unreachable(ctx: StepContext, node: ProcessingNode, error: Error): Promise<number | null> {
  const { task } = ctx;
  const since = task.unreachable_since ?? now();
  if (task.unreachable_since === null) await save(ctx, { unreachable_since: since });
  ctx.log.warn({ task: task.id }, `processing node ${nodeName(node)}: ${error.message}`);
  if (Date.now() - Date.parse(since) < ctx.settings.nodeOfflineAfterMs) return ctx.settings.retryMs;
  const minutes = Math.round(ctx.settings.nodeOfflineAfterMs / 60_000);
  const silence = minutes >= 1 ? `${minutes} min` : `${Math.round(ctx.settings.nodeOfflineAfterMs / 1000)} s`;
  if (task.status !== TaskStatus.RUNNING && task.auto_processing_node) {
    await save(ctx, { processing_node_id: null, uuid: '', status: null, upload_progress: 0, unreachable_since: null });
    ctx.log.info({ task: task.id }, `processing node ${nodeName(node)} is gone; the task moves to another node`);
    return 0;
  }
  return fail(
    ctx,
    `Processing node ${nodeName(node)} went offline (no answer for ${silence}: ${stripLabel(error.message)}). ` +
      'Restart the task to process it again.',
  );
}

