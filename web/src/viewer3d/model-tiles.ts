// The textured model streamed from its 3D Tiles (the task's 3d_tiles/model assets): 3d-tiles-renderer loads the
// tiles the camera needs at the detail the screen shows and unloads the rest, so that a model of any size opens.
// The tileset sits on the globe (its root transform goes to ECEF); the engine also writes the affine map from
// the tileset's frame to the survey's CRS (extras.frameToCrs), by which the tiles join the scene's frame.
import * as THREE from 'three';
import { TilesRenderer } from '3d-tiles-renderer';
import type { Vec3 } from './geometry.ts';

/** Bytes of loaded tiles kept before the least recently seen are unloaded: a phone's share, not a desktop's. */
const CACHE_BYTES = 256 * 1024 * 1024;
/** Screen pixels a tile's geometric error may span before its children replace it. */
const ERROR_TARGET = 8;

export interface TilesetFrame {
  root?: { transform?: number[]; boundingVolume?: { box?: number[] } };
  extras?: { frameToCrs?: number[] };
}

/** Whether the tileset says where it lies in the survey's CRS, as the engine's do; another tool's (ODM's) may not. */
export function placedInCrs(tileset: TilesetFrame): boolean {
  return tileset.extras?.frameToCrs?.length === 16 && tileset.root?.transform?.length === 16;
}

function crsFromFrame(tileset: TilesetFrame): THREE.Matrix4 {
  const toCrs = tileset.extras?.frameToCrs;
  if (!toCrs || toCrs.length !== 16) throw new Error('The model tiles are not placed in the survey\'s coordinate system');
  return new THREE.Matrix4().fromArray(toCrs);
}

/** The corners of the root tile's box (in the tileset's frame), or a throw when it has none. */
function rootCorners(tileset: TilesetFrame): THREE.Vector3[] {
  const box = tileset.root?.boundingVolume?.box;
  if (!box || box.length !== 12) throw new Error('The model tiles have no bounding box');
  const centre = new THREE.Vector3(box[0], box[1], box[2]);
  const axes = [0, 1, 2].map((i) => new THREE.Vector3(box[3 + 3 * i], box[4 + 3 * i], box[5 + 3 * i]));
  return [0, 1, 2, 3, 4, 5, 6, 7].map((bits) => axes.reduce((p, axis, i) => p.addScaledVector(axis, bits & (1 << i) ? 1 : -1), centre.clone()));
}

/** The centre of the model's box in the CRS. */
export function tilesetCentre(tileset: TilesetFrame): Vec3 {
  const box = new THREE.Box3().setFromPoints(rootCorners(tileset).map((p) => p.applyMatrix4(crsFromFrame(tileset))));
  return box.getCenter(new THREE.Vector3()).toArray();
}

/** The model's box in the scene's frame (CRS minus `origin`), as min and max corners. */
export function sceneBox(tileset: TilesetFrame, origin: Vec3): [Vec3, Vec3] {
  const toScene = new THREE.Matrix4().makeTranslation(-origin[0], -origin[1], -origin[2]).multiply(crsFromFrame(tileset));
  const box = new THREE.Box3().setFromPoints(rootCorners(tileset).map((p) => p.applyMatrix4(toScene)));
  return [box.min.toArray(), box.max.toArray()];
}

/** The matrix from the tileset's globe coordinates (ECEF) to the scene's frame (CRS minus the scene's origin). */
export function sceneFromGlobe(tileset: TilesetFrame, origin: Vec3): THREE.Matrix4 {
  const root = tileset.root?.transform;
  if (!root || root.length !== 16) throw new Error('The model tiles are not placed on the globe');
  const globeFromFrame = new THREE.Matrix4().fromArray(root);
  return new THREE.Matrix4()
    .makeTranslation(-origin[0], -origin[1], -origin[2])
    .multiply(crsFromFrame(tileset))
    .multiply(globeFromFrame.invert());
}

export class ModelTiles {
  readonly tiles: TilesRenderer;

  /** `onChange`: a tile was unloaded or shown, or more are wanted: draw again; `onLoad`: a tile was loaded. */
  constructor(url: string, tileset: TilesetFrame, origin: Vec3, camera: THREE.Camera, renderer: THREE.WebGLRenderer, events: { onChange: () => void; onLoad: () => void }) {
    this.tiles = new TilesRenderer(url);
    this.tiles.errorTarget = ERROR_TARGET;
    this.tiles.lruCache.maxBytesSize = CACHE_BYTES;
    this.tiles.lruCache.minBytesSize = CACHE_BYTES / 2;
    this.tiles.fetchOptions = { credentials: 'same-origin' };
    const group = this.tiles.group;
    group.matrixAutoUpdate = false;
    group.matrix.copy(sceneFromGlobe(tileset, origin));
    group.updateMatrixWorld(true);
    this.tiles.setCamera(camera);
    this.tiles.setResolutionFromRenderer(camera, renderer);
    for (const event of ['needs-update', 'dispose-model', 'tile-visibility-change'] as const) this.tiles.addEventListener(event, events.onChange);
    this.tiles.addEventListener('load-model', events.onLoad);
  }

  get object(): THREE.Object3D {
    return this.tiles.group;
  }

  /** Chooses and requests the tiles for the camera as it is now; call before each frame is drawn. */
  update(camera: THREE.Camera, renderer: THREE.WebGLRenderer): void {
    this.tiles.setResolutionFromRenderer(camera, renderer);
    this.tiles.update();
  }

  dispose(): void {
    this.tiles.dispose();
  }
}
