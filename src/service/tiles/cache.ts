// The bound of the tiles drawn in users' styles (TILE_CACHE_MB), over every task's tile-cache/ folder: each
// distinct style (a `rescale` a user drags, say) makes a folder of its own, so without a bound the cache grows
// with every value tried. Files are known in the order they were last used; past the bound the least recently
// used are deleted. The index starts from the files already on disk, oldest first.
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { existingTaskFolders } from '../layout.ts';

/** Even an empty file (the mark of a tile with nothing in it) takes a block of the disk. */
const BLOCK = 4096;

async function filesIn(dir: string): Promise<{ file: string; size: number; mtimeMs: number }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  const infos = await Promise.all(files.map((file) => stat(file).then((info) => ({ file, size: info.size, mtimeMs: info.mtimeMs }), () => null)));
  return infos.filter((info) => info !== null);
}

export class TileCache {
  /** Cached files and the bytes each takes, least recently used first. */
  private readonly used = new Map<string, number>();
  private total = 0;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly maxBytes: number,
  ) {}

  /** A cached file was read: it becomes the most recently used. */
  touch(file: string): void {
    const size = this.used.get(file);
    if (size === undefined) return;
    this.used.delete(file);
    this.used.set(file, size);
  }

  /** A file was written to the cache; the least recently used go until the cache is within its bound. */
  async add(file: string, bytes: number): Promise<void> {
    await this.load();
    this.forget(file);
    const size = Math.max(BLOCK, bytes);
    this.used.set(file, size);
    this.total += size;
    await this.evict();
  }

  private forget(file: string): void {
    this.total -= this.used.get(file) ?? 0;
    this.used.delete(file);
  }

  private async evict(): Promise<void> {
    for (const file of this.used.keys()) {
      if (this.total <= this.maxBytes) return;
      this.forget(file);
      await rm(file, { force: true });
    }
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      const found = [];
      for (const folder of await existingTaskFolders(this.dataDir)) found.push(...(await filesIn(folder.tileCache)));
      for (const { file, size } of found.sort((a, b) => a.mtimeMs - b.mtimeMs)) {
        if (this.used.has(file)) continue;
        this.used.set(file, Math.max(BLOCK, size));
        this.total += Math.max(BLOCK, size);
      }
    })();
    return this.loading;
  }
}
