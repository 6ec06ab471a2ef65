// `aeromap process` as a user runs it from a shell: the real engine on a few Brighton Beach photographs scaled
// down, locally and through a local `aeromap node`; a mistyped flag; a run interrupted with Ctrl-C and resumed.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningNode, startNode } from '../src/node/index.ts';
import { LONG, REPO, brightonCopies, python } from './service/taskhelpers.ts';

const NAMES = ['DJI_0027.JPG', 'DJI_0028.JPG', 'DJI_0029.JPG', 'DJI_0030.JPG'];
// No textured model and the lightest dense cloud: the real-engine task tests download and open a model, the
// engine's suite checks the cloud; here they would only add time.
const OPTIONS = ['--feature-quality', 'ultra', '--pc-quality', 'lowest', '--dsm', '--skip-3dmodel'];
// The stages after the one a test looks at only add time there: the local run above makes every product.
const TO_DENSE = [...OPTIONS, '--end-with', 'openmvs'];
const TO_DSM = [...OPTIONS, '--end-with', 'odm_dem'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/aeromap process ...`; `onOutput` sees stdout as it grows and may act on the child. */
function aeromapProcess(args: string[], onOutput?: (stdout: string, child: ChildProcess) => void): Promise<Run> {
  const child = spawn(path.join(REPO, 'bin', 'aeromap'), ['process', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    onOutput?.(stdout, child);
  });
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('aeromap process', () => {
  let work: string;
  let photos: string[];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-process-'));
    photos = await brightonCopies(path.join(work, 'photos'), NAMES, 1000);
  }, 60_000);
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** A folder holding only the photographs, as a user has them. */
  async function photoFolder(name: string): Promise<string> {
    const folder = path.join(work, name);
    await mkdir(folder);
    python('import shutil, sys\nfor f in sys.argv[2:]: shutil.copy(f, sys.argv[1])', folder, ...photos);
    return folder;
  }

  // Each call asks the engine for its options (seconds on a loaded machine): the flags' other answers are in
  // test/process/flags.test.ts.
  it('answers a mistyped flag with the closest valid name and exit status 2', async () => {
    const typo = await aeromapProcess([work, '--dsmm']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown option --dsmm; did you mean --dsm?');
  });

  it('processes a folder of photographs here and sums up the products, the quality and the time', async () => {
    const folder = await photoFolder('local');
    const run = await aeromapProcess([folder, ...OPTIONS]);
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(run.stdout).toContain('Running stage opensfm');
    expect(run.stdout).not.toContain('::progress::');
    expect((await stat(path.join(folder, 'odm_orthophoto', 'odm_orthophoto.tif'))).size).toBeGreaterThan(100_000);
    const summary = run.stdout.slice(run.stdout.indexOf(`Products in ${folder}:`));
    expect(summary).toMatch(/orthophoto\.tif\s+odm_orthophoto\/odm_orthophoto\.tif\s+[\d.]+ MB/);
    expect(summary).toMatch(/dsm\.tif\s+odm_dem\/dsm\.tif/);
    expect(summary).toContain('images registered      4 of 4');
    expect(summary).toMatch(/reprojection error\s+0\.\d\d px/);
    expect(summary).toMatch(/points\s+[\d,]{4,}/);
    expect(summary).toMatch(/opensfm\s+[\d.]+ s/);
  }, 240_000);

  it.runIf(LONG)('stops on Ctrl-C, and the same command resumes after the stages already done', async () => {
    const folder = await photoFolder('interrupted');
    let sent = false;
    const stopped = await aeromapProcess([folder, ...TO_DENSE], (stdout, child) => {
      if (!sent && stdout.includes('Running stage openmvs')) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain('run the same command again to resume');
    const resumed = await aeromapProcess([folder, ...TO_DENSE]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('Stage opensfm already done, skipping');
    expect(resumed.stdout).toContain('Running stage openmvs');
    expect(resumed.stdout).toContain('images registered      4 of 4');
  }, 240_000);

  // The engine on a node through the CLI: process-node.test.ts drives the same client against a node over TLS.
  describe.runIf(LONG)('on a node', () => {
    let node: RunningNode;
    beforeAll(async () => {
      node = await startNode({ dataDir: path.join(work, 'node'), port: 0, host: '127.0.0.1', token: 'node-token', log: () => {} });
    });
    afterAll(async () => node?.close());

    it('uploads, waits, downloads the products into the folder and sums them up', async () => {
      const folder = await photoFolder('remote');
      const run = await aeromapProcess([folder, '--node', `http://127.0.0.1:${node.port}`, '--token', 'node-token', ...TO_DSM]);
      expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
      expect(run.stdout).toMatch(/Uploaded 4 files to 127\.0\.0\.1:\d+: task [0-9a-f-]{36}/);
      expect(run.stdout).toContain('Running stage opensfm');
      expect((await stat(path.join(folder, 'odm_dem', 'dsm.tif'))).size).toBeGreaterThan(10_000);
      expect(run.stdout).toContain('images registered      4 of 4');
      const wrongToken = await aeromapProcess([folder, '--node', `http://127.0.0.1:${node.port}`, '--token', 'wrong']);
      expect(wrongToken.code).toBe(1);
      expect(wrongToken.stderr).toContain('Invalid authentication token');
    }, 240_000);
  });
});
