// The disk reserve as files are written: a chunk that would take the disk into its reserve stops with a 507 and
// is cut off again, the chunks before it kept; result downloads wait while the disk is within the reserve; an
// imported zip that would unpack past the reserve fails its task without filling the disk.
import { mkdtemp, readFile, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { MultipartFile } from '@fastify/multipart';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yazl from 'yazl';
import type { StepContext } from '../../src/service/tasks/context.ts';
import { writeChunk } from '../../src/service/tasks/intake.ts';
import { WriteBudget, waitForDiskRoom } from '../../src/service/tasks/storage.ts';
import { type TestService, startService, testConfig } from './helpers.ts';
import { TaskStatus, finished, waitForTask } from './taskhelpers.ts';

const MB = 2 ** 20;

/** A zip of one file of zeros: a few MB that unpack to `bytes`. */
async function zipBomb(bytes: number): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const zeros = Buffer.alloc(MB);
  zip.addReadStream(Readable.from((function* () {
    for (let i = 0; i < bytes / MB; i++) yield zeros;
  })()), 'odm_orthophoto/odm_orthophoto.tif');
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const part = (bytes: number) => ({ file: Object.assign(Readable.from([Buffer.alloc(bytes, 1)]), { truncated: false }), filename: 'big.tif' }) as unknown as MultipartFile;

describe('the disk reserve while writing', () => {
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-budget-'));
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('stops a chunk past the room left with a 507, keeping the chunks before it', async () => {
    const file = path.join(work, 'upload');
    await writeFile(file, Buffer.alloc(1000, 7));
    const budget = new WriteBudget(1500, 2 ** 30);
    await expect(writeChunk(part(2000), file, 1000, budget)).rejects.toMatchObject({ statusCode: 507 });
    expect(await readFile(file)).toEqual(Buffer.alloc(1000, 7));
    await expect(writeChunk(part(2000), path.join(work, 'first'), 0, new WriteBudget(10, 0))).rejects.toMatchObject({ statusCode: 507 });
    await expect(readFile(path.join(work, 'first'))).rejects.toThrow(/ENOENT/);
  });

  it('has result downloads wait while the disk is within its reserve', async () => {
    const ctx = (minFreeBytes: number) =>
      ({ settings: { dataDir: work, minFreeBytes, retryMs: 300 }, task: { id: 1 }, log: { warn: () => undefined } }) as unknown as StepContext;
    expect(await waitForDiskRoom(ctx(2 ** 62))).toBe(300);
    expect(await waitForDiskRoom(ctx(0))).toBeNull();
  });
});

describe('results unpacked within the disk reserve', () => {
  let t: TestService;

  beforeAll(async () => {
    const work = await mkdtemp(path.join(tmpdir(), 'aeromap-unpack-'));
    const disk = await statfs(work);
    // Room for the upload (a few MB), not for what it unpacks to.
    const minFreeBytes = disk.bavail * disk.bsize - 100 * MB;
    await rm(work, { recursive: true });
    t = await startService('sqlite', { tasks: { ...testConfig(tmpdir(), undefined).tasks, minFreeBytes } });
  });

  afterAll(() => t?.close());

  it('fails an import that would unpack past the reserve, naming the room, and writes none of it', async () => {
    const project = (await t.admin.post('/api/projects/', { name: 'Bomb' })).body.id;
    const imported = await fetch(new URL(`/api/projects/${project}/tasks/import`, t.url), {
      method: 'POST',
      headers: { authorization: `JWT ${t.admin.token}`, 'content-type': 'application/zip' },
      body: new Uint8Array(await zipBomb(600 * MB)),
    });
    expect(imported.status).toBe(201);
    const { id } = (await imported.json()) as { id: number };
    const task = await waitForTask(t.admin, `/api/projects/${project}/tasks/${id}/`, finished);
    expect(task.status).toBe(TaskStatus.FAILED);
    expect(task.last_error).toMatch(/cannot be unpacked: .*room for \d+ MB above its reserve/);
    const folder = path.join(t.dataDir, 'media', 'project', String(project), 'task', String(id));
    const left = await readdir(folder, { recursive: true });
    expect(left.filter((name) => name.endsWith('.tif'))).toEqual([]);
  });
});
