import { describe, expect, it } from 'vitest';
import { type HierarchyEntry, MaxHeap, childKeys, keyString, nodeBounds, nodeSpacing, parseKey, selectNodes } from '../../web/src/viewer3d/lod.ts';

/** A complete octree down to `depth`, `points` points per node. */
function fullHierarchy(depth: number, points: number): Map<string, HierarchyEntry> {
  const map = new Map<string, HierarchyEntry>();
  const add = (k: { d: number; x: number; y: number; z: number }) => {
    map.set(keyString(k), { pointCount: points });
    if (k.d < depth) childKeys(k).forEach(add);
  };
  add({ d: 0, x: 0, y: 0, z: 0 });
  return map;
}

const cube = [0, 0, 0, 128, 128, 128];
const base = { cube, rootSpacing: 1, planes: [], fovY: 90, viewportHeight: 800, threshold: 2, pointBudget: 1e9 };

describe('octree keys and bounds', () => {
  it('halves the cube per level', () => {
    expect(nodeBounds([0, 0, 0, 8, 8, 8], parseKey('1-1-0-1'))).toEqual({ min: [4, 0, 4], max: [8, 4, 8] });
    expect(nodeBounds([10, 20, 30, 18, 28, 38], parseKey('2-3-0-1'))).toEqual({ min: [16, 20, 32], max: [18, 22, 34] });
    expect(nodeSpacing(1.6, 3)).toBeCloseTo(0.2, 12);
  });

  it('has eight distinct children inside the parent', () => {
    const children = childKeys(parseKey('1-1-0-1')).map(keyString);
    expect(new Set(children).size).toBe(8);
    expect(children).toContain('2-2-0-2');
    expect(children).toContain('2-3-1-3');
  });
});

describe('node selection', () => {
  it('stops at the root when the camera is far away', () => {
    const tree = fullHierarchy(3, 100);
    // Root spacing 1 m at ~10 km: far below a pixel.
    const s = selectNodes({ ...base, lookup: (k) => tree.get(k), camera: [64, 64, 10_000] });
    expect(s.nodes.map((n) => n.key)).toEqual(['0-0-0-0']);
    expect(s.points).toBe(100);
  });

  it('refines near the camera more than far from it', () => {
    const tree = fullHierarchy(3, 100);
    const s = selectNodes({ ...base, lookup: (k) => tree.get(k), camera: [1, 1, 130], threshold: 3 });
    const keys = s.nodes.map((n) => n.key);
    expect(keys[0]).toBe('0-0-0-0');
    // The corner node under the camera reaches depth 3, the opposite corner does not.
    expect(keys).toContain('3-0-0-7');
    expect(keys.some((k) => k.startsWith('3-7-7-'))).toBe(false);
    // Priorities never increase: a child is never nearer than its parent's box.
    for (let i = 1; i < s.nodes.length; i++) expect(s.nodes[i].priority).toBeLessThanOrEqual(s.nodes[i - 1].priority);
  });

  it('keeps within the point budget and says so', () => {
    const tree = fullHierarchy(3, 100);
    const s = selectNodes({ ...base, lookup: (k) => tree.get(k), camera: [64, 64, 64], pointBudget: 250 });
    expect(s.nodes).toHaveLength(2);
    expect(s.points).toBe(200);
    expect(s.budgetReached).toBe(true);
  });

  it('leaves out nodes outside the frustum', () => {
    const tree = fullHierarchy(1, 100);
    // Only x ≤ 60 is in view: the four children with x = 1 (x from 64 to 128) are culled.
    const s = selectNodes({ ...base, planes: [[-1, 0, 0, 60]], lookup: (k) => tree.get(k), camera: [30, 64, 64] });
    const keys = s.nodes.map((n) => n.key);
    expect(keys).toHaveLength(5);
    expect(keys.filter((k) => k.startsWith('1-1-'))).toEqual([]);
  });

  it('reports unread hierarchy pages instead of their nodes', () => {
    const tree = fullHierarchy(1, 100);
    tree.set('1-0-0-0', 'page');
    const s = selectNodes({ ...base, lookup: (k) => tree.get(k), camera: [64, 64, 64] });
    expect(s.pages).toEqual(['1-0-0-0']);
    expect(s.nodes.map((n) => n.key)).not.toContain('1-0-0-0');
    expect(s.nodes).toHaveLength(8);
  });

  it('passes through empty nodes to their children', () => {
    const tree = fullHierarchy(1, 100);
    tree.set('0-0-0-0', { pointCount: 0 });
    const s = selectNodes({ ...base, lookup: (k) => tree.get(k), camera: [64, 64, 64] });
    expect(s.nodes).toHaveLength(8);
  });
});

describe('max heap', () => {
  it('pops in descending priority', () => {
    const heap = new MaxHeap<number>();
    const values = [5, 1, 9, 3, 7, 2, 8, 6, 4, 0];
    for (const v of values) heap.push(v, v);
    const out: number[] = [];
    for (let v = heap.pop(); v !== undefined; v = heap.pop()) out.push(v);
    expect(out).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });
});
