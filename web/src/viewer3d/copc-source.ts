// The COPC file as the viewer sees it: its header and info read once, its hierarchy read page by page as the
// traversal reaches pages, every read a Range request, so that only the parts in view are ever downloaded.
import { Copc, type Hierarchy } from 'copc';
import type { HierarchyEntry } from './lod.ts';
import type { Vec3 } from './geometry.ts';
import type { LasLayout } from './decode.ts';

export interface CopcSource {
  url: string;
  layout: LasLayout;
  pointCount: number;
  /** [minx, miny, minz, maxx, maxy, maxz] in the file's CRS. */
  cube: number[];
  rootSpacing: number;
  bounds: { min: Vec3; max: Vec3 };
  lookup(key: string): HierarchyEntry;
  node(key: string): Hierarchy.Node | undefined;
  /** Reads a hierarchy page; resolves when its nodes are known. Repeated calls share one request. */
  loadPage(key: string): Promise<void>;
}

export interface ByteCounter {
  bytes: number;
}

export class HttpError extends Error {
  constructor(readonly status: number) {
    super(status === 404 ? 'The point cloud file was not found' : `The server answered ${status} for the point cloud`);
  }
}

/** A copc.js getter over fetch: Range requests (the session cookie goes with them), counting what comes in. */
export function rangeGetter(url: string, counter: ByteCounter) {
  return async (begin: number, end: number): Promise<Uint8Array> => {
    const response = await fetch(url, { headers: { Range: `bytes=${begin}-${end - 1}` } });
    if (!response.ok) throw new HttpError(response.status);
    const body = new Uint8Array(await response.arrayBuffer());
    counter.bytes += body.byteLength;
    return response.status === 206 ? body : body.subarray(begin, end);
  };
}

export async function openCopc(url: string, counter: ByteCounter): Promise<CopcSource> {
  const get = rangeGetter(url, counter);
  const copc = await Copc.create(get);
  const nodes: Hierarchy.Node.Map = {};
  const pages: Hierarchy.Page.Map = {};
  const pending = new Map<string, Promise<void>>();

  const read = async (page: Hierarchy.Page) => {
    const subtree = await Copc.loadHierarchyPage(get, page);
    Object.assign(nodes, subtree.nodes);
    for (const [key, value] of Object.entries(subtree.pages)) if (!nodes[key]) pages[key] = value;
  };
  await read(copc.info.rootHierarchyPage);

  const { header, info } = copc;
  return {
    url,
    layout: { format: header.pointDataRecordFormat, recordLength: header.pointDataRecordLength, scale: header.scale, offset: header.offset },
    pointCount: header.pointCount,
    cube: [...info.cube],
    rootSpacing: info.spacing,
    bounds: { min: header.min, max: header.max },
    lookup: (key) => (nodes[key] ? { pointCount: nodes[key]!.pointCount } : pages[key] ? 'page' : undefined),
    node: (key) => nodes[key],
    loadPage(key) {
      const page = pages[key];
      if (!page) return Promise.resolve();
      let promise = pending.get(key);
      if (!promise) {
        promise = read(page).then(() => {
          delete pages[key];
        });
        pending.set(key, promise);
      }
      return promise;
    },
  };
}
