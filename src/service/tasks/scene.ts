// The 3D scene a task keeps (WebODM's potree_scene): what Potree saves of a view of the point cloud. POST 3d/scene
// merges a scene's fields into the stored one, all but the camera view and the per-session point cloud and settings
// entries; POST 3d/cameraview sets the initial camera view alone.
import { HttpError } from '../errors.ts';

export type Scene = Record<string, unknown>;

/** A scene past this size is refused: public_edit lets anyone write one. */
export const MAX_SCENE_BYTES = 1_048_576;

const KEPT_APART = new Set(['view', 'pointclouds', 'settings']);

const invalid = (detail: string) => new HttpError(400, { detail });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checked(scene: Scene): Scene {
  if (Buffer.byteLength(JSON.stringify(scene)) > MAX_SCENE_BYTES) throw invalid(`The scene is larger than ${MAX_SCENE_BYTES / 1_048_576} MB.`);
  return scene;
}

/** The stored scene with a posted one merged in; the posted one must be a Potree scene ({"type": "Potree", ...}). */
export function mergeScene(stored: Scene, posted: unknown): Scene {
  if (!isObject(posted) || posted.type !== 'Potree') throw invalid('Invalid potree scene: send a JSON object with "type": "Potree".');
  const merged = { ...stored };
  for (const [key, value] of Object.entries(posted)) if (!KEPT_APART.has(key)) merged[key] = value;
  return checked(merged);
}

/** The stored scene with its camera view set (a new scene when there was none). */
export function withCameraView(stored: Scene, view: unknown): Scene {
  if (!isObject(view) || Object.keys(view).length === 0) throw invalid('view parameter missing: send the camera view as a JSON object.');
  const base = Object.keys(stored).length > 0 ? stored : { type: 'Potree', version: 1.7 };
  return checked({ ...base, view });
}
