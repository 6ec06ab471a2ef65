// Names that come from clients (upload file names, zip entries, the `outputs` list) must never reach outside
// the folder they are meant for.
import fs from 'node:fs';
import path from 'node:path';

/** A relative path with forward slashes and no empty, `.` or `..` parts; null when the name is absolute, climbs
 * out, holds a NUL or names nothing. Backslashes count as separators (zip files made on Windows use them). */
export function safeRelativePath(name: string): string | null {
  if (name.includes('\0')) return null;
  const unified = name.replaceAll('\\', '/');
  if (unified.startsWith('/') || /^[a-zA-Z]:/.test(unified)) return null;
  const parts = unified.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.includes('..')) return null;
  return parts.join('/');
}

/** The last part of a client's file name, usable as a file name in one folder. */
export function safeFileName(name: string): string {
  const base = path.posix.basename(name.replaceAll('\\', '/')).replace(/[\0-\x1f]/g, '');
  return base === '' || base === '.' || base === '..' ? 'file' : base;
}

/** `name`, then `name_1`, `name_2`... (before the extension). */
export function* nameVariants(name: string): Generator<string> {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  yield name;
  for (let i = 1; ; i++) yield `${stem}_${i}${ext}`;
}

/** The first of `name`'s variants that does not exist yet in `dir`. Synchronous, so that no other request can
 * take the same name between the check and the caller's rename. */
export function freeName(dir: string, name: string): string {
  for (const candidate of nameVariants(name)) if (!fs.existsSync(path.join(dir, candidate))) return candidate;
  throw new Error('unreachable');
}

/** A name for a file being written in `dir`, hidden and unique, to be renamed into place when complete. */
export function partialName(dir: string): string {
  return path.join(dir, `.partial-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
}
