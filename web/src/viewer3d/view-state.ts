// What the 3D view's page shows, as one state object, and the view a task's saved scene holds.
import type { Task } from '../api.ts';
import type { ProfilePoint } from '../map/dem.ts';
import type { Vec3 } from './geometry.ts';
import type { Measurement, MeasureTool } from './measure-tools.ts';

/** A camera view as WebODM keeps it in the task's Potree scene: the eye and the point looked at, in the CRS. */
export interface CameraView {
  position: Vec3;
  target: Vec3;
}

const isVec3 = (v: unknown): v is Vec3 => Array.isArray(v) && v.length === 3 && v.every((n) => typeof n === 'number' && Number.isFinite(n));

/** The view a saved scene holds, or null when it holds none usable. */
export function savedView(scene: Record<string, unknown> | undefined): CameraView | null {
  const view = scene?.view as { position?: unknown; target?: unknown } | undefined;
  return view && isVec3(view.position) && isVec3(view.target) ? { position: view.position, target: view.target } : null;
}

export interface ViewState {
  task: Task | null;
  /** Why there is nothing to see, or what went wrong; null when all is well. */
  cloudMessage: string | null;
  cloudLoading: boolean;
  points: number;
  nodes: number;
  bytes: number;
  firstPointsMs: number | null;
  hasModel: boolean;
  modelProgress: number | null;
  modelLoaded: boolean;
  /** The model comes in tiles, streamed at the detail the view needs (its 3D Tiles), not as one GLB. */
  modelStreamed: boolean;
  /** The centre of the model's bounds in the CRS: where its CESIUM_RTC centre put it beside the cloud. */
  modelCentre: Vec3 | null;
  modelMessage: string | null;
  /** Whether the cloud records intensities, which the colour menu then offers. */
  hasIntensity: boolean;
  showCloud: boolean;
  showModel: boolean;
  /** The measuring tool in use, or null. */
  tool: MeasureTool | null;
  picks: Vec3[];
  measurement: Measurement | null;
  /** The cloud's profile along the line the profile tool picked; heights in the CRS. */
  profile: ProfilePoint[] | null;
  /** Whether a clip box hides what lies outside it. */
  clipped: boolean;
  /** What became of the last "save view". */
  viewMessage: string | null;
  hasCameras: boolean;
  showCameras: boolean;
  camerasMessage: string | null;
  /** The photograph of the camera last clicked. */
  photo: string | null;
}

export const initialState: ViewState = {
  task: null,
  cloudMessage: null,
  cloudLoading: true,
  points: 0,
  nodes: 0,
  bytes: 0,
  firstPointsMs: null,
  hasModel: false,
  modelProgress: null,
  modelLoaded: false,
  modelStreamed: false,
  modelCentre: null,
  modelMessage: null,
  hasIntensity: false,
  showCloud: true,
  showModel: false,
  tool: null,
  picks: [],
  measurement: null,
  profile: null,
  clipped: false,
  viewMessage: null,
  hasCameras: false,
  showCameras: false,
  camerasMessage: null,
  photo: null,
};
