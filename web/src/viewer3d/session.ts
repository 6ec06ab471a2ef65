// One opened 3D view: the viewer, the task's point cloud and textured model, and the measurement, with the state
// that the page shows kept in one signal.
import { signal } from '@preact/signals';
import * as THREE from 'three';
import { TaskStatus } from '../../../src/protocol/status.ts';
import { type Task, api, taskPath } from '../api.ts';
import type { ProfilePoint } from '../map/dem.ts';
import { type Camera, camerasOf, frustumSegments } from './cameras.ts';
import { type ByteCounter, openCopc } from './copc-source.ts';
import { type Box3, type Vec3, clipColumn } from './geometry.ts';
import { MeasureGraphic } from './measure.ts';
import { cloudProfile } from './profile.ts';
import { type MeasureTool, addPick, closes, measure, outline } from './measure-tools.ts';
import { downloadWithProgress, parseModel } from './model.ts';
import { ModelTiles, type TilesetFrame, placedInCrs, sceneBox, tilesetCentre } from './model-tiles.ts';
import { PointCloud } from './point-cloud.ts';
import type { ColourMode } from './point-material.ts';
import { type CameraView, type ViewState, initialState, savedView } from './view-state.ts';
import { Viewer } from './viewer.ts';

export const COPC_ASSET = 'odm_georeferencing/odm_georeferenced_model.copc.laz';
export const MODEL_TILESET_ASSET = '3d_tiles/model/tileset.json';

const CAMERA_PICK_PX = 14;
const PROFILE_SAMPLES = 120;

/** How deep a camera's frustum is drawn: a small share of the span of the flight, within sensible bounds. */
function frustumDepth(cameras: readonly Camera[]): number {
  if (cameras.length < 2) return 2;
  const span = [0, 1].map((axis) => Math.max(...cameras.map((c) => c.centre[axis])) - Math.min(...cameras.map((c) => c.centre[axis])));
  return Math.min(20, Math.max(0.5, 0.04 * Math.max(...span)));
}

export class ViewerSession {
  readonly state = signal<ViewState>(initialState);
  readonly viewer: Viewer;
  private origin: Vec3 | null = null;
  private readonly measure = new MeasureGraphic();
  private readonly abort = new AbortController();
  private modelRequested = false;
  private modelTiles: ModelTiles | null = null;
  private readonly counter: ByteCounter = { bytes: 0 };
  private cameras: Camera[] = [];
  private cameraLines: THREE.LineSegments | null = null;

  /** Throws when WebGL is missing: the page then says so. */
  constructor(
    container: HTMLElement,
    private readonly pid: string,
    private readonly tid: string,
  ) {
    this.viewer = new Viewer(container);
    this.viewer.scene.add(this.measure.group);
    (window as unknown as { __aeromapViewer: unknown }).__aeromapViewer = {
      camera: this.viewer.camera,
      scene: this.viewer.scene,
      renderer: this.viewer.renderer,
      controls: this.viewer.controls,
      session: this,
    };
  }

  private patch(changes: Partial<ViewState>): void {
    this.state.value = { ...this.state.value, ...changes };
  }

  private get base(): string {
    return `${taskPath(Number(this.pid), Number(this.tid))}`;
  }

  async start(): Promise<void> {
    let task: Task;
    try {
      task = await api<Task>(`${this.base}/`, { signal: this.abort.signal });
    } catch (error) {
      if (!this.abort.signal.aborted) this.patch({ cloudLoading: false, cloudMessage: `The task could not be read: ${(error as Error).message}` });
      return;
    }
    const hasCloud = task.available_assets.includes('georeferenced_model.laz');
    const modelStreamed = task.available_assets.includes('3d_tiles_model.zip');
    const hasModel = modelStreamed || task.available_assets.includes('textured_model.glb');
    this.patch({ task, hasModel, modelStreamed, hasCameras: task.available_assets.includes('shots.geojson') });
    if (hasCloud) await this.openCloud();
    else {
      this.patch({ cloudLoading: false, showCloud: false, cloudMessage: task.status === TaskStatus.COMPLETED ? 'This task has no point cloud.' : 'The task has not finished: there is no point cloud yet.' });
      // Without a cloud the model is all there is to see: show it at once.
      if (hasModel) this.setShowModel(true);
    }
  }

