// The disk reserve as files are written: a chunk that would take the disk into its reserve stops with a 507 and
// is cut off again, the chunks before it kept; result downloads wait while the disk is within the reserve.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { MultipartFile } from '@fastify/multipart';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepContext } from '../../src/service/tasks/context.ts';
import { writeChunk } from '../../src/service/tasks/intake.ts';
import { WriteBudget, waitForDiskRoom } from '../../src/service/tasks/storage.ts';

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
