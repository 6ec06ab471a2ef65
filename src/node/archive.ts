// all.zip: the task's outputs in ODM's layout, streamed into a temporary file and renamed into place, so a
// client never downloads half an archive.
import fs from 'node:fs';
import { lstat, readdir, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { partialName, safeRelativePath } from '../files/safe-path.ts';

/** What all.zip holds when a task names no `outputs`: ODM's map products, reports and logs (DESIGN 3.3). */
export const DEFAULT_OUTPUTS: readonly string[] = [
  'odm_orthophoto/odm_orthophoto.tif',
  'odm_orthophoto/odm_orthophoto.tfw',
  'odm_orthophoto/odm_orthophoto.png',
  'odm_orthophoto/odm_orthophoto.wld',
  'odm_orthophoto/odm_orthophoto.mbtiles',
  'odm_orthophoto/odm_orthophoto.kmz',
  'odm_orthophoto/odm_orthophoto_extent.dxf',
  'odm_orthophoto/cutline.gpkg',
  'odm_georeferencing',
  'odm_texturing',
  'odm_texturing_25d',
  'odm_dem/dsm.tif',
  'odm_dem/dtm.tif',
  'odm_dem/dsm.mbtiles',
  'odm_dem/dtm.mbtiles',
  'odm_dem/dsm.euclideand.tif',
  'odm_dem/dtm.euclideand.tif',
  'dsm_tiles',
  'dtm_tiles',
  'orthophoto_tiles',
  'potree_pointcloud',
  'entwine_pointcloud',
  '3d_tiles',
  'images.json',
  'cameras.json',
  'task_output.txt',
  'log.json',
  'odm_report',
];

/** The `outputs` a client sent (a JSON list of paths): the safe relative paths in it. */
export function parseOutputs(value: unknown): string[] {
  const list: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (!Array.isArray(list)) throw new Error('outputs must be a JSON list of paths');
  return list.flatMap((p) => {
    const safe = typeof p === 'string' ? safeRelativePath(p) : null;
    return safe === null ? [] : [safe];
  });
}

interface ArchiveEntry {
  file: string;
  name: string;
  mtime: Date;
  mode: number;
}

// Only regular files that really lie under the task folder go in: neither a symbolic link nor a path through a
// linked folder may bring in a file from elsewhere on the machine.
async function* walk(root: string, name: string, skip: ReadonlySet<string>): AsyncGenerator<ArchiveEntry> {
  const file = path.join(root, name);
  if (skip.has(file)) return;
  let stat;
  try {
    stat = await lstat(file);
    if (!(await realpath(file)).startsWith(root + path.sep)) return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (stat.isFile()) {
    yield { file, name, mtime: stat.mtime, mode: stat.mode };
  } else if (stat.isDirectory()) {
    for (const child of (await readdir(file)).sort()) yield* walk(root, path.posix.join(name, child), skip);
  }
}

/** Writes the zip of `paths` (relative to `root`; missing ones skipped) to `dest`; returns the file count. Files
 * are stored, not deflated: map products are compressed already and the archive is built at disk speed. */
export async function buildArchive(
  root: string,
  paths: readonly string[],
  dest: string,
  signal?: AbortSignal,
): Promise<number> {
  const base = await realpath(root);
  const tmp = partialName(path.dirname(dest));
  const zip = new yazl.ZipFile();
  const failed = new AbortController();
  const stop = signal ? AbortSignal.any([signal, failed.signal]) : failed.signal;
  const written = pipeline(zip.outputStream, fs.createWriteStream(tmp), { signal: stop });
  let count = 0;
  try {
    const seen = new Set<string>();
    // The archive never holds itself, whatever the outputs list names.
    const skip = new Set([dest, tmp].map((f) => path.join(base, path.relative(root, f))));
    for (const p of paths) {
      for await (const entry of walk(base, p, skip)) {
        stop.throwIfAborted();
        if (seen.has(entry.name)) continue;
        seen.add(entry.name);
        zip.addFile(entry.file, entry.name, { compress: false, mtime: entry.mtime, mode: entry.mode });
        count++;
      }
    }
    zip.end();
    await written;
    await rename(tmp, dest);
    return count;
  } catch (err) {
    failed.abort(err);
    await written.catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
}
