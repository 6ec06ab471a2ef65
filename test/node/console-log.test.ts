import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConsoleLog, sliceStart } from '../../src/node/console-log.ts';

const tempDirs: string[] = [];
afterAll(() => tempDirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aeromap-console-'));
  tempDirs.push(dir);
  return path.join(dir, 'console.txt');
}

describe('console output paging', () => {
  it('starts where Array.prototype.slice would', () => {
    const lines = ['a', 'b', 'c', 'd'];
    for (const line of [0, 1, 3, 4, 9, -1, -3, -4, -10, '2', '-2', '1.7', 'abc', undefined, '']) {
      expect(lines.slice(sliceStart(line, lines.length)), `line=${String(line)}`).toEqual(
        lines.slice(Number.isNaN(Math.trunc(Number(line ?? 0))) ? 0 : Math.trunc(Number(line ?? 0))),
      );
    }
  });

  it('appends lines to disk and reads them back from any line, also after a reopen', () => {
    const file = tempFile();
    const log = new ConsoleLog(file);
    expect(log.read()).toEqual([]);
    log.append('first', 'zweite Zeile: ü');
    log.append('third');
    expect(fs.readFileSync(file, 'utf8')).toBe('first\nzweite Zeile: ü\nthird\n');
    expect(log.read(1)).toEqual(['zweite Zeile: ü', 'third']);
    expect(log.read(-1)).toEqual(['third']);
    const reopened = new ConsoleLog(file);
    expect(reopened.length).toBe(3);
    expect(reopened.read('-2')).toEqual(['zweite Zeile: ü', 'third']);
    expect(reopened.read(3)).toEqual([]);
  });

  it('keeps one line per entry and recovers from a line cut short by a crash', () => {
    const file = tempFile();
    fs.writeFileSync(file, 'whole\ncut sho');
    const log = new ConsoleLog(file);
    log.append('multi\nline');
    expect(log.read()).toEqual(['whole', 'cut sho', 'multi line']);
    log.clear();
    expect(log.read()).toEqual([]);
    expect(fs.existsSync(file)).toBe(false);
  });
});
