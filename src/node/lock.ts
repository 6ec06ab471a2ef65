// One processing node per data folder: two would run the same queue in the same task folders, and the second
// would stop the first one's engines as leftovers. The lock is a file holding the owner's process id; a lock
// whose process is gone (a crash) is taken over.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The folder is held by a node that is still running. */
export class FolderInUseError extends Error {}

/** Takes the data folder's lock; answers the function that releases it. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'node.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(owner) && owner > 0 && alive(owner)) {
      throw new FolderInUseError(`Another processing node (process ${owner}) uses ${dataDir}; give this one its own --data-dir`);
    }
    rmSync(file, { force: true });
  }
  throw new Error(`Cannot take the lock of ${dataDir}`);
}
