import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeEngine, failureMessage, spawnEngine, type EngineExit } from '../../src/protocol/engine.ts';

const exit = (changes: Partial<EngineExit>): EngineExit => ({
  code: null,
  signal: null,
  spawnError: null,
  lastError: null,
  ...changes,
});

describe('engine exit codes', () => {
  it('maps each exit to a message, with the engine reason when it gave one', () => {
    expect(failureMessage(exit({ code: 0 }))).toBeNull();
    expect(failureMessage(exit({ code: 3, lastError: 'Need at least 2 readable images' }))).toBe(
      'Cannot process dataset: Need at least 2 readable images',
    );
    expect(failureMessage(exit({ code: 2, lastError: 'bad' }))).toBe('Invalid options: bad');
    expect(failureMessage(exit({ code: 1 }))).toBe('Processing failed');
    expect(failureMessage(exit({ code: 42 }))).toBe('Processing failed (exit code 42)');
    expect(failureMessage(exit({ signal: 'SIGKILL' }))).toMatch(/^Not enough memory/);
    expect(failureMessage(exit({ signal: 'SIGSEGV' }))).toBe('The engine stopped on signal SIGSEGV');
    expect(failureMessage(exit({ spawnError: new Error('spawn x ENOENT') }))).toBe(
      'Could not start the engine (spawn x ENOENT)',
    );
  });
});

describe('engine description', () => {
  function script(body: string): string {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'engine-')), 'engine');
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return file;
  }

  it('refuses an engine whose options are not in the NodeODM format', async () => {
    const engine = script('if [ "$1" = options ]; then echo \'[{"name": "x", "type": "int"}]\'; else echo 1.0; fi');
    await expect(describeEngine(engine)).rejects.toThrow('did not print a list');
  });

  it('stops an engine that does not answer, and says so', async () => {
    const started = Date.now();
    await expect(describeEngine(script('sleep 30'), 500)).rejects.toThrow('no answer within 0.5 s');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('says which command could not run', async () => {
    await expect(describeEngine('/nonexistent/engine')).rejects.toThrow('Cannot run the engine');
  });
});

describe('engine environment', () => {
  const SECRETS = { SECRET_KEY: 'signing-key', DATABASE_URL: 'postgres://aeromap:db-password@db/aeromap', AEROMAP_ADMIN_PASSWORD: 'admin-password' };

  it('passes a run none of the service\'s secrets, and what the engine and its libraries read', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, SECRETS, { OMP_NUM_THREADS: '2', AEROMAP_ENGINE_DEBUG: '1', LC_ALL: 'C.UTF-8' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-env-'));
    const engine = path.join(dir, 'engine');
    fs.writeFileSync(engine, '#!/bin/sh\nenv\n', { mode: 0o755 });
    try {
      const lines: string[] = [];
      const run = spawnEngine(engine, dir, path.join(dir, 'options.json'), { allowPrivateUrls: false, maxMemoryBytes: 2 ** 30 }, {
        onLine: (line) => lines.push(line),
        onProgress: () => {},
      });
      expect((await run.exited).code).toBe(0);
      const seen = Object.fromEntries(lines.map((line) => line.split('=', 2)));
      for (const name of Object.keys(SECRETS)) expect(seen, name).not.toHaveProperty(name);
      expect(lines.join('\n')).not.toMatch(/signing-key|db-password|admin-password/);
      expect(seen).toMatchObject({
        PATH: process.env.PATH,
        OMP_NUM_THREADS: '2',
        AEROMAP_ENGINE_DEBUG: '1',
        LC_ALL: 'C.UTF-8',
        AEROMAP_PUBLIC_URLS_ONLY: '1',
        AEROMAP_MEMORY_LIMIT: String(2 ** 30),
      });
    } finally {
      process.env = saved;
    }
  });
});
