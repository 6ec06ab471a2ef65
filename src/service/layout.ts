// Where the service's files live under DATA_DIR: each task's in media/project/{pid}/task/{tid}/, imports being
// downloaded in media/tmp/imports/, exports in media/tmp/exports/{job id}/. Only this module knows the layout.
import { readdir } from 'node:fs/promises';
import path from 'node:path';

export interface TaskFolder {
  root: string;
  /** The uploaded images and their .txt companions (GCP file, geo.txt), sent to the node as they are. */
  images: string;
  /** The task's outputs, extracted from the node's all.zip (ODM's layout). */
  assets: string;
  /** The console: the node's output lines, appended as they arrive. */
  console: string;
  /** Work in progress: all.zip being downloaded, an extraction not yet in place, chunks of uploads. */
  work: string;
  /** all.zip once completely downloaded (kept until its assets are in place, so an extraction can start over). */
  allZip: string;
  /** Products made elsewhere (tasks/import/external), staged under their asset names until imported. */
  external: string;
  /** The next assets folder, renamed into place when whole. */
  assetsNext: string;
  /** Where the previous assets folder goes while the next one is renamed into place. */
  assetsOld: string;
  /** Dropzone-style chunked uploads, one file per upload id. */
  chunks: string;
  /** A resize under way: the photographs' sizes and the GCP list as they were before it (resize.ts). */
  resizePlan: string;
  /** Tiles drawn in styles of the users' choosing, by layer and style; emptied when new assets arrive. */
  tileCache: string;
  /** Present while the ground control points have changed since the node last had the task's files. */
  gcpChanged: string;
}

/** Where imports by URL and chunked imports are put together before they become a task's. */
export const importStaging = (dataDir: string) => path.join(dataDir, 'media', 'tmp', 'imports');

/** Products made elsewhere being uploaded (tasks/import/external), a folder per project and upload id. */
export const externalStagingRoot = (dataDir: string) => path.join(dataDir, 'media', 'tmp', 'external');
export const externalStaging = (dataDir: string, projectId: number) => path.join(externalStagingRoot(dataDir), String(projectId));

/** Exports of tasks' products being made or kept for download, one folder per export job. */
export const exportsFolder = (dataDir: string) => path.join(dataDir, 'media', 'tmp', 'exports');

export interface ExportFolder {
  root: string;
  /** What was asked: the download's name and the result file's name (written once, before the work starts). */
  job: string;
  /** Touched while an instance of the service holds the job, queued or running: a stale one was abandoned. */
  alive: string;
  /** Why the export failed, when it did. */
  error: string;
  /** Written once the engine has finished the result: until then the result may be half written. */
  done: string;
  /** What the engine reads, where a request does not fit its command line (JSON). */
  input: string;
}

export function exportFolder(dataDir: string, id: string): ExportFolder {
  const root = path.join(exportsFolder(dataDir), id);
  const file = (name: string) => path.join(root, name);
  return { root, job: file('job.json'), alive: file('alive'), error: file('error.txt'), done: file('done'), input: file('input.json') };
}

/** A project's folder, which holds its tasks' folders. */
export const projectFolder = (dataDir: string, projectId: number) => path.join(dataDir, 'media', 'project', String(projectId));

export function taskFolder(dataDir: string, projectId: number, taskId: number): TaskFolder {
  const root = path.join(projectFolder(dataDir, projectId), 'task', String(taskId));
  const work = path.join(root, 'work');
  return {
    root,
    images: path.join(root, 'images'),
    assets: path.join(root, 'assets'),
    console: path.join(root, 'console.txt'),
    work,
    allZip: path.join(work, 'all.zip'),
    external: path.join(work, 'external'),
    assetsNext: path.join(work, 'assets.next'),
    assetsOld: path.join(work, 'assets.old'),
    chunks: path.join(work, 'chunks'),
    resizePlan: path.join(work, 'resize.json'),
    tileCache: path.join(root, 'tile-cache'),
    gcpChanged: path.join(work, 'gcp-changed'),
  };
}

/** The folders of every task that has files on disk, for the sweeps that go over all of them. */
export async function existingTaskFolders(dataDir: string): Promise<TaskFolder[]> {
  const projects = path.join(dataDir, 'media', 'project');
  const folders: TaskFolder[] = [];
  for (const project of await readdir(projects).catch(() => [])) {
    for (const task of await readdir(path.join(projects, project, 'task')).catch(() => [])) {
      if (/^\d+$/.test(project) && /^\d+$/.test(task)) folders.push(taskFolder(dataDir, Number(project), Number(task)));
    }
  }
  return folders;
}
