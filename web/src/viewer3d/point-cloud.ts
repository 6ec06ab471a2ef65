// The streamed point cloud: selects octree nodes for the current view, loads them through a few workers in
// priority order, draws each as one THREE.Points, and drops nodes that left the selection once over budget.
import * as THREE from 'three';
import wasmUrl from 'laz-perf/lib/web/laz-perf.wasm?url';
import type { CopcSource } from './copc-source.ts';
import { type Box3, type Vec3, frustumPlanes } from './geometry.ts';
import { nodeBounds, parseKey, selectNodes } from './lod.ts';
import { type ColourMode, createPointMaterial, setClipBox, setColourMode, setIntensityPeak } from './point-material.ts';
import type { LoadRequest, WorkerReply } from './copc-worker.ts';
import { pickPoint } from './pick.ts';
import type { PointChunk } from './profile.ts';

export interface CloudStats {
  points: number;
  nodes: number;
  loading: number;
  bytes: number;
  firstPointsMs: number | null;
  error: string | null;
  /** Whether the points record an intensity (a laser's), which the intensity colours show. */
  hasIntensity: boolean;
}

interface NodeState {
  key: string;
  id: number;
  pointCount: number;
  points?: THREE.Points;
  lastSelected: number;
}

const WORKERS = 2;
const CONCURRENT_LOADS = 4;

export class PointCloud {
  readonly group = new THREE.Group();
  readonly material: THREE.ShaderMaterial;
  pointBudget = 3_000_000;
  /** Pixels of projected node spacing above which a node is refined. */
  threshold = 2;
  stats: CloudStats = { points: 0, nodes: 0, loading: 0, bytes: 0, firstPointsMs: null, error: null, hasIntensity: false };
  onChange: () => void = () => {};

  private readonly cube: number[];
  private readonly workers: Worker[] = [];
  private readonly states = new Map<string, NodeState>();
  private readonly byId = new Map<number, NodeState>();
  private queue: string[] = [];
  private selected = new Set<string>();
  private generation = 0;
  private nextId = 1;
  private shift: 0 | 8 | undefined;
  private intensityPeak: number | undefined;
  private readonly started = performance.now();
  private lastView: { camera: THREE.PerspectiveCamera; height: number } | null = null;
  private clip: Box3 | null = null;

  constructor(
    private readonly source: CopcSource,
    private readonly origin: Vec3,
    bytesSoFar: number,
  ) {
    this.stats.bytes = bytesSoFar;
    const c = source.cube;
    this.cube = [c[0] - origin[0], c[1] - origin[1], c[2] - origin[2], c[3] - origin[0], c[4] - origin[1], c[5] - origin[2]];
    this.material = createPointMaterial(source.bounds.min[2] - origin[2], source.bounds.max[2] - origin[2]);
    for (let i = 0; i < WORKERS; i++) {
      const worker = new Worker(new URL('./copc-worker.ts', import.meta.url), { type: 'module' });
      worker.onmessage = (event: MessageEvent<WorkerReply>) => this.received(event.data);
      worker.onerror = (event) => {
        event.preventDefault();
        this.stats.error = `The point cloud decoder failed to start${event.message ? `: ${event.message}` : ''}`;
        this.publish();
      };
      this.workers.push(worker);
    }
  }

  setPointSize(px: number, pixelRatio: number): void {
    this.material.uniforms.uSize.value = px;
    this.material.uniforms.uPixelRatio.value = pixelRatio;
  }

  /** Draws (and picks) only the points inside `box`; null: all. */
  setClip(box: Box3 | null): void {
    this.clip = box;
    setClipBox(this.material, box);
  }

  setColourMode(mode: ColourMode): void {
    setColourMode(this.material, mode);
  }

  /** Chooses the nodes for this view; call after the camera settles. */
  update(camera: THREE.PerspectiveCamera, viewportHeight: number): void {
    this.lastView = { camera, height: viewportHeight };
    camera.updateMatrixWorld();
    const matrix = new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
    const selection = selectNodes({
      cube: this.cube,
      rootSpacing: this.source.rootSpacing,
      lookup: this.source.lookup,
      camera: camera.position.toArray() as Vec3,
      planes: frustumPlanes(matrix.elements),
      fovY: camera.fov,
      viewportHeight,
      threshold: this.threshold,
      pointBudget: this.pointBudget,
    });
    // Pages reached by the traversal: read them, then select again with their nodes known.
    for (const page of selection.pages) {
      void this.source.loadPage(page).then(() => this.lastView && this.update(this.lastView.camera, this.lastView.height));
    }
    const stamp = ++this.generation;
    this.selected = new Set(selection.nodes.map((n) => n.key));
    this.queue = [];
    for (const node of selection.nodes) {
      const state = this.states.get(node.key);
      if (state) state.lastSelected = stamp;
      else this.queue.push(node.key);
    }
    this.cancelUnselected();
    this.evictOverBudget();
    this.refreshVisibility();
    this.pump();
  }

