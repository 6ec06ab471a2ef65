import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { groupHeldBytes, residentBytesOf } from '../../src/node/memory.ts';

const MB = 2 ** 20;
const PYTHON = fileURLToPath(new URL('../../engine/.venv/bin/python', import.meta.url));
// 300 MB written, then a fork: both processes show them resident, but they are one copy.
const FORKING = [
  'import os, sys, time',
  'data = b"x" * (300 * 2**20)',
  'child = os.fork()',
  'if child:',
  '    print(child, flush=True)',
  'time.sleep(60)',
].join('\n');

describe('the memory an engine run holds', () => {
  it('counts the pages a forked worker shares with its parent once', async () => {
    const group = spawn(PYTHON, ['-c', FORKING], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const [line] = (await once(createInterface({ input: group.stdout! }), 'line')) as [string];
      const pids = [group.pid!, Number(line)];
      const resident = (await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/status`, 'utf8'))))
        .reduce((sum, status) => sum + residentBytesOf(status), 0);
      const held = await groupHeldBytes(group.pid!);
      expect(resident).toBeGreaterThan(600 * MB);
      expect(held).toBeGreaterThan(300 * MB);
      expect(held).toBeLessThan(400 * MB);
    } finally {
      process.kill(-group.pid!, 'SIGKILL');
    }
  });
});