  private async openCloud(): Promise<void> {
    try {
      const source = await openCopc(`${this.base}/assets/${COPC_ASSET}`, this.counter);
      if (this.abort.signal.aborted) return;
      const { min, max } = source.bounds;
      // A whole-metre origin near the centre: float32 then keeps sub-millimetre detail across the survey.
      this.origin ??= [Math.round((min[0] + max[0]) / 2), Math.round((min[1] + max[1]) / 2), Math.round((min[2] + max[2]) / 2)];
      const o = this.origin;
      const cloud = new PointCloud(source, o, this.counter.bytes);
      cloud.onChange = () => {
        this.viewer.requestRender();
        const s = cloud.stats;
        this.patch({ points: this.state.value.showCloud ? s.points : 0, nodes: s.nodes, bytes: s.bytes, firstPointsMs: s.firstPointsMs, cloudLoading: s.loading > 0, cloudMessage: s.error, hasIntensity: s.hasIntensity });
      };
      this.viewer.setCloud(cloud);
      this.viewer.frameBox([min[0] - o[0], min[1] - o[1], min[2] - o[2]], [max[0] - o[0], max[1] - o[1], max[2] - o[2]]);
      this.openSavedView();
    } catch (error) {
      if (this.abort.signal.aborted) return;
      const message = (error as Error).message;
      this.patch({ cloudLoading: false, showCloud: false, cloudMessage: `The point cloud could not be opened: ${message}` });
      if (this.state.value.hasModel) this.setShowModel(true);
    }
  }

  setShowCloud(show: boolean): void {
    const cloud = this.viewer.cloud;
    if (!cloud) return;
    cloud.group.visible = show;
    this.patch({ showCloud: show, points: show ? cloud.stats.points : 0 });
    this.viewer.requestRender();
  }

  setShowModel(show: boolean): void {
    this.patch({ showModel: show });
    if (this.viewer.model) this.viewer.model.visible = show;
    this.viewer.requestRender();
    if (show && !this.modelRequested) void this.loadModel();
  }

  private async loadModel(): Promise<void> {
    this.modelRequested = true;
    this.patch({ modelProgress: 0, modelMessage: null });
    try {
      if (this.state.value.modelStreamed) {
        const url = new URL(`${this.base}/assets/${MODEL_TILESET_ASSET}`, window.location.href).toString();
        const tileset = await api<TilesetFrame>(url, { signal: this.abort.signal });
        if (placedInCrs(tileset)) return this.streamModel(url, tileset);
        // Tiles made by another tool (a NodeODM running ODM) need not say where they lie in the CRS: the GLB whole.
        this.patch({ modelStreamed: false });
      }
      const buffer = await downloadWithProgress(`${this.base}/download/textured_model.glb`, (f) => this.patch({ modelProgress: f }), this.abort.signal);
      const hadOrigin = this.origin !== null;
      const model = await parseModel(buffer, this.origin);
      if (this.abort.signal.aborted) return;
      this.origin = model.origin;
      model.object.visible = this.state.value.showModel;
      this.viewer.setModel(model.object);
      const box = new THREE.Box3().setFromObject(model.object);
      if (!hadOrigin) {
        this.viewer.frameBox(box.min.toArray(), box.max.toArray());
        this.openSavedView();
      }
      this.viewer.requestRender();
      const centre = box.getCenter(new THREE.Vector3()).toArray();
      const o = model.origin;
      this.patch({ modelProgress: null, modelLoaded: true, modelCentre: [centre[0] + o[0], centre[1] + o[1], centre[2] + o[2]] });
    } catch (error) {
      if (this.abort.signal.aborted) return;
      this.modelRequested = false;
      this.patch({ modelProgress: null, showModel: false, modelMessage: `The textured model could not be loaded: ${(error as Error).message}` });
    }
  }

