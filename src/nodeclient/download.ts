// A big file from a node, in ranged pieces written into `<destination>.part`. After a cut (a dropped connection,
// or the whole process killed) the next call resumes from the size of the .part; the file gets its final name
// only once it is whole. A node that ignores ranges gets one plain download from the start.
import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import { rename, rm, stat, truncate } from 'node:fs/promises';
import { setTimeout as pause } from 'node:timers/promises';
import { NodeConnectionError, NodeError, NodeResponseError, NodeServerError } from './errors.ts';

export interface RangedDownloadOptions {
  label: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
  chunkBytes?: number;
  retries?: number;
}

const DEFAULT_CHUNK = 8 * 2 ** 20;

async function sizeOf(file: string): Promise<number> {
  return stat(file).then((info) => info.size, () => 0);
}

// The total size from a Content-Range header: "bytes 0-99/1234", or "bytes */1234" on a 416.
function totalOf(contentRange: string | null): number | null {
  const match = /\/(\d+)\s*$/.exec(contentRange ?? '');
  return match ? Number(match[1]) : null;
}

// Where a 206 piece starts; writing a piece that starts elsewhere at the .part's end would corrupt it silently.
function startOf(contentRange: string | null): number | null {
  const match = /^bytes\s+(\d+)-/.exec(contentRange ?? '');
  return match ? Number(match[1]) : null;
}

interface Piece {
  /** Bytes the file has after this piece; null when still unknown. */
  total: number | null;
  done: boolean;
}

/**
 * Writes the answer's bytes into the file from byte `start` (or over the whole file when `start` is null). A cut
 * connection errors the body stream, and the bytes still queued in it go with the error: on a busy machine, with
 * writes that wait for the disk between chunks, that was all a piece brought, cut after cut, and the download
 * gave up. Each chunk is therefore written at once, synchronously (to the page cache, a matter of microseconds),
 * so the queue never holds more than the chunk being read. Each byte goes to its own offset rather than being
 * appended: a download of the same file still running elsewhere (a step whose lease passed on before it noticed)
 * then writes the same bytes over the same bytes, where appending would have repeated them and shifted the rest.
 * A piece is written only into a file that holds the bytes before it.
 */
async function writeBody(response: Response, file: string, start: number | null, signal?: AbortSignal): Promise<void> {
  if (!response.body) throw new NodeServerError('an empty answer');
  if (start === 0) closeSync(openSync(file, 'a'));
  const fd = openSync(file, start === null ? 'w' : 'r+');
  // The other download may have renamed the .part since this one measured it, and a new .part (or one truncated
  // to start over) would get this piece after a hole: a file of the right size with zeros in it.
  if (start !== null && fstatSync(fd).size < start) {
    closeSync(fd);
    await response.body.cancel();
    throw new NodeConnectionError(`the .part no longer holds the ${start} bytes this piece follows`);
  }
  let position = start ?? 0;
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      signal?.throwIfAborted();
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done, chunk.length - done, position + done);
      position += chunk.length;
    }
  } finally {
    closeSync(fd);
  }
}

/** Fetches the piece after `have` bytes and writes it to the .part; answers what it learnt of the total. */
async function fetchPiece(url: URL, part: string, have: number, options: RangedDownloadOptions): Promise<Piece> {
  const chunk = options.chunkBytes ?? DEFAULT_CHUNK;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, { headers: { range: `bytes=${have}-${have + chunk - 1}` }, signal });
    if (response.headers.get('content-type')?.includes('json')) {
      const body = (await response.json()) as { error?: unknown };
      throw new NodeResponseError(typeof body.error === 'string' ? body.error : `HTTP ${response.status} with JSON instead of the file`);
    }
    if (response.status === 416) {
      const total = totalOf(response.headers.get('content-range'));
      if (total !== null && have === total) return { total, done: true };
      if (have > 0 && (total === null || have > total)) {
        // The .part is longer than the file (another file under the same name): start over.
        await truncate(part, 0);
        return { total, done: false };
      }
      // Refusing a range inside the file would make the loop ask for the same bytes forever.
      throw new NodeServerError(`HTTP 416 for bytes from ${have} of ${total ?? 'an unknown size'}`);
    }
    if (response.status === 206) {
      const range = response.headers.get('content-range');
      if (startOf(range) !== have) {
        await response.body?.cancel();
        throw new NodeServerError(`asked for bytes from ${have}, got the range ${range ?? '(none)'}`);
      }
      await writeBody(response, part, have, signal);
      const total = totalOf(range);
      const size = await sizeOf(part);
      if (size === have && size !== total) throw new NodeServerError('an empty piece');
      return { total, done: total !== null && size >= total };
    }
    if (response.status === 200) {
      // Ranges not supported: the whole file, from the start.
      await writeBody(response, part, null, signal);
      const length = Number(response.headers.get('content-length') ?? NaN);
      const got = await sizeOf(part);
      if (Number.isFinite(length) && got !== length) throw new NodeConnectionError(`got ${got} of ${length} bytes`);
      return { total: got, done: true };
    }
    await response.body?.cancel();
    throw new NodeServerError(`HTTP ${response.status}`);
  } catch (error) {
    options.signal?.throwIfAborted();
    if (error instanceof NodeError) throw error;
    const reason = timeout.aborted ? `no answer within ${options.timeoutMs} ms` : describe(error);
    throw new NodeConnectionError(reason, { cause: error });
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

export async function downloadRanged(url: URL, destination: string, options: RangedDownloadOptions): Promise<void> {
  const part = `${destination}.part`;
  // A cut answer can leave nothing on disk: the bytes still queued in its body stream go with the stream's error,
  // and on a busy machine that can be all it brought. Cuts in a row without progress are retried this often.
  const retries = options.retries ?? 12;
  let failures = 0;
  let total: number | null = null;
  for (;;) {
    const have = await sizeOf(part);
    let piece: Piece;
    try {
      piece = await fetchPiece(url, part, have, options);
      failures = 0;
    } catch (error) {
      if (!(error instanceof NodeError)) throw error;
      // A cut after some bytes is progress, not a failure: ClusterODM closes every long download part-way.
      if ((await sizeOf(part)) > have) failures = 0;
      if (error instanceof NodeResponseError || ++failures > retries) {
        const Kind = error.constructor as new (message: string, options?: ErrorOptions) => NodeError;
        throw new Kind(`${options.label}: download of all.zip: ${error.message}`, { cause: error });
      }
      // node:timers rejects with its own AbortError; callers expect the reason they aborted with.
      await pause(Math.min(5000, 500 * failures), undefined, { signal: options.signal }).catch(() => options.signal?.throwIfAborted());
      continue;
    }
    total = piece.total ?? total;
    if (total) options.onProgress?.(Math.min(1, (await sizeOf(part)) / total));
    if (piece.done) break;
  }
  const size = await sizeOf(part);
  // Left in place: the next call sees a .part longer than the file, and starts over.
  if (total !== null && size !== total) throw new NodeServerError(`${options.label}: all.zip has ${size} bytes, the node announced ${total}`);
  await rename(part, destination).catch(async (error) => {
    await rm(part, { force: true });
    throw error;
  });
}
