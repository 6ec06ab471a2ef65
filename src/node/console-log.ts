// A task's console output: a text file, one line per console line, appended as the engine prints, so a crash
// of the node loses nothing already printed. Reads go through an index of line offsets, so a client polling
// for new lines reads only those.
import fs from 'node:fs';
import path from 'node:path';

/** Where Array.prototype.slice(line) would start on `length` lines (NodeODM's `?line=` semantics: negative
 * values count from the end; missing or non-numeric values mean 0). */
export function sliceStart(line: unknown, length: number): number {
  const n = Math.trunc(Number(line ?? 0));
  if (Number.isNaN(n)) return 0;
  if (n < 0) return Math.max(length + n, 0);
  return Math.min(n, length);
}

export class ConsoleLog {
  /** Byte offset where each line starts, plus the file size at the end; loaded on first use. */
  private offsets: number[] | null = null;

  constructor(readonly file: string) {}

  private index(): number[] {
    if (this.offsets) return this.offsets;
    let content: Buffer;
    try {
      content = fs.readFileSync(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      content = Buffer.alloc(0);
    }
    const offsets = [0];
    for (let i = content.indexOf(10); i !== -1; i = content.indexOf(10, i + 1)) offsets.push(i + 1);
    if (offsets[offsets.length - 1] !== content.length) {
      // A line cut short by a crash: end it so the next append starts a line of its own.
      fs.appendFileSync(this.file, '\n');
      offsets.push(content.length + 1);
    }
    this.offsets = offsets;
    return offsets;
  }

  get length(): number {
    return this.index().length - 1;
  }

  append(...lines: string[]): void {
    if (lines.length === 0) return;
    const offsets = this.index();
    const clean = lines.map((l) => l.replaceAll('\n', ' '));
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.appendFileSync(this.file, clean.join('\n') + '\n');
    let end = offsets[offsets.length - 1];
    for (const line of clean) {
      end += Buffer.byteLength(line) + 1;
      offsets.push(end);
    }
  }

  /** The lines from `line` on, with slice semantics. */
  read(line?: unknown): string[] {
    const offsets = this.index();
    const start = sliceStart(line, offsets.length - 1);
    const from = offsets[start];
    const to = offsets[offsets.length - 1];
    if (to <= from) return [];
    const buffer = Buffer.alloc(to - from);
    const fd = fs.openSync(this.file, 'r');
    try {
      fs.readSync(fd, buffer, 0, buffer.length, from);
    } finally {
      fs.closeSync(fd);
    }
    return buffer.toString('utf8').slice(0, -1).split('\n');
  }

  clear(): void {
    fs.rmSync(this.file, { force: true });
    this.offsets = [0];
  }
}
