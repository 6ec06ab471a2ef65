// Zip files that clients upload (seed.zip, zips of images, zipurl, imported task results). Entries are checked
// before anything is written: absolute paths and paths that climb out refuse the whole archive, links are never
// created, and each file is written under a temporary name and renamed into place. With limits, an archive
// that declares more files or bytes than allowed is refused before anything is written (zip bombs), and yauzl
// checks every entry against its declared size as it inflates.
import fs from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { freeName, partialName, safeFileName, safeRelativePath } from './safe-path.ts';

/** 'tree' keeps the archive's folders (seed.zip); 'flat' puts every file in one folder (images). */
export type ZipLayout = 'tree' | 'flat';

export interface ZipLimits {
  maxEntries: number;
  maxBytes: number;
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

function isSymlink(entry: yauzl.Entry): boolean {
  return ((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK;
}

function isDirectory(entry: yauzl.Entry): boolean {
  return entry.fileName.endsWith('/');
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, validateEntrySizes: true }, (err, zip) =>
      err ? reject(err) : resolve(zip),
    ),
  );
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) =>
    zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream))),
  );
}

/** Where an entry goes under `dest`, or null for entries that are skipped (folders, links, flat-layout junk). */
function target(entry: yauzl.Entry, dest: string, layout: ZipLayout): string | null {
  if (isDirectory(entry) || isSymlink(entry)) return null;
  const relative = safeRelativePath(entry.fileName);
  if (relative === null) throw new Error(`unsafe path ${JSON.stringify(entry.fileName)}`);
  if (layout === 'tree') {
    const file = path.resolve(dest, relative);
    if (!file.startsWith(path.resolve(dest) + path.sep)) throw new Error(`unsafe path ${entry.fileName}`);
    return file;
  }
  const name = safeFileName(relative);
  // Resource forks and hidden files that archivers on some systems add are not images.
  if (name.startsWith('.') || relative.startsWith('__MACOSX/')) return null;
  return path.join(dest, freeName(dest, name));
}

async function writeEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, file: string, signal?: AbortSignal): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = partialName(path.dirname(file));
  try {
    await pipeline(await openEntry(zip, entry), fs.createWriteStream(tmp), { signal });
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Reads every entry's header (yauzl refuses names that are absolute or climb out); `visit` may throw to stop. */
async function forEachEntry(zipFile: string, visit: (entry: yauzl.Entry) => void): Promise<void> {
  const zip = await openZip(zipFile);
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        try {
          visit(entry);
        } catch (err) {
          reject(err);
          return;
        }
        zip.readEntry();
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

/** Refuses an archive whose declared contents exceed the limits. */
async function checkLimits(zipFile: string, limits: ZipLimits): Promise<void> {
  let entries = 0;
  let bytes = 0;
  await forEachEntry(zipFile, (entry) => {
    entries++;
    bytes += entry.uncompressedSize;
    if (entries > limits.maxEntries) throw new Error(`more than ${limits.maxEntries} files`);
    if (bytes > limits.maxBytes) throw new Error(`more than ${limits.maxBytes} bytes once extracted`);
  });
}

/**
 * Checks, from the headers alone, that an archive can be read and that none of its entries would land outside
 * the folder it is extracted to (zip-slip), so that an upload can be refused at once.
 */
export async function checkEntryNames(zipFile: string): Promise<void> {
  await forEachEntry(zipFile, (entry) => {
    if (!isDirectory(entry) && safeRelativePath(entry.fileName) === null) throw new Error(`unsafe path ${JSON.stringify(entry.fileName)}`);
  });
}

/**
 * Extracts `zipFile` into `dest`; returns the paths written. Throws on an unsafe, oversized or broken archive,
 * and with the signal's reason once it is aborted (in the middle of an entry, or before the next).
 */
export async function extractZip(
  zipFile: string,
  dest: string,
  layout: ZipLayout,
  limits?: ZipLimits,
  signal?: AbortSignal,
): Promise<string[]> {
  const label = path.basename(zipFile);
  let zip: yauzl.ZipFile;
  try {
    if (limits) await checkLimits(zipFile, limits);
    zip = await openZip(zipFile);
  } catch (err) {
    throw new Error(`Cannot read ${label}: ${(err as Error).message}`);
  }
  const written: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        let file: string | null;
        try {
          signal?.throwIfAborted();
          file = target(entry, dest, layout);
        } catch (err) {
          reject(err);
          return;
        }
        if (file === null) {
          zip.readEntry();
          return;
        }
        const chosen = file;
        writeEntry(zip, entry, chosen, signal).then(() => {
          written.push(chosen);
          zip.readEntry();
        }, reject);
      });
      zip.readEntry();
    });
  } catch (err) {
    signal?.throwIfAborted();
    throw new Error(`Cannot extract ${label}: ${(err as Error).message}`);
  } finally {
    zip.close();
  }
  return written;
}
