// HTTP client for one NodeODM-compatible node (NodeODM API 2.x): an Aeromap node, NodeODM, ClusterODM.
// Requests carry the node's token as ?token=; every request has a timeout, so a hung node cannot hold a caller.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { stat } from 'node:fs/promises';
import type { TSchema, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { downloadRanged } from './download.ts';
import { NodeConnectionError, NodeError, NodeResponseError, NodeServerError } from './errors.ts';
import { ActionAnswer, NewTask, NodeInfo, NodeOptions, NodeTaskInfo, type TaskOptionPair, type UploadFile } from './types.ts';

export interface NodeAddress {
  hostname: string;
  port: number;
  token?: string;
  /** Reach the node over TLS; by default only on port 443, as NodeODM clients do. */
  tls?: boolean;
}

export interface NodeClientOptions {
  /** Limit for quick calls such as /info and /options (WebODM's clients use 5 s there). */
  quickTimeoutMs?: number;
}

export interface CreateTaskOptions {
  name?: string;
  options?: TaskOptionPair[];
  /** Called with the fraction of bytes uploaded. */
  onProgress?: (fraction: number) => void;
  signal?: AbortSignal;
  /** Files uploaded at the same time (PyODM sends several too). */
  parallelUploads?: number;
  /** Attempts per file after the first, on connection and server errors. */
  retries?: number;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
  chunkBytes?: number;
  retries?: number;
}

// Calls that change a task answer at once; an upload or a piece of a download may take long on a slow link.
const ACTION_TIMEOUT_MS = 30_000;
const TRANSFER_TIMEOUT_MS = 10 * 60_000;

/** A pause that an abort cuts short; its listener goes with it, so that retries on one signal leave none behind. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });

/** Runs `attempt` again after connection and server errors, with a growing pause; the node's refusals are final. */
export async function withRetries<T>(
  retries: number,
  signal: AbortSignal | undefined,
  attempt: () => Promise<T>,
  pauseMs: (tried: number) => number = (tried) => 500 * (tried + 1),
): Promise<T> {
  for (let tried = 0; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      signal?.throwIfAborted();
      if (error instanceof NodeResponseError || !(error instanceof NodeError) || tried >= retries) throw error;
      await sleep(pauseMs(tried), signal);
    }
  }
}

/**
 * A multipart body of one file, streamed from disk and counted as it goes out, so that the progress of a big
 * file shows before it is whole (a FormData body tells nothing until the request ends).
 */
function multipartFile(field: string, file: UploadFile, size: number, onBytes: (bytes: number) => void) {
  const boundary = `aeromap-${randomUUID()}`;
  const name = file.name.replace(/["\r\n]/g, '_');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file.path)) {
      onBytes((chunk as Buffer).length);
      yield chunk as Buffer;
    }
    yield tail;
  }
  return {
    body: Readable.toWeb(Readable.from(parts())) as ReadableStream,
    duplex: 'half' as const,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + size + tail.length) },
  };
}

export class NodeClient {
  readonly baseUrl: URL;
  private readonly token: string;
  private readonly quickTimeoutMs: number;

  constructor(address: NodeAddress, options: NodeClientOptions = {}) {
    // NodeODM clients reach a node on port 443 over TLS and elsewhere over plain HTTP.
    const scheme = (address.tls ?? address.port === 443) ? 'https' : 'http';
    const host = address.hostname.includes(':') && !address.hostname.startsWith('[') ? `[${address.hostname}]` : address.hostname;
    this.baseUrl = new URL(`${scheme}://${host}:${address.port}/`);
    this.token = address.token ?? '';
    this.quickTimeoutMs = options.quickTimeoutMs ?? 5_000;
  }

  get label(): string {
    return this.baseUrl.host;
  }

  async info(): Promise<NodeInfo> {
    return this.getJson('info', NodeInfo, this.quickTimeoutMs);
  }

  async options(): Promise<Static<typeof NodeOptions>> {
    return this.getJson('options', NodeOptions, this.quickTimeoutMs);
  }

  /**
   * Creates a task through the chunked flow (init, one upload per file, commit) and answers its uuid. Files are
   * streamed from disk; each is retried on its own, so a cut connection costs one file, not the whole upload.
   */
  async createTask(files: UploadFile[], options: CreateTaskOptions = {}): Promise<string> {
    const uuid = await this.initTask(options);
    await this.uploadFiles(uuid, files, options);
    await this.commitTask(uuid, options);
    return uuid;
  }

  /** Opens a chunked upload; the uuid it answers is the task's once committed. */
  async initTask(options: Pick<CreateTaskOptions, 'name' | 'options' | 'signal'> = {}): Promise<string> {
    const form = new URLSearchParams({ name: options.name ?? '', options: JSON.stringify(options.options ?? []) });
    const init = await this.call('task/new/init', { method: 'POST', body: form }, ACTION_TIMEOUT_MS, NewTask, options.signal);
    return init.uuid;
  }

