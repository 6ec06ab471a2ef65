// ODM's gcp_list.txt as the ground-control editor saves it, checked before it replaces a task's: the first line a
// CRS, then "x y z pixel_x pixel_y image [name] [check]" per mark, each image one of the task's photographs. Pure:
// the first thing wrong is a 400 that names its line.
import { type Static, Type } from '@sinclair/typebox';
import { HttpError } from '../errors.ts';

/** A gcp_list.txt longer than this is not a list of marks. */
export const MAX_GCP_BYTES = 2 * 2 ** 20;
const MAX_POINTS = 1000;
const MAX_MARKS = 10_000;

export const GcpListBody = Type.Object({
  gcp_list: Type.String({ minLength: 1, maxLength: MAX_GCP_BYTES, description: "The file's text (ODM's gcp_list.txt)" }),
});
export type GcpListBody = Static<typeof GcpListBody>;

const Mark = Type.Object({
  image: Type.String({ minLength: 1, maxLength: 255 }),
  x: Type.Number({ description: "Pixel column (ODM's convention: the first pixel's centre is 0)" }),
  y: Type.Number({ description: 'Pixel row' }),
});

export const SightingsBody = Type.Object({
  crs: Type.String({ minLength: 1, maxLength: 4096, description: 'The CRS of the coordinates: EPSG:code, a proj4 string or "WGS84 UTM 30N"' }),
  points: Type.Array(
    Type.Object({
      name: Type.String({ minLength: 1, maxLength: 100 }),
      x: Type.Number(),
      y: Type.Number(),
      z: Type.Number(),
      marks: Type.Optional(Type.Array(Mark, { maxItems: 100, description: 'Where it was marked so far: the prediction follows the marks' })),
    }),
    { minItems: 1, maxItems: MAX_POINTS },
  ),
});
export type SightingsBody = Static<typeof SightingsBody>;

/** Companions of the photographs that are not ground control points. */
const NOT_GCP = new Set(['geo.txt', 'image_groups.txt']);

/** Which of a task's files is its ground control points, as a node picks it: the .txt that is not another's. */
export function gcpFileName(names: string[]): string | undefined {
  return names.find((name) => name.toLowerCase().endsWith('.txt') && !NOT_GCP.has(name.toLowerCase()));
}

const badLine = (number: number, detail: string) => new HttpError(400, { detail: `gcp_list.txt line ${number}: ${detail}` });

export interface GcpListSummary {
  points: number;
  marks: number;
  checkpoints: number;
}

/** The list's counts once every line is checked; `images`: the task's photographs by name. */
export function checkGcpList(text: string, images: ReadonlySet<string>): GcpListSummary {
  const lines = text
    .split(/\r?\n/)
    .map((line, index) => ({ number: index + 1, fields: line.trim().split(/\s+/) }))
    .filter(({ fields }) => fields[0] !== '' && !fields[0].startsWith('#'));
  if (lines.length < 2) throw new HttpError(400, { detail: 'gcp_list.txt needs a coordinate system on its first line, then one line per mark' });
  if (lines.length - 1 > MAX_MARKS) throw new HttpError(400, { detail: `gcp_list.txt has ${lines.length - 1} marks; at most ${MAX_MARKS}` });
  const points = new Map<string, { at: string; check: boolean }>();
  for (const { number, fields } of lines.slice(1)) {
    if (fields.length < 6) throw badLine(number, 'expected "x y z pixel_x pixel_y image [name] [check]"');
    const numbers = fields.slice(0, 5).map(Number);
    if (!numbers.every(Number.isFinite)) throw badLine(number, 'the coordinates and the pixel must be numbers');
    if (numbers[3] < -0.5 || numbers[4] < -0.5) throw badLine(number, 'a pixel cannot be left of or above the photograph');
    if (!images.has(fields[5])) throw badLine(number, `${fields[5]} is not one of the task's photographs`);
    const name = fields[6] ?? fields.slice(0, 3).join(' ');
    const at = fields.slice(0, 3).join(' ');
    const check = ['check', 'checkpoint'].includes((fields[7] ?? '').toLowerCase());
    const known = points.get(name);
    if (known && known.at !== at) throw badLine(number, `point ${name} has two different coordinates`);
    if (known && known.check !== check) throw badLine(number, `point ${name} is a checkpoint on some lines, not on others`);
    points.set(name, { at, check });
  }
  if (points.size > MAX_POINTS) throw new HttpError(400, { detail: `gcp_list.txt has ${points.size} points; at most ${MAX_POINTS}` });
  return { points: points.size, marks: lines.length - 1, checkpoints: [...points.values()].filter((p) => p.check).length };
}
