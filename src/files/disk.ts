// The free space of a disk, as the service and the node keep a reserve of it.
import { statfs } from 'node:fs/promises';

/** Bytes that may still be written under `dir` before its disk reaches the reserve (negative once below it). */
export async function diskRoom(dir: string, reserveBytes: number): Promise<number> {
  const disk = await statfs(dir);
  return disk.bavail * disk.bsize - reserveBytes;
}
