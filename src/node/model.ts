// The task as the NodeODM API 2.x sees it: the records the node keeps and the info it answers.
import type { OptionValue } from '../protocol/options.ts';
import { TaskStatus, type TaskStatusCode } from '../protocol/status.ts';

/** What a client says about a new task besides its files (the fields of /task/new and /task/new/init). */
export interface TaskFields {
  name: string;
  options: OptionValue[];
  /** Option names the client sent that the engine does not have: left out, and named in the console. */
  ignoredOptions?: string[];
  webhook: string | null;
  skipPostProcessing: boolean;
  /** Paths (relative to the task folder) that all.zip holds instead of the default list; null: the default. */
  outputs: string[] | null;
  dateCreated: number;
}

/** A task as stored: every field survives a restart of the node. Times are ms since the epoch. */
export interface TaskRecord extends TaskFields {
  uuid: string;
  status: TaskStatusCode;
  errorMessage: string | null;
  imagesCount: number;
  progress: number;
  /** Order in the queue: the time the task was last queued. */
  queuedAt: number;
  /** Start of the current run (kept when a run resumes after a restart of the node); null before any. */
  startedAt: number | null;
  finishedAt: number | null;
  /** Process group of the running engine, so that a restarted node can stop an engine left behind. */
  enginePid: number | null;
  /** The engine has begun the current run (its stage markers reflect it), so a resumed run must not re-apply
   * rerun-from, which would throw away the stages this run already finished. */
  engineStarted: boolean;
}

/** A chunked upload between /task/new/init and /task/new/commit. */
export interface PendingUpload {
  uuid: string;
  fields: TaskFields;
  createdAt: number;
}

/** The TaskInfo object of the NodeODM API. */
export interface TaskInfo {
  uuid: string;
  name: string;
  dateCreated: number;
  processingTime: number;
  status: { code: TaskStatusCode; errorMessage?: string };
  options: OptionValue[];
  imagesCount: number;
  progress: number;
  output?: string[];
}

function processingTime(task: TaskRecord, now: number): number {
  if (task.startedAt === null) return -1;
  return (task.finishedAt ?? now) - task.startedAt;
}

export function taskInfo(task: TaskRecord, now: number): TaskInfo {
  const status: TaskInfo['status'] = { code: task.status };
  if (task.status === TaskStatus.FAILED) status.errorMessage = task.errorMessage ?? '';
  return {
    uuid: task.uuid,
    name: task.name,
    dateCreated: task.dateCreated,
    processingTime: processingTime(task, now),
    status,
    options: task.options,
    imagesCount: task.imagesCount,
    progress: task.progress,
  };
}
