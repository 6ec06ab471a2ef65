// Which octree nodes of a COPC file to draw: the nodes in view whose point spacing, projected to the screen, is
// still coarser than a threshold, finest-needed first, within a point budget. Pure, so that it can be tested.
import { type Box3, type Plane, type Vec3, boxIntersectsFrustum, distanceToBox, projectedSize } from './geometry.ts';

export interface NodeKey {
  d: number;
  x: number;
  y: number;
  z: number;
}

export const keyString = (k: NodeKey): string => `${k.d}-${k.x}-${k.y}-${k.z}`;

export function parseKey(s: string): NodeKey {
  const [d, x, y, z] = s.split('-').map(Number);
  return { d, x, y, z };
}

export function childKeys(k: NodeKey): NodeKey[] {
  const children: NodeKey[] = [];
  for (let i = 0; i < 8; i++) {
    children.push({ d: k.d + 1, x: 2 * k.x + (i & 1), y: 2 * k.y + ((i >> 1) & 1), z: 2 * k.z + ((i >> 2) & 1) });
  }
  return children;
}

/** The COPC cube as [minx, miny, minz, maxx, maxy, maxz]; every node halves its parent's cube. */
export function nodeBounds(cube: readonly number[], k: NodeKey): Box3 {
  const size = (cube[3] - cube[0]) / 2 ** k.d;
  const min: Vec3 = [cube[0] + k.x * size, cube[1] + k.y * size, cube[2] + k.z * size];
  return { min, max: [min[0] + size, min[1] + size, min[2] + size] };
}

/** The COPC info's spacing is the root's; each level halves it. */
export const nodeSpacing = (rootSpacing: number, depth: number): number => rootSpacing / 2 ** depth;

/** What the hierarchy knows of a key: a node with its point count, a page not read yet, or nothing (no such node). */
export type HierarchyEntry = { pointCount: number } | 'page' | undefined;

export interface SelectionInput {
  /** The cube in the scene's frame (the origin already subtracted). */
  cube: readonly number[];
  rootSpacing: number;
  lookup: (key: string) => HierarchyEntry;
  camera: Vec3;
  planes: readonly Plane[];
  fovY: number;
  viewportHeight: number;
  /** Refine a node while its spacing covers more pixels than this. */
  threshold: number;
  pointBudget: number;
  maxDepth?: number;
}

export interface SelectedNode {
  key: string;
  pointCount: number;
  /** The node's projected spacing in pixels: the loading priority. */
  priority: number;
}

export interface Selection {
  nodes: SelectedNode[];
  points: number;
  /** Hierarchy pages that the traversal reached but that are not read yet. */
  pages: string[];
  /** True when the budget, not the threshold, stopped the refinement. */
  budgetReached: boolean;
}

export function selectNodes(input: SelectionInput): Selection {
  const { cube, rootSpacing, lookup, camera, planes, fovY, viewportHeight, threshold, pointBudget } = input;
  const maxDepth = input.maxDepth ?? 24;
  const result: Selection = { nodes: [], points: 0, pages: [], budgetReached: false };
  const queue = new MaxHeap<{ key: NodeKey; priority: number }>();
  const consider = (key: NodeKey) => {
    const box = nodeBounds(cube, key);
    if (!boxIntersectsFrustum(planes, box)) return;
    const px = projectedSize(nodeSpacing(rootSpacing, key.d), distanceToBox(camera, box), fovY, viewportHeight);
    queue.push({ key, priority: px }, px);
  };
  consider({ d: 0, x: 0, y: 0, z: 0 });
  for (let item = queue.pop(); item; item = queue.pop()) {
    const key = keyString(item.key);
    const entry = lookup(key);
    if (entry === undefined) continue;
    if (entry === 'page') {
      result.pages.push(key);
      continue;
    }
    if (entry.pointCount > 0) {
      if (result.points + entry.pointCount > pointBudget) {
        result.budgetReached = true;
        break;
      }
      result.points += entry.pointCount;
      result.nodes.push({ key, pointCount: entry.pointCount, priority: item.priority });
    }
    if (item.priority > threshold && item.key.d < maxDepth) {
      for (const child of childKeys(item.key)) if (lookup(keyString(child)) !== undefined) consider(child);
    }
  }
  return result;
}

/** A binary heap, largest priority first. */
export class MaxHeap<T> {
  private items: { value: T; priority: number }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(value: T, priority: number): void {
    const items = this.items;
    items.push({ value, priority });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent].priority >= items[i].priority) break;
      [items[parent], items[i]] = [items[i], items[parent]];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    if (!items.length) return undefined;
    const top = items[0];
    const last = items.pop()!;
    if (items.length) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let largest = i;
        if (l < items.length && items[l].priority > items[largest].priority) largest = l;
        if (r < items.length && items[r].priority > items[largest].priority) largest = r;
        if (largest === i) break;
        [items[largest], items[i]] = [items[i], items[largest]];
        i = largest;
      }
    }
    return top.value;
  }
}
