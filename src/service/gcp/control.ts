// A task's ground control points as the editor works on them: the gcp_list.txt beside its photographs, read and
// replaced (a replaced list is flagged so that the next restart gives it to the node), and the predictions of
// where surveyed points appear in the photographs, made by the engine from the task's model (cameras.json and
// shots.geojson) or, before there is one, from the photographs' GPS.
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { partialName } from '../../files/safe-path.ts';
import { ASSETS, isImageName } from '../../protocol/files.ts';
import { TaskStatus } from '../../protocol/status.ts';
import type { Task } from '../../db/schema.ts';
import { HttpError } from '../errors.ts';
import type { ExportJobs } from '../exports/jobs.ts';
import type { TaskFolder } from '../layout.ts';
import { downloadName, resolveAssetPath } from '../tasks/assets.ts';
import { type GcpListSummary, type SightingsBody, checkGcpList, gcpFileName } from './list.ts';

const GCP_FILE = 'gcp_list.txt';
const EDITABLE: (number | null)[] = [TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELED];

const badRequest = (detail: string) => new HttpError(400, { detail });

async function photographNames(folder: TaskFolder): Promise<string[]> {
  return readdir(folder.images).catch(() => [] as string[]);
}

/** The task's gcp_list.txt (whatever its name), or null where it has none. */
export async function readGcpList(folder: TaskFolder): Promise<{ filename: string; text: string } | null> {
  const filename = gcpFileName(await photographNames(folder));
  if (!filename) return null;
  return { filename, text: await readFile(path.join(folder.images, filename), 'utf8') };
}

/**
 * Replaces the task's ground control points: checked line by line against its photographs, written whole (a crash
 * leaves the old list or the new), any list under another name removed, and the change flagged for the restart.
 */
export async function saveGcpList(folder: TaskFolder, task: Task, text: string): Promise<GcpListSummary> {
  if (task.partial !== 1 && (!EDITABLE.includes(task.status) || task.pending_action !== null)) {
    throw badRequest('The task is processing: its ground control points can change once it has completed, failed or been canceled.');
  }
  if (task.compacted === 1) throw badRequest("This task was compacted: its photographs are gone, so its ground control points cannot be marked again.");
  const names = await photographNames(folder);
  const summary = checkGcpList(text, new Set(names.filter(isImageName)));
  const previous = gcpFileName(names);
  const part = partialName(folder.images);
  await writeFile(part, text.endsWith('\n') ? text : `${text}\n`);
  await rename(part, path.join(folder.images, GCP_FILE));
  if (previous && previous !== GCP_FILE) await rm(path.join(folder.images, previous), { force: true });
  if (task.uuid !== '') {
    await mkdir(folder.work, { recursive: true });
    await writeFile(folder.gcpChanged, '');
  }
  return summary;
}

/** Starts the engine on the predictions: an export job whose result is JSON (sightings in the engine). */
export async function startSightings(jobs: ExportJobs, folder: TaskFolder, task: Task, body: SightingsBody) {
  const available = JSON.parse(task.available_assets) as string[];
  const model = async (asset: 'cameras.json' | 'shots.geojson') => {
    const source = ASSETS[asset];
    return available.includes(asset) && 'file' in source ? resolveAssetPath(folder.assets, source.file) : null;
  };
  const [cameras, shots] = [await model('cameras.json'), await model('shots.geojson')];
  const from = cameras && shots ? ['--cameras', cameras, '--shots', shots] : ['--images', folder.images];
  if (!(cameras && shots) && task.compacted === 1) throw badRequest('This task has neither a model nor its photographs to find the points in.');
  const filename = downloadName(task.name, 'sightings.json');
  return { celery_task_id: await jobs.start((output, input) => ['sightings', input, output, ...from], filename, 'json', body), filename };
}
