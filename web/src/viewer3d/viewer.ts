// The three.js side of the 3D view: renderer, z-up camera with orbit controls, keyboard orbiting, rendering on
// demand (nothing redraws while nothing changes, which matters on software WebGL), and picking.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { type Box3, type Vec3, inBox } from './geometry.ts';
import { dollyPosition, orbitPosition } from './orbit.ts';
import type { PointCloud } from './point-cloud.ts';

const KEY_ANGLE = Math.PI / 36;
const SELECT_DELAY_MS = 150;

export class Viewer {
  readonly renderer: THREE.WebGLRenderer;
  readonly scene = new THREE.Scene();
  readonly camera = new THREE.PerspectiveCamera(60, 1, 0.1, 10_000);
  readonly controls: OrbitControls;
  cloud: PointCloud | null = null;
  model: THREE.Object3D | null = null;
  /** What stays shown (scene frame); null: everything. */
  clip: Box3 | null = null;
  pointSize = 2;
  /** Called after every camera change, e.g. to keep a measurement label in place. */
  onCameraChange: () => void = () => {};

  private frame = 0;
  private beforeRender: ((camera: THREE.Camera, renderer: THREE.WebGLRenderer) => void) | null = null;
  private selectTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly resizeObserver: ResizeObserver;
  private sceneRadius = 100;

  constructor(private readonly container: HTMLElement) {
    this.renderer = new THREE.WebGLRenderer({ antialias: false, powerPreference: 'high-performance' });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    this.renderer.setClearColor(0x1b2330);
    this.renderer.domElement.className = 'viewer3d-canvas';
    container.prepend(this.renderer.domElement);
    this.camera.up.set(0, 0, 1);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.screenSpacePanning = false;
    this.controls.addEventListener('change', () => this.cameraChanged());
    container.addEventListener('keydown', this.onKey);
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
  }

  get width(): number {
    return this.container.clientWidth || 1;
  }

  get height(): number {
    return this.container.clientHeight || 1;
  }

  setCloud(cloud: PointCloud): void {
    this.cloud = cloud;
    cloud.setClip(this.clip);
    this.scene.add(cloud.group);
    cloud.setPointSize(this.pointSize, this.renderer.getPixelRatio());
    cloud.update(this.camera, this.height);
  }

  /** `beforeRender`: a streamed model chooses its tiles for the camera before each frame. */
  setModel(model: THREE.Object3D, beforeRender: ((camera: THREE.Camera, renderer: THREE.WebGLRenderer) => void) | null = null): void {
    this.model = model;
    this.beforeRender = beforeRender;
    this.scene.add(model);
    this.clipModel();
  }

  /** Parts of the model were loaded: they are clipped like the rest, and drawn. */
  refreshModel(): void {
    this.clipModel();
    this.requestRender();
  }

  /** Shows only what lies inside `box` (scene frame), cloud and model; null shows everything again. */
  setClip(box: Box3 | null): void {
    this.clip = box;
    this.cloud?.setClip(box);
    this.clipModel();
    this.requestRender();
  }

  /** The model's materials cut at the clip's bounded sides (three.js keeps what a plane's normal points to). */
  private clipModel(): void {
    const box = this.clip;
    const planes = box
      ? [0, 1, 2].flatMap((axis) => {
          const normal = new THREE.Vector3().setComponent(axis, 1);
          return [
            ...(Number.isFinite(box.min[axis]) ? [new THREE.Plane(normal.clone(), -box.min[axis])] : []),
            ...(Number.isFinite(box.max[axis]) ? [new THREE.Plane(normal.clone().negate(), box.max[axis])] : []),
          ];
        })
      : [];
    this.renderer.localClippingEnabled = planes.length > 0;
    this.model?.traverse((object) => {
      const material = (object as THREE.Mesh).material;
      for (const m of Array.isArray(material) ? material : material ? [material] : []) m.clippingPlanes = planes;
    });
  }

  /** Looks from `position` at `target` (the scene's frame). */
  look(position: Vec3, target: Vec3): void {
    this.camera.position.set(...position);
    this.controls.target.set(...target);
    this.controls.update();
  }

  setPointSize(px: number): void {
    this.pointSize = px;
    this.cloud?.setPointSize(px, this.renderer.getPixelRatio());
    this.requestRender();
  }