  /** Sends files to an upload that initTask opened. */
  async uploadFiles(uuid: string, files: UploadFile[], options: CreateTaskOptions = {}): Promise<void> {
    const { signal, retries = 5 } = options;
    const sizes = await Promise.all(files.map(async (file) => (await stat(file.path)).size));
    const total = sizes.reduce((sum, size) => sum + size, 0) || 1;
    let sent = 0;
    const queue = files.map((file, index) => ({ file, size: sizes[index] }));
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { file, size } = next;
        let attemptBytes = 0;
        await withRetries(retries, signal, async () => {
          sent -= attemptBytes;
          attemptBytes = 0;
          const upload = multipartFile('images', file, size, (bytes) => {
            attemptBytes += bytes;
            sent += bytes;
            options.onProgress?.(Math.min(1, sent / total));
          });
          await this.call(`task/new/upload/${uuid}`, { method: 'POST', ...upload }, TRANSFER_TIMEOUT_MS, ActionAnswer, signal);
        });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallelUploads ?? 4, files.length)) }, worker));
  }

  /** Turns an upload into a task the node processes; repeating it is harmless (a lost answer is asked again). */
  async commitTask(uuid: string, options: Pick<CreateTaskOptions, 'retries' | 'signal'> = {}): Promise<void> {
    const { signal, retries = 5 } = options;
    await withRetries(retries, signal, () => this.call(`task/new/commit/${uuid}`, { method: 'POST' }, ACTION_TIMEOUT_MS, NewTask, signal));
  }

  /** The task's state; with `withOutput`, the console lines from that line on. */
  async taskInfo(uuid: string, withOutput?: number): Promise<NodeTaskInfo> {
    const query = withOutput === undefined ? '' : `?with_output=${withOutput}`;
    return this.getJson(`task/${encodeURIComponent(uuid)}/info${query}`, NodeTaskInfo, ACTION_TIMEOUT_MS);
  }

  async cancelTask(uuid: string): Promise<void> {
    await this.action('task/cancel', { uuid });
  }

  async removeTask(uuid: string): Promise<void> {
    await this.action('task/remove', { uuid });
  }

  /** Restarts a finished task; options, when given, replace the task's (rerun-from among them). */
  async restartTask(uuid: string, options?: TaskOptionPair[]): Promise<void> {
    await this.action('task/restart', options === undefined ? { uuid } : { uuid, options: JSON.stringify(options) });
  }

  /** Replaces a finished task's ground control points: only an Aeromap node can (POST /task/gcp). */
  async replaceGcp(uuid: string, text: string): Promise<void> {
    await this.action('task/gcp', { uuid, gcp: text });
  }

  /**
   * Downloads the task's all.zip to `destination`: into `destination.part` in ranged pieces (resuming a .part
   * that a cut download left), renamed to `destination` only once whole.
   */
  async downloadAllZip(uuid: string, destination: string, options: DownloadOptions = {}): Promise<void> {
    await downloadRanged(this.url(`task/${encodeURIComponent(uuid)}/download/all.zip`), destination, {
      ...options,
      label: this.label,
      timeoutMs: TRANSFER_TIMEOUT_MS,
    });
  }

  private async action(path: string, fields: Record<string, string>): Promise<void> {
    await this.call(path, { method: 'POST', body: new URLSearchParams(fields) }, ACTION_TIMEOUT_MS, ActionAnswer);
  }

  private url(path: string): URL {
    const url = new URL(path, this.baseUrl);
    if (this.token) url.searchParams.set('token', this.token);
    return url;
  }

  private async getJson<T extends TSchema>(path: string, schema: T, timeoutMs: number): Promise<Static<T>> {
    return this.call(path, { method: 'GET' }, timeoutMs, schema);
  }

  private async call<T extends TSchema>(path: string, init: RequestInit, timeoutMs: number, schema: T, signal?: AbortSignal): Promise<Static<T>> {
    const body = await this.request(path, init, timeoutMs, signal);
    if (!Value.Check(schema, body)) {
      const first = Value.Errors(schema, body).First();
      const where = path.split('?')[0];
      throw new NodeServerError(`${this.label}: unexpected answer to /${where}${first ? ` (${first.path || '/'}: ${first.message})` : ''}`);
    }
    return body;
  }

  private async request(path: string, init: RequestInit, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    let response: Response;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      response = await fetch(this.url(path), { ...init, signal: signal ? AbortSignal.any([timeout, signal]) : timeout });
    } catch (error) {
      signal?.throwIfAborted();
      const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeCause(error);
      throw new NodeConnectionError(`${this.label}: ${reason}`, { cause: error });
    }
    const text = await response.text().catch((error: unknown) => {
      signal?.throwIfAborted();
      throw new NodeConnectionError(`${this.label}: ${describeCause(error)}`, { cause: error });
    });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new NodeServerError(`${this.label}: /${path.split('?')[0]} answered HTTP ${response.status} with a body that is not JSON`);
    }
    const error = (body as { error?: unknown } | null)?.error;
    if (typeof error === 'string') throw new NodeResponseError(`${this.label}: ${error}`);
    if (response.status === 401 || response.status === 403) throw new NodeResponseError(`${this.label}: unauthorized`);
    if (!response.ok) throw new NodeServerError(`${this.label}: /${path.split('?')[0]} answered HTTP ${response.status}`);
    return body;
  }
}

export function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
