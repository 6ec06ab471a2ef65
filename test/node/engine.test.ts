import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeEngine, failureMessage, type EngineExit } from '../../src/node/engine.ts';

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
