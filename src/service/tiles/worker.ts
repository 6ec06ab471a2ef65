// The engine's `tile-worker`: a long-lived Python process that draws single tiles in the styles the pyramids do
// not hold, and describes layers (their metadata), from the GeoTIFFs (it keeps them open). Started on the first
// such request, stopped after a while idle, and started again after a crash; requests are answered in order, one
// JSON line each way. A pool of them draws side by side.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { type Static, Type } from '@sinclair/typebox';
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
  formula: string | null;
  bands: string | null;
  /** Where the PNG is written (atomically); nothing is written where the raster holds nothing. */
  out: string;
}

/** A layer to describe: the statistics of its bands, or of a vegetation index of an orthophoto. */
export interface MetadataRequest {
  raster: string;
  elevation: boolean;
  formula: string | null;
  bands: string | null;
}

/** Whether an export can be made (engine/aeromap_engine/export/check.py): the product and what is asked of it. */
export interface ExportCheckRequest {
  source: string;
  product: 'orthophoto' | 'elevation' | 'pointcloud';
  epsg: number | null;
  proj: string | null;
  color_map: string | null;
  formula: string | null;
  bands: string | null;
}

/** The product's own CRS, when it has an EPSG code. */
export interface ExportCheck {
  epsg: number | null;
}

const Statistics = Type.Object({
  percentiles: Type.Array(Type.Number(), { description: 'The 2nd and 98th percentiles: the rescale the map stretches its colours over' }),
  min: Type.Number(),
  max: Type.Number(),
  std: Type.Number(),
  histogram: Type.Array(Type.Array(Type.Number()), { description: '[the counts of 255 bins, their 256 edges]' }),
});

/** What the engine tells of a layer (engine/aeromap_engine/tiles/metadata.py), WebODM's names and shapes. */
export const RasterMetadata = Type.Object({
  statistics: Type.Record(Type.String(), Statistics, {
    description: 'By band number: the colour bands of an orthophoto, the heights of an elevation model (metres), or with formula and bands the index alone ("1"), whose min and max are then its range where the formula has one',
  }),
  color_maps: Type.Array(
    Type.Object({ key: Type.String(), label: Type.String(), color_map: Type.Array(Type.Array(Type.Integer()), { description: '256 RGBA colours, low to high' }) }),
    { description: 'The colour maps offered for elevation, or for a formula' },
  ),
  algorithms: Type.Array(
    Type.Object({
      id: Type.String(),
      expr: Type.String(),
      help: Type.String(),
      filters: Type.Array(Type.String(), { description: 'The band orders it can be read in' }),
      range: Type.Optional(Type.Array(Type.Number())),
    }),
    { description: "With formula and bands: the formulas (vegetation indices) the orthophoto's bands allow" },
  ),
  auto_bands: Type.Object(
    { filter: Type.String(), match: Type.Union([Type.Boolean(), Type.Null()]) },
    { description: "With bands=auto: the orthophoto's own band order, and whether the formula suits it" },
  ),
  dtype: Type.String(),
  colorinterp: Type.Array(Type.String()),
});
export type RasterMetadata = Static<typeof RasterMetadata>;

interface Answer {
  id: number;
  written?: boolean;
  metadata?: RasterMetadata;
  export?: ExportCheck;
  error?: string;
  input?: boolean;
}

interface Pending {
  resolve: (answer: Answer) => void;
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
  async render(request: RenderRequest): Promise<boolean> {
    return (await this.ask(request)).written === true;
  }

  /** Describes a layer; a formula the raster's bands cannot feed is a 400. */
  async describe(request: MetadataRequest): Promise<RasterMetadata> {
    const { metadata } = await this.ask({ kind: 'metadata', ...request });
    if (!metadata) throw new Error('the tile worker answered without metadata');
    return metadata;
  }

  /** Checks an export before it starts; a request that cannot be met (CRS, colour map, formula) is a 400. */
  async checkExport(request: ExportCheckRequest): Promise<ExportCheck> {
    const answer = await this.ask({ kind: 'export-check', ...request });
    if (!answer.export) throw new Error('the tile worker answered without the export check');
    return answer.export;
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

  private ask(request: RenderRequest | (MetadataRequest & { kind: 'metadata' }) | (ExportCheckRequest & { kind: 'export-check' })): Promise<Answer> {
    const child = this.start();
    const id = this.nextId++;
    clearTimeout(this.idle);
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, new Error(`the tile worker took over ${this.timeoutMs} ms`)), this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin?.write(`${JSON.stringify({ id, ...request })}\n`);
    });
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
    if (answer.error === undefined) return this.settle(answer.id, answer);
    this.settle(answer.id, answer.input ? new HttpError(400, { detail: `${answer.error}.` }) : new Error(answer.error));
  }

  private settle(id: number, outcome: Answer | Error): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
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

  async describe(request: MetadataRequest): Promise<RasterMetadata> {
    return this.leastBusy().describe(request);
  }

  async checkExport(request: ExportCheckRequest): Promise<ExportCheck> {
    return this.leastBusy().checkExport(request);
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
