// One processing node per data folder: two would run the same queue in the same task folders, and the second
// would stop the first one's engines as leftovers. The lock is the kernel's: `node.lock` is an SQLite database
// that the node holds exclusively for as long as it runs, so the lock goes with the process however it ends,
// and a process id reused in a container can never pass for the owner.
import { truncateSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/** The folder is held by a node that is still running. */
export class FolderInUseError extends Error {}

function holdExclusively(file: string): Database.Database {
  // No wait: a held lock means another node, not a moment's contention.
  const db = new Database(file, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = OFF');
    // In exclusive locking mode, the lock a write takes is kept until the connection closes.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Takes the data folder's lock; answers the function that releases it. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'node.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      const db = holdExclusively(file);
      return () => db.close();
    } catch (err) {
      if (!(err instanceof Database.SqliteError)) throw err;
      if (err.code === 'SQLITE_BUSY') {
        throw new FolderInUseError(`Another processing node uses ${dataDir}; give this one its own --data-dir`);
      }
      if (err.code !== 'SQLITE_NOTADB' || attempt > 0) throw err;
      // Earlier versions wrote the owner's process id here. Emptied in place rather than replaced, so that two
      // nodes starting together still contend for one and the same file.
      truncateSync(file);
    }
  }
}
