import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTPUTS, buildArchive, parseOutputs } from '../../src/node/archive.ts';
import { extractZip } from '../../src/files/zip-extract.ts';
import { safeRelativePath } from '../../src/files/safe-path.ts';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'zip-'));
}

interface Entry {
  name: string;
  data?: string;
  symlinkTo?: string;
}

/** A zip with the given entries. yazl refuses unsafe names, so they are written under a same-length safe name
 * and patched into the bytes afterwards, as a hostile archiver would leave them. */
async function makeZip(file: string, entries: Entry[]): Promise<void> {
  const zip = new yazl.ZipFile();
  const patches: [string, string][] = [];
  entries.forEach((entry, i) => {
    const safe = entry.name.replace(/^\//, 'r').replaceAll('..', `x${i % 10}`);
    if (safe !== entry.name) patches.push([safe, entry.name]);
    if (safe.endsWith('/')) zip.addEmptyDirectory(safe);
    else zip.addBuffer(Buffer.from(entry.symlinkTo ?? entry.data ?? 'x'), safe, entry.symlinkTo ? { mode: 0o120777 } : {});
  });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  let bytes = Buffer.concat(chunks);
  for (const [from, to] of patches) {
    bytes = Buffer.from(bytes.toString('latin1').replaceAll(from, to), 'latin1');
  }
  fs.writeFileSync(file, bytes);
}

function listZip(file: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    yauzl.open(file, { lazyEntries: false }, (err, zip) => {
      if (err) return reject(err);
      const names: string[] = [];
      zip.on('entry', (e: yauzl.Entry) => names.push(e.fileName));
      zip.on('end', () => resolve(names));
      zip.on('error', reject);
    }),
  );
}

function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((p) => fs.lstatSync(path.join(dir, p)).isFile())
    .sort();
}

describe('safe relative paths', () => {
  it('refuses absolute paths, climbing out and NUL; normalises the rest', () => {
    for (const bad of ['/etc/passwd', '../x', 'a/../../x', 'a/..', 'C:/x', 'c:x', '\\\\server\\x', '..\\x', 'a\0b', '', '.', './']) {
      expect(safeRelativePath(bad), JSON.stringify(bad)).toBeNull();
    }
    expect(safeRelativePath('./a//b/./c.txt')).toBe('a/b/c.txt');
    expect(safeRelativePath('odm_dem\\dsm.tif')).toBe('odm_dem/dsm.tif');
  });

  it('keeps only the safe paths of an outputs list', () => {
    expect(parseOutputs('["odm_dem", "../etc", "/abs", 3, "a/./b"]')).toEqual(['odm_dem', 'a/b']);
    expect(() => parseOutputs('{"a": 1}')).toThrow('JSON list');
  });
});

describe('zip extraction', () => {
  it('keeps folders in tree layout and flattens in flat layout, never overwriting', async () => {
    const dir = tempDir();
    const zip = path.join(dir, 'in.zip');
    await makeZip(zip, [
      { name: 'opensfm/a.json', data: '1' },
      { name: 'b/a.json', data: '2' },
      { name: '__MACOSX/._a.json' },
      { name: 'folder/' },
    ]);
    const tree = path.join(dir, 'tree');
    fs.mkdirSync(tree);
    await extractZip(zip, tree, 'tree');
    expect(filesUnder(tree)).toEqual(['__MACOSX/._a.json', 'b/a.json', 'opensfm/a.json']);
    const flat = path.join(dir, 'flat');
    fs.mkdirSync(flat);
    fs.writeFileSync(path.join(flat, 'a.json'), 'existing');
    await extractZip(zip, flat, 'flat');
    expect(filesUnder(flat)).toEqual(['a.json', 'a_1.json', 'a_2.json']);
    expect(fs.readFileSync(path.join(flat, 'a.json'), 'utf8')).toBe('existing');
  });

  it.each([
    ['climbing out', '../../evil.txt'],
    ['climbing out in the middle', 'a/../../evil.txt'],
    ['an absolute path', '/tmp/evil.txt'],
  ])('refuses an archive with %s and writes nothing outside', async (_label, name) => {
    const dir = tempDir();
    const zip = path.join(dir, 'seed.zip');
    await makeZip(zip, [{ name }]);
    const dest = path.join(dir, 'a', 'b');
    fs.mkdirSync(dest, { recursive: true });
    await expect(extractZip(zip, dest, 'tree')).rejects.toThrow(/^Cannot extract seed\.zip: .*path/);
    expect(filesUnder(dir)).toEqual(['seed.zip']);
  });

  it('never creates symbolic links', async () => {
    const dir = tempDir();
    const zip = path.join(dir, 'links.zip');
    await makeZip(zip, [{ name: 'link', symlinkTo: '/etc/passwd' }, { name: 'real.txt', data: 'ok' }]);
    const dest = path.join(dir, 'out');
    fs.mkdirSync(dest);
    await extractZip(zip, dest, 'tree');
    expect(fs.readdirSync(dest)).toEqual(['real.txt']);
  });

  it('refuses a file that is not a zip', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'broken.zip'), 'not a zip');
    await expect(extractZip(path.join(dir, 'broken.zip'), dir, 'flat')).rejects.toThrow('broken.zip');
  });
});

describe('all.zip', () => {
  it('holds the default outputs that exist, only regular files, and never itself', async () => {
    const root = tempDir();
    const write = (p: string, data = 'x'): void => {
      fs.mkdirSync(path.dirname(path.join(root, p)), { recursive: true });
      fs.writeFileSync(path.join(root, p), data);
    };
    write('odm_orthophoto/odm_orthophoto.tif');
    write('odm_orthophoto/other.tif');
    write('odm_report/stats.json');
    write('odm_report/sub/shots.geojson');
    write('images/IMG.JPG');
    write('task_output.txt');
    fs.symlinkSync('/etc/passwd', path.join(root, 'odm_report', 'passwd'));
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'secret.obj'), 'x');
    fs.symlinkSync(outside, path.join(root, 'odm_texturing'));
    const dest = path.join(root, 'all.zip');
    const count = await buildArchive(root, [...DEFAULT_OUTPUTS, 'all.zip', 'odm_texturing/secret.obj'], dest);
    expect(count).toBe(4);
    expect((await listZip(dest)).sort()).toEqual([
      'odm_orthophoto/odm_orthophoto.tif',
      'odm_report/stats.json',
      'odm_report/sub/shots.geojson',
      'task_output.txt',
    ]);
    expect(fs.readdirSync(root).filter((n) => n.startsWith('.partial'))).toEqual([]);
  });

  it('leaves no archive behind when stopped', async () => {
    const root = tempDir();
    fs.writeFileSync(path.join(root, 'images.json'), 'x'.repeat(1 << 20));
    const stop = new AbortController();
    stop.abort();
    await expect(buildArchive(root, ['images.json'], path.join(root, 'all.zip'), stop.signal)).rejects.toThrow();
    expect(fs.readdirSync(root)).toEqual(['images.json']);
  });
});
