// The engine's `tile-worker`: a long-lived Python process that draws single tiles in the styles the pyramids do
// not hold, from the GeoTIFFs (it keeps them open). Started on the first such tile, stopped after a while idle,
// and started again after a crash; requests are answered in order, one JSON line each way. A pool of them
// draws side by side.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { engineEnvironment } from '../../protocol/environment.ts';
import { HttpError } from '../errors.ts';

export interface RenderRequest {
  raster: string;
  elevation: boolean;
  z: number;
  x: number;
  y: number;
  size: number;
  rescale: [number, number] | null;
  color_map: string | null;
  hillshade: number | null;
  /** Where the PNG is written (atomically); nothing is written where the raster holds nothing. */
  out: string;
}

interface Answer {
  id: number;
  written?: boolean;
  error?: string;
  input?: boolean;
}

interface Pending {
  resolve: (written: boolean) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export interface TileWorkerOptions {
  idleMs?: number;
  timeoutMs?: number;
}

export interface TilePoolOptions extends TileWorkerOptions {
  /** Most workers (TILE_WORKERS). */
  workers: number;
  /** Most requests waiting for a busy worker (TILE_QUEUE); more are answered 503. */
  queue: number;
}

/** How long a client refused for a full queue waits before asking again. */
const RETRY_AFTER_SECONDS = 2;

export class TileWorker {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idle: NodeJS.Timeout | undefined;
  private readonly idleMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly enginePath: string,
    options: TileWorkerOptions = {},
  ) {
    this.idleMs = options.idleMs ?? 5 * 60_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Draws a tile; true when written, false where the raster holds nothing. A style the engine does not know is a 400. */
  render(request: RenderRequest): Promise<boolean> {
    const child = this.start();
    const id = this.nextId++;
    clearTimeout(this.idle);
    return new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, new Error(`the tile worker took over ${this.timeoutMs} ms`)), this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin?.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }

  /** Requests sent and not yet answered. */
  get load(): number {
    return this.pending.size;
  }

  close(): void {
    clearTimeout(this.idle);
    this.child?.stdin?.end();
    this.child?.kill();
    this.child = undefined;
  }

  private start(): ChildProcess {
    if (this.child) return this.child;
    const child = spawn(this.enginePath, ['tile-worker'], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...engineEnvironment(), PYTHONUNBUFFERED: '1' } });
    child.stdin?.on('error', () => {}); // a worker that died is noticed by its exit
    createInterface({ input: child.stdout! }).on('line', (line) => this.answer(line));
    const gone = (reason: string) => {
      if (this.child !== child) return;
      this.child = undefined;
      for (const id of [...this.pending.keys()]) this.settle(id, new Error(`the tile worker ${reason}`));
    };
    child.once('error', (error) => gone(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => gone(`stopped (${signal ?? `exit code ${code}`})`));
    this.child = child;
    return child;
  }

  private answer(line: string): void {
    let answer: Answer;
    try {
      answer = JSON.parse(line) as Answer;
    } catch {
      return; // not an answer: a stray line
    }
    if (answer.error === undefined) return this.settle(answer.id, null, answer.written === true);
    this.settle(answer.id, answer.input ? new HttpError(400, { detail: `${answer.error}.` }) : new Error(answer.error));
  }

  private settle(id: number, error: Error | null, written = false): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (error) pending.reject(error);
    else pending.resolve(written);
    if (this.pending.size === 0) {
      clearTimeout(this.idle);
      this.idle = setTimeout(() => this.close(), this.idleMs);
      this.idle.unref();
    }
  }
}

/**
 * Tile workers shared by every user: each request goes to the least busy worker, and a new one starts while
 * all are busy and fewer than `workers` run, so that one user's slow tiles do not hold up everyone's. Past
 * `queue` waiting requests, a request is refused with 503 and Retry-After rather than queued without end.
 */
export class TileWorkerPool {
  private readonly workers: TileWorker[] = [];

  constructor(
    private readonly enginePath: string,
    private readonly options: TilePoolOptions,
  ) {}

  async render(request: RenderRequest): Promise<boolean> {
    return this.leastBusy().render(request);
  }

  close(): void {
    for (const worker of this.workers) worker.close();
  }

  private leastBusy(): TileWorker {
    const idlest = this.workers.reduce<TileWorker | undefined>((best, worker) => (best && best.load <= worker.load ? best : worker), undefined);
    if (idlest?.load === 0) return idlest;
    if (this.workers.length < this.options.workers) {
      const worker = new TileWorker(this.enginePath, this.options);
      this.workers.push(worker);
      return worker;
    }
    const waiting = this.workers.reduce((sum, worker) => sum + worker.load - 1, 0);
    if (waiting >= this.options.queue) {
      throw new HttpError(503, { detail: 'Too many tiles are being drawn; try again shortly.' }, { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    return idlest!;
  }
}
