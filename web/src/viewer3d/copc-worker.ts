// Fetches and decodes point-cloud nodes off the main thread: LAZ decompression of a few hundred thousand points
// takes long enough to stall orbiting if done in the page.
import { createLazPerf, type LazPerf } from 'laz-perf';
import { type LasLayout, colourShift, decodePoints, intensityPeak } from './decode.ts';
import type { Vec3 } from './geometry.ts';

export interface LoadRequest {
  type: 'load';
  id: number;
  url: string;
  /** The node's compressed chunk: [begin, end) in the file. */
  begin: number;
  end: number;
  pointCount: number;
  layout: LasLayout;
  origin: Vec3;
  /** undefined: detect from this node. */
  shift?: 0 | 8;
  /** undefined: detect from this node. */
  intensityPeak?: number;
  wasmUrl: string;
}

export type WorkerRequest = LoadRequest | { type: 'cancel'; id: number };

export type WorkerReply =
  | {
      type: 'loaded';
      id: number;
      positions: Float32Array;
      colours: Uint8Array;
      classes: Uint8Array;
      intensities: Uint16Array;
      count: number;
      zMin: number;
      zMax: number;
      shift: 0 | 8;
      intensityPeak: number;
      bytes: number;
    }
  | { type: 'failed'; id: number; message: string; aborted: boolean };

// The web application's types are the page's (DOM), not a worker's: only what is used here is declared.
const scope = self as unknown as {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: WorkerReply, transfer?: Transferable[]): void;
};
const inFlight = new Map<number, AbortController>();
let lazPerf: Promise<LazPerf> | undefined;

scope.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const request = event.data;
  if (request.type === 'cancel') inFlight.get(request.id)?.abort();
  else void load(request);
};

async function load(request: LoadRequest): Promise<void> {
  const controller = new AbortController();
  inFlight.set(request.id, controller);
  try {
    const compressed = await fetchRange(request, controller.signal);
    lazPerf ??= createLazPerf({ locateFile: () => request.wasmUrl });
    const raw = decompress(await lazPerf, compressed, request.pointCount, request.layout);
    const shift = request.shift ?? colourShift(raw, request.pointCount, request.layout);
    const peak = request.intensityPeak ?? intensityPeak(raw, request.pointCount, request.layout);
    const points = decodePoints(raw, request.pointCount, request.layout, request.origin, shift);
    const reply: WorkerReply = { type: 'loaded', id: request.id, ...points, shift, intensityPeak: peak, bytes: compressed.byteLength };
    scope.postMessage(reply, [points.positions.buffer, points.colours.buffer, points.classes.buffer, points.intensities.buffer]);
  } catch (error) {
    const reply: WorkerReply = { type: 'failed', id: request.id, message: String((error as Error)?.message ?? error), aborted: controller.signal.aborted };
    scope.postMessage(reply);
  } finally {
    inFlight.delete(request.id);
  }
}

async function fetchRange(request: LoadRequest, signal: AbortSignal): Promise<Uint8Array> {
  const response = await fetch(request.url, { headers: { Range: `bytes=${request.begin}-${request.end - 1}` }, signal });
  if (!response.ok) throw new Error(`The server answered ${response.status}`);
  const body = new Uint8Array(await response.arrayBuffer());
  // A server that ignores Range sends the whole file: the chunk is then cut out of it.
  return response.status === 206 ? body : body.subarray(request.begin, request.end);
}

function decompress(module: LazPerf, compressed: Uint8Array, count: number, layout: LasLayout): Uint8Array {
  const out = new Uint8Array(count * layout.recordLength);
  const input = module._malloc(compressed.byteLength);
  const point = module._malloc(layout.recordLength);
  const decoder = new module.ChunkDecoder();
  try {
    module.HEAPU8.set(compressed, input);
    decoder.open(layout.format, layout.recordLength, input);
    for (let i = 0; i < count; i++) {
      decoder.getPoint(point);
      // HEAPU8 is re-read each time: the WASM memory may grow and detach an older view.
      out.set(module.HEAPU8.subarray(point, point + layout.recordLength), i * layout.recordLength);
    }
  } finally {
    decoder.delete();
    module._free(point);
    module._free(input);
  }
  return out;
}