  /** The model from its 3D Tiles: only the tiles the view needs, at the detail it shows, are loaded. */
  private streamModel(url: string, tileset: TilesetFrame): void {
    if (this.abort.signal.aborted) return;
    const centre = tilesetCentre(tileset);
    const hadOrigin = this.origin !== null;
    this.origin ??= [Math.round(centre[0]), Math.round(centre[1]), Math.round(centre[2])];
    const tiles = new ModelTiles(url, tileset, this.origin, this.viewer.camera, this.viewer.renderer, {
      onChange: () => this.viewer.requestRender(),
      onLoad: () => {
        this.viewer.refreshModel();
        if (!this.state.value.modelLoaded) this.patch({ modelProgress: null, modelLoaded: true });
      },
    });
    this.modelTiles = tiles;
    tiles.object.visible = this.state.value.showModel;
    this.viewer.setModel(tiles.object, (camera, renderer) => tiles.update(camera, renderer));
    if (!hadOrigin) {
      const [min, max] = sceneBox(tileset, this.origin);
      this.viewer.frameBox(min, max);
      this.openSavedView();
    }
    this.patch({ modelProgress: null, modelCentre: centre });
    this.viewer.requestRender();
  }

  setPointSize(px: number): void {
    this.viewer.setPointSize(px);
  }

  setColourMode(mode: ColourMode): void {
    this.viewer.cloud?.setColourMode(mode);
    this.viewer.requestRender();
  }

  /** Takes up a measuring tool (null: none), starting afresh. */
  setTool(tool: MeasureTool | null): void {
    this.patch({ tool, picks: [], measurement: null, profile: null });
    this.measure.set([], false);
    this.viewer.requestRender();
  }

  /** A click while measuring, in CSS pixels from the canvas' top-left; false when nothing is under the pointer. */
  measureAt(x: number, y: number): boolean {
    const { tool } = this.state.value;
    const point = tool && this.viewer.pick(x, y);
    if (!tool || !point) return false;
    const picks = addPick(tool, this.state.value.picks, point.toArray() as Vec3);
    const ends = picks.length === 2 ? picks : null;
    this.patch({ picks, measurement: measure(tool, picks), profile: tool === 'profile' && ends ? this.profileAlong(ends[0], ends[1]) : null });
    if (tool === 'clip' && ends) this.setClip(clipColumn(ends[0], ends[1]));
    this.measure.set(outline(tool, picks).map((v) => new THREE.Vector3(...v)), closes(tool));
    this.viewer.requestRender();
    return true;
  }

  /** Shows only what lies inside `box` (scene frame); null shows everything again. */
  setClip(box: Box3 | null): void {
    this.viewer.setClip(box);
    this.patch({ clipped: box !== null });
  }

  /** The drawn points' profile from a to b (scene frame), its heights in the CRS. */
  private profileAlong(a: Vec3, b: Vec3): ProfilePoint[] {
    const lift = this.origin?.[2] ?? 0;
    return cloudProfile(this.viewer.cloud?.drawnPoints() ?? [], a, b, PROFILE_SAMPLES).map((p) => ({ ...p, height: p.height === null ? null : p.height + lift }));
  }

  /** A point of the scene's frame in the CRS. */
  toCrs(v: Vec3): Vec3 {
    const o = this.origin ?? [0, 0, 0];
    return [v[0] + o[0], v[1] + o[1], v[2] + o[2]];
  }

