// What may still be stored: the disk's reserve (MIN_FREE_DISK_GB, kept free for everyone) and the quota of the
// project's owner (WebODM's profiles). Uploads and imports are checked before anything is written, and stopped
// as they come once they would take the disk into its reserve.
import { Transform } from 'node:stream';
import type { Kysely } from 'kysely';
import { diskRoom } from '../../files/disk.ts';
import { projectOwnerQuota, usedBytes } from '../../db/quotas.ts';
import type { Database } from '../../db/schema.ts';
import { HttpError } from '../errors.ts';
import type { StepContext } from './context.ts';

export const MB = 2 ** 20;

export interface StorageSettings {
  dataDir: string;
  /** Disk space kept free (MIN_FREE_DISK_GB). */
  minFreeBytes: number;
}

/** 507 Insufficient Storage: what WebODM's clients take for a server short of space. */
export function insufficientStorage(reserveBytes: number): HttpError {
  return new HttpError(507, {
    detail: `The server's disk is nearly full (it keeps ${Math.round(reserveBytes / MB)} MB free); nothing more can be stored now, try again later.`,
  });
}

/** The bytes that the files of one request may write in all; a stream that would write more stops with a 507. */
export class WriteBudget {
  constructor(
    private left: number,
    private readonly reserveBytes: number,
  ) {}

  meter(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding, callback) => {
        this.left -= chunk.length;
        if (this.left < 0) return callback(insufficientStorage(this.reserveBytes));
        callback(null, chunk);
      },
    });
  }
}

export async function diskBudget(settings: StorageSettings): Promise<WriteBudget> {
  const room = await diskRoom(settings.dataDir, settings.minFreeBytes);
  if (room <= 0) throw insufficientStorage(settings.minFreeBytes);
  return new WriteBudget(room, settings.minFreeBytes);
}

async function requireQuota(db: Kysely<Database>, projectId: number): Promise<void> {
  const owner = await projectOwnerQuota(db, projectId);
  if (!owner || owner.quota <= 0) return;
  const used = await usedBytes(db, owner.user);
  if (used < owner.quota * MB) return;
  throw new HttpError(403, {
    detail: `The storage quota of this project's owner (${owner.quota} MB) is used up (${Math.round(used / MB)} MB used); remove tasks to make room.`,
  });
}

/** Checks the quota of the project's owner, then the disk, before an upload or import into the project. */
export async function admitUpload(db: Kysely<Database>, settings: StorageSettings, projectId: number): Promise<WriteBudget> {
  await requireQuota(db, projectId);
  return diskBudget(settings);
}

/**
 * Results are downloaded only while the disk has room above its reserve; until then the task waits, its
 * results kept by the node. Answers when to look again, or null when there is room.
 */
export async function waitForDiskRoom(ctx: StepContext): Promise<number | null> {
  const { dataDir, minFreeBytes, retryMs } = ctx.settings;
  if ((await diskRoom(dataDir, minFreeBytes)) > 0) return null;
  ctx.log.warn({ task: ctx.task.id }, `the disk is within its reserve of ${Math.round(minFreeBytes / MB)} MB: the results wait`);
  return retryMs;
}