  /** The nearest drawn point within `maxPixels` of the pointer, in the scene's frame. */
  pick(camera: THREE.PerspectiveCamera, width: number, height: number, x: number, y: number, maxPixels: number): { point: THREE.Vector3; depth: number } | null {
    const matrix = new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse).multiply(this.group.matrixWorld);
    let best: { point: THREE.Vector3; depth: number } | null = null;
    for (const state of this.states.values()) {
      if (!state.points?.visible) continue;
      const positions = state.points.geometry.getAttribute('position').array as Float32Array;
      const hit = pickPoint(positions, state.pointCount, matrix.elements, width, height, x, y, maxPixels, this.clip);
      if (hit && (!best || hit.depth < best.depth)) {
        const point = new THREE.Vector3().fromArray(positions, hit.index * 3).applyMatrix4(this.group.matrixWorld);
        best = { point, depth: hit.depth };
      }
    }
    return best;
  }

  /** The points drawn, node by node, in the scene's frame (the group is never moved). */
  drawnPoints(): PointChunk[] {
    return [...this.states.values()].flatMap((state) =>
      state.points?.visible ? [{ positions: state.points.geometry.getAttribute('position').array as Float32Array, count: state.pointCount }] : [],
    );
  }

  dispose(): void {
    for (const worker of this.workers) worker.terminate();
    for (const state of this.states.values()) state.points?.geometry.dispose();
    this.material.dispose();
    this.states.clear();
  }

  private pump(): void {
    while (this.stats.loading < CONCURRENT_LOADS && this.queue.length) {
      const key = this.queue.shift()!;
      if (this.states.has(key)) continue;
      const node = this.source.node(key);
      if (!node) continue;
      const state: NodeState = { key, id: this.nextId++, pointCount: node.pointCount, lastSelected: this.generation };
      this.states.set(key, state);
      this.byId.set(state.id, state);
      this.stats.loading++;
      const request: LoadRequest = {
        type: 'load',
        id: state.id,
        url: new URL(this.source.url, location.href).href,
        begin: node.pointDataOffset,
        end: node.pointDataOffset + node.pointDataLength,
        pointCount: node.pointCount,
        layout: this.source.layout,
        origin: this.origin,
        shift: this.shift,
        intensityPeak: this.intensityPeak,
        wasmUrl: new URL(wasmUrl, location.href).href,
      };
      this.workers[state.id % this.workers.length].postMessage(request);
    }
    this.publish();
  }

  private received(reply: WorkerReply): void {
    const state = this.byId.get(reply.id);
    this.byId.delete(reply.id);
    if (!state) return;
    this.stats.loading--;
    if (reply.type === 'failed') {
      if (this.states.get(state.key) === state) this.states.delete(state.key);
      if (!reply.aborted) this.stats.error = `A part of the point cloud failed to load: ${reply.message}`;
    } else if (this.states.get(state.key) !== state) {
      // Dropped while it was decoding: nothing to draw.
    } else {
      this.shift ??= reply.shift;
      if (this.intensityPeak === undefined) {
        this.intensityPeak = reply.intensityPeak;
        this.stats.hasIntensity = reply.intensityPeak > 0;
        setIntensityPeak(this.material, reply.intensityPeak);
      }
      this.stats.bytes += reply.bytes;
      this.stats.firstPointsMs ??= performance.now() - this.started;
      state.points = this.createPoints(state.key, reply.positions, reply.colours, reply.classes, reply.intensities);
      this.group.add(state.points);
      this.refreshVisibility();
    }
    this.pump();
  }

  private createPoints(key: string, positions: Float32Array, colours: Uint8Array, classes: Uint8Array, intensities: Uint16Array): THREE.Points {
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute('position', new THREE.BufferAttribute(positions, 3));
    geometry.setAttribute('rgb', new THREE.BufferAttribute(colours, 3, true));
    geometry.setAttribute('classification', new THREE.BufferAttribute(classes, 1));
    geometry.setAttribute('intensity', new THREE.BufferAttribute(intensities, 1));
    const box = nodeBounds(this.cube, parseKey(key));
    geometry.boundingBox = new THREE.Box3(new THREE.Vector3(...box.min), new THREE.Vector3(...box.max));
    geometry.boundingSphere = geometry.boundingBox.getBoundingSphere(new THREE.Sphere());
    const points = new THREE.Points(geometry, this.material);
    points.name = key;
    points.matrixAutoUpdate = false;
    return points;
  }

  private cancelUnselected(): void {
    for (const state of this.states.values()) {
      if (!state.points && !this.selected.has(state.key)) {
        this.workers[state.id % this.workers.length].postMessage({ type: 'cancel', id: state.id });
        this.states.delete(state.key);
      }
    }
  }

  /** Keeps unselected nodes as a cache while the budget allows, so that turning back shows them at once. */
  private evictOverBudget(): void {
    let total = 0;
    for (const state of this.states.values()) total += state.pointCount;
    const incoming = this.queue.reduce((sum, key) => sum + (this.source.node(key)?.pointCount ?? 0), 0);
    if (total + incoming <= this.pointBudget) return;
    const stale = [...this.states.values()].filter((s) => s.points && !this.selected.has(s.key)).sort((a, b) => a.lastSelected - b.lastSelected);
    for (const state of stale) {
      if (total + incoming <= this.pointBudget) break;
      this.group.remove(state.points!);
      state.points!.geometry.dispose();
      this.states.delete(state.key);
      total -= state.pointCount;
    }
  }

  private refreshVisibility(): void {
    for (const state of this.states.values()) if (state.points) state.points.visible = this.selected.has(state.key);
    this.publish();
  }

  private publish(): void {
    let points = 0;
    let nodes = 0;
    for (const state of this.states.values()) {
      if (state.points?.visible) {
        points += state.pointCount;
        nodes++;
      }
    }
    this.stats = { ...this.stats, points, nodes };
    this.onChange();
  }
}