  /** Shows the photographs' cameras (read from shots.geojson the first time). */
  async setShowCameras(show: boolean): Promise<void> {
    this.patch({ showCameras: show, photo: show ? this.state.value.photo : null });
    if (show && !this.cameraLines && this.origin) {
      try {
        this.cameras = camerasOf(await api(`${this.base}/download/shots.geojson`, { signal: this.abort.signal }));
      } catch (error) {
        if (!this.abort.signal.aborted) this.patch({ showCameras: false, camerasMessage: `The cameras could not be read: ${(error as Error).message}` });
        return;
      }
      const segments = frustumSegments(this.cameras, this.origin, frustumDepth(this.cameras));
      const geometry = new THREE.BufferGeometry();
      geometry.setAttribute('position', new THREE.BufferAttribute(segments, 3));
      this.cameraLines = new THREE.LineSegments(geometry, new THREE.LineBasicMaterial({ color: 0xff6f3c }));
      this.viewer.scene.add(this.cameraLines);
    }
    if (this.cameraLines) this.cameraLines.visible = this.state.value.showCameras;
    this.viewer.requestRender();
  }

  /** A click with the cameras shown: the nearest camera's photograph within a few pixels; false when none. */
  pickCamera(x: number, y: number): boolean {
    if (!this.state.value.showCameras) return false;
    let best: { name: string; gap: number } | null = null;
    for (const { filename, x: cx, y: cy } of this.cameraPixels()) {
      const gap = Math.hypot(cx - x, cy - y);
      if (gap <= CAMERA_PICK_PX && (!best || gap < best.gap)) best = { name: filename, gap };
    }
    if (best) this.patch({ photo: best.name });
    return best !== null;
  }

  /** Where each camera is drawn, in CSS pixels from the canvas' top-left (cameras behind the eye are left out). */
  cameraPixels(): { filename: string; x: number; y: number }[] {
    const o = this.origin;
    if (!o) return [];
    return this.cameras.flatMap(({ filename, centre }) => {
      const ndc = new THREE.Vector3(centre[0] - o[0], centre[1] - o[1], centre[2] - o[2]).project(this.viewer.camera);
      return ndc.z > 1 ? [] : [{ filename, x: ((ndc.x + 1) / 2) * this.viewer.width, y: ((1 - ndc.y) / 2) * this.viewer.height }];
    });
  }

  /** Looks from the task's saved view, if it has one. */
  private openSavedView(): void {
    const view = savedView(this.state.value.task?.potree_scene);
    const o = this.origin;
    if (!view || !o) return;
    const local = (v: Vec3): Vec3 => [v[0] - o[0], v[1] - o[1], v[2] - o[2]];
    this.viewer.look(local(view.position), local(view.target));
  }

  /** Keeps the current view as the one the task's 3D view opens with (WebODM's 3d/cameraview). */
  async saveView(): Promise<void> {
    const o = this.origin;
    if (!o) return;
    const world = (v: THREE.Vector3): Vec3 => [v.x + o[0], v.y + o[1], v.z + o[2]];
    const view: CameraView = { position: world(this.viewer.camera.position), target: world(this.viewer.controls.target) };
    try {
      await api(`${this.base}/3d/cameraview`, { method: 'POST', body: view, signal: this.abort.signal });
      const task = this.state.value.task;
      this.patch({ viewMessage: 'View saved: the 3D view opens here.', task: task && { ...task, potree_scene: { ...task.potree_scene, view } } });
    } catch (error) {
      if (!this.abort.signal.aborted) this.patch({ viewMessage: `The view could not be saved: ${(error as Error).message}` });
    }
  }

  /** How many points the cloud may draw at once. */
  setPointBudget(points: number): void {
    const cloud = this.viewer.cloud;
    if (!cloud) return;
    cloud.pointBudget = points;
    cloud.update(this.viewer.camera, this.viewer.height);
  }

  dispose(): void {
    this.abort.abort();
    this.measure.dispose();
    this.modelTiles?.dispose();
    this.cameraLines?.geometry.dispose();
    (this.cameraLines?.material as THREE.Material | undefined)?.dispose();
    this.viewer.dispose();
    const w = window as unknown as { __aeromapViewer?: unknown };
    if ((w.__aeromapViewer as { session?: unknown } | undefined)?.session === this) delete w.__aeromapViewer;
  }
}