  /** Looks at a box (scene frame) from the south, above, so that the first view shows the whole survey. */
  frameBox(min: Vec3, max: Vec3): void {
    const centre = new THREE.Vector3((min[0] + max[0]) / 2, (min[1] + max[1]) / 2, (min[2] + max[2]) / 2);
    const radius = Math.max(1, Math.hypot(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / 2);
    this.sceneRadius = radius;
    // The bounding sphere is loose for a flat survey: somewhat closer than fitting it fills the view better.
    // On a portrait screen the horizontal angle is the narrower one: fit whichever is.
    const halfV = Math.tan((this.camera.fov * Math.PI) / 360);
    const dist = (0.75 * radius) / Math.min(halfV, halfV * this.camera.aspect);
    this.controls.target.copy(centre);
    this.camera.position.set(centre.x, centre.y - dist * 0.7, centre.z + dist * 0.7);
    this.controls.maxDistance = radius * 20;
    this.controls.update();
    this.cameraChanged();
  }

  requestRender = (): void => {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this.model?.visible) this.beforeRender?.(this.camera, this.renderer);
      this.renderer.render(this.scene, this.camera);
    });
  };

  /** The nearest surface point under a pointer position (CSS pixels from the canvas' top-left): cloud or model. */
  pick(x: number, y: number): THREE.Vector3 | null {
    this.camera.updateMatrixWorld();
    const fromCloud = this.cloud?.group.visible ? this.cloud.pick(this.camera, this.width, this.height, x, y, 8) : null;
    let best = fromCloud ? { point: fromCloud.point, distance: fromCloud.point.distanceTo(this.camera.position) } : null;
    if (this.model?.visible) {
      const raycaster = new THREE.Raycaster();
      raycaster.setFromCamera(new THREE.Vector2((x / this.width) * 2 - 1, 1 - (y / this.height) * 2), this.camera);
      const clip = this.clip;
      const hit = raycaster.intersectObject(this.model, true).find(({ point: p }) => !clip || inBox(clip, p.x, p.y, p.z));
      if (hit && (!best || hit.distance < best.distance)) best = { point: hit.point, distance: hit.distance };
    }
    return best?.point ?? null;
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    clearTimeout(this.selectTimer);
    this.resizeObserver.disconnect();
    this.container.removeEventListener('keydown', this.onKey);
    this.controls.dispose();
    this.cloud?.dispose();
    this.renderer.dispose();
    this.renderer.domElement.remove();
  }

  private cameraChanged(): void {
    this.fitClipPlanes();
    this.requestRender();
    this.onCameraChange();
    // Selecting on every drag event would queue and cancel loads continually: wait for the camera to settle.
    clearTimeout(this.selectTimer);
    this.selectTimer = setTimeout(() => this.cloud?.update(this.camera, this.height), SELECT_DELAY_MS);
  }

  /** Near and far follow the zoom: a fixed near plane would either clip close-ups or waste depth precision. */
  private fitClipPlanes(): void {
    const dist = this.camera.position.distanceTo(this.controls.target);
    this.camera.near = Math.max(0.01, dist / 1000);
    this.camera.far = dist + this.sceneRadius * 4;
    this.camera.updateProjectionMatrix();
  }

  private resize(): void {
    this.renderer.setSize(this.width, this.height, false);
    this.camera.aspect = this.width / this.height;
    this.camera.updateProjectionMatrix();
    this.cameraChanged();
  }

  private onKey = (event: KeyboardEvent): void => {
    if (event.target !== this.container || event.altKey || event.ctrlKey || event.metaKey) return;
    const turns: Record<string, [number, number]> = {
      ArrowLeft: [-KEY_ANGLE, 0],
      ArrowRight: [KEY_ANGLE, 0],
      ArrowUp: [0, -KEY_ANGLE],
      ArrowDown: [0, KEY_ANGLE],
    };
    const position = this.camera.position.toArray() as Vec3;
    const target = this.controls.target.toArray() as Vec3;
    let next: Vec3 | null = null;
    if (turns[event.key]) next = orbitPosition(position, target, ...turns[event.key]);
    else if (event.key === '+' || event.key === '=') next = dollyPosition(position, target, 0.8);
    else if (event.key === '-' || event.key === '_') next = dollyPosition(position, target, 1.25);
    if (!next) return;
    event.preventDefault();
    this.camera.position.set(...next);
    this.controls.update();
  };
}
