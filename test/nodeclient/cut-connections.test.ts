// Downloads from a node that closes the connection part-way through every answer, as ClusterODM does, run in a
// process of their own: a fetch engine that fails there (undici 7 asserts `!this.paused` and takes the whole
// process down) shows as the child's exit instead of ending the test run. And the processes Aeromap starts load
// no fetch engine besides Node's own, which would take over the global fetch of every transfer.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../service/taskhelpers.ts';

/** Runs ES module code in a Node process that reads TypeScript, from the repository root. */
function runModule(code: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const tsx = path.join(REPO, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
  const child = spawn(process.execPath, ['--import', tsx, '--input-type=module', '-e', code], { cwd: REPO });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (exit) => resolve({ code: exit, stdout, stderr })));
}

describe('transfers over connections that the server closes', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'aeromap-cut-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('loads no fetch engine of its own in the service, the node or the command line', async () => {
    const run = await runModule(`
      await import('./src/node/index.ts');
      await import('./src/process/command.ts');
      await import('./src/service/cli.ts');
      console.log(globalThis[Symbol.for('undici.globalDispatcher.1')] === undefined ? 'none' : 'installed');
    `);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('none');
  }, 60_000);

  it('downloads all.zip whole in a process running the service, resuming after every cut', async () => {
    // The server runs in the child too: sharing its event loop, the download falls behind, as one to a slow disk does.
    const target = path.join(dir, 'all.zip');
    const run = await runModule(`
      // In the order src/cli.ts loads them, as \`aeromap serve\` runs.
      await import('./src/node/index.ts');
      await import('./src/process/command.ts');
      await import('./src/service/cli.ts');
      const { NodeClient } = await import('./src/nodeclient/index.ts');
      const { startCuttingServer } = await import('./test/nodeclient/cutting-server.ts');
      const server = await startCuttingServer(64 * 2 ** 20);
      const client = new NodeClient({ hostname: '127.0.0.1', port: server.port });
      await client.downloadAllZip('abc', ${JSON.stringify(target)}, { chunkBytes: 32 * 2 ** 20 });
      await server.close();
      console.log(JSON.stringify({ sha256: server.sha256, ranges: server.ranges }));
    `);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const { sha256, ranges } = JSON.parse(run.stdout) as { sha256: string; ranges: string[] };
    expect(createHash('sha256').update(await readFile(target)).digest('hex')).toBe(sha256);
    // Every answer was cut, and each next piece began after the bytes the last one brought.
    const starts = ranges.map((range) => Number(/^bytes=(\d+)-/.exec(range)?.[1]));
    expect(starts.length).toBeGreaterThan(4);
    for (let i = 1; i < starts.length; i++) expect(starts[i]).toBeGreaterThanOrEqual(starts[i - 1]);
    expect(starts.slice(1).every((start) => start > 0)).toBe(true);
  }, 120_000);
});
