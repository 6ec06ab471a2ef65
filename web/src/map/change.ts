// The change between two surveys on the map: the service takes one task's DSM or DTM less an earlier task's
// (a GeoTIFF on the earlier model's grid, and its cut and fill), the browser colours it on a diverging ramp
// (red where the ground went down, blue where it went up, white where nothing changed) and lays it over the map.
import { fromArrayBuffer } from 'geotiff';
import proj4 from 'proj4';
import { ApiError, type Task, api, taskPath } from '../api.ts';
import { epsgFromGeoKeys, proj4Definition } from './crs.ts';
import { type Started, jsonJob, waitForJob } from './jobs.ts';

export type Surface = 'dsm' | 'dtm';

export interface ChangeFigures {
  cut: number;
  fill: number;
  net: number;
  area: number;
  changed_area: number;
}

/** The change as an image: RGBA pixels, the four corners in longitude and latitude, the ramp's half range. */
export interface ChangeImage {
  width: number;
  height: number;
  rgba: Uint8ClampedArray<ArrayBuffer>;
  corners: [[number, number], [number, number], [number, number], [number, number]];
  /** The ramp runs from -limit (deepest red) to +limit (deepest blue), metres. */
  limit: number;
}

/** Red for the ground gone down, white for none, blue for up: ColorBrewer's RdBu. */
export const CHANGE_STOPS = ['#b2182b', '#ef8a62', '#fddbc7', '#f7f7f7', '#d1e5f0', '#67a9cf', '#2166ac'];

function rgb(hex: string): [number, number, number] {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
}

/** The colour of a change on the ramp, -limit to +limit. */
export function changeColour(value: number, limit: number): [number, number, number] {
  const t = Math.min(1, Math.max(0, (value / limit + 1) / 2)) * (CHANGE_STOPS.length - 1);
  const i = Math.min(CHANGE_STOPS.length - 2, Math.floor(t));
  const [a, b] = [rgb(CHANGE_STOPS[i]), rgb(CHANGE_STOPS[i + 1])];
  return a.map((v, k) => Math.round(v + (b[k] - v) * (t - i))) as [number, number, number];
}

/** A round half range that holds the 98th percentile of the changes' sizes (at least 1 cm). */
export function changeLimit(values: ArrayLike<number>, nodata: number | null): number {
  const sizes: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isFinite(v) && v !== nodata && v !== 0) sizes.push(Math.abs(v));
  }
  if (!sizes.length) return 0.01;
  sizes.sort((p, q) => p - q);
  const wanted = Math.max(0.01, sizes[Math.floor(0.98 * (sizes.length - 1))]);
  const power = 10 ** Math.floor(Math.log10(wanted));
  return ([1, 2, 5, 10].map((step) => step * power).find((value) => value >= wanted) ?? 10 * power) + 0;
}

/** The change's pixels coloured, transparent where it has no value or none changed. */
export function colourChange(values: ArrayLike<number>, nodata: number | null, limit: number): Uint8ClampedArray<ArrayBuffer> {
  const rgba = new Uint8ClampedArray(values.length * 4);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v) || v === nodata || v === 0) continue;
    rgba.set([...changeColour(v, limit), 220], i * 4);
  }
  return rgba;
}

const differencePath = (later: Task, surface: Surface) => `${taskPath(later.project, later.id)}/${surface}/difference`;
const reference = (earlier: Task) => ({ reference_project: earlier.project, reference_task: earlier.id });

/** The change as a GeoTIFF, on the earlier model's grid. */
async function changeRaster(later: Task, earlier: Task, surface: Surface, signal: AbortSignal): Promise<ArrayBuffer> {
  const started = await api<Started>(differencePath(later, surface), { method: 'POST', body: { ...reference(earlier), format: 'gtiff' }, signal });
  const done = await waitForJob(started, signal, 500);
  const response = await fetch(done.url, { signal });
  if (!response.ok) throw new ApiError(response.status, null);
  return response.arrayBuffer();
}

/** The change from `earlier` to `later` on the surface: its figures and its image. */
export async function measureChange(later: Task, earlier: Task, surface: Surface, signal: AbortSignal): Promise<{ figures: ChangeFigures; image: ChangeImage }> {
  const [figures, tiff] = await Promise.all([
    jsonJob<ChangeFigures>(differencePath(later, surface), { ...reference(earlier), format: 'json' }, signal),
    changeRaster(later, earlier, surface, signal),
  ]);
  const image = await (await fromArrayBuffer(tiff)).getImage(0);
  const epsg = epsgFromGeoKeys(image.getGeoKeys() ?? {});
  const definition = epsg === null ? null : proj4Definition(epsg);
  if (definition === null) throw new Error(`The change is in a coordinate system this viewer cannot convert (${epsg === null ? 'no EPSG code' : `EPSG:${epsg}`}).`);
  const [west, south, east, north] = image.getBoundingBox();
  const toLonLat = proj4(definition, 'EPSG:4326');
  const corner = (x: number, y: number) => toLonLat.forward([x, y]) as [number, number];
  const raster = await image.readRasters({ samples: [0] });
  const values = raster[0] as ArrayLike<number>;
  const nodata = image.getGDALNoData();
  const limit = changeLimit(values, nodata);
  return {
    figures,
    image: {
      width: image.getWidth(),
      height: image.getHeight(),
      rgba: colourChange(values, nodata, limit),
      corners: [corner(west, north), corner(east, north), corner(east, south), corner(west, south)],
      limit,
    },
  };
}
