// The ground-control editor's data, pure: surveyed points read from a surveyor's export (CSV or text, a header
// or none, name then coordinates in either order) or from ODM's gcp_list.txt (with its marks), and the
// gcp_list.txt written back. Pixels follow ODM (the first pixel's centre at 0, 0).

export interface Mark {
  x: number;
  y: number;
}

export interface ControlPoint {
  name: string;
  x: number;
  y: number;
  z: number;
  /** A checkpoint: measured against the model, kept out of its georeferencing. */
  check: boolean;
  /** Where it was marked, by photograph. */
  marks: Record<string, Mark>;
}

export interface PointSet {
  /** As ODM's gcp_list.txt names it: "EPSG:32611", a proj4 string or "WGS84 UTM 11N". */
  crs: string;
  points: ControlPoint[];
}

/** The column order of a surveyor's export: name, easting, northing, height, or northing first. */
export type ColumnOrder = 'PENZ' | 'PNEZ';

const CRS_LINE = /^(EPSG:\d+|\+proj=.*|WGS84 UTM \d{1,2}[NS])\s*$/i;
const CHECK_WORDS = ['check', 'checkpoint'];

function fieldsOf(line: string): string[] {
  const delimiter = line.includes(',') ? ',' : line.includes(';') ? ';' : line.includes('\t') ? '\t' : null;
  const parts = delimiter ? line.split(delimiter) : line.split(/\s+/);
  return parts.map((part) => part.trim().replace(/^"(.*)"$/, '$1'));
}

const meaningful = (text: string) =>
  text
    .split(/\r?\n/)
    .map((line, index) => ({ number: index + 1, line: line.trim() }))
    .filter(({ line }) => line !== '' && !line.startsWith('#'));

/** Whether the text is ODM's gcp_list.txt: a CRS line, then lines of three coordinates, a pixel and an image. */
export function isGcpList(text: string): boolean {
  const [first, second] = meaningful(text);
  return Boolean(first && CRS_LINE.test(first.line) && second && second.line.split(/\s+/).length >= 6 && !second.line.includes(','));
}

/**
 * The points of a surveyor's export, one per line: a name and three coordinates in `order` (the point's number
 * where the name is missing), further columns (codes, descriptions) ignored; a first line that is not numbers is
 * a header, one that names a CRS gives it. Throws an Error naming the first line it cannot read.
 */
export function parsePointFile(text: string, order: ColumnOrder, crs: string): PointSet {
  const lines = meaningful(text);
  let given = crs.trim();
  if (lines[0] && CRS_LINE.test(lines[0].line)) given = lines.shift()!.line;
  const points: ControlPoint[] = [];
  for (const [index, { number, line }] of lines.entries()) {
    const fields = fieldsOf(line);
    const numeric = fields.slice(1, 4).map(Number);
    if (fields.length < 4 || !numeric.every(Number.isFinite)) {
      if (index === 0) continue; // a header
      throw new Error(`Line ${number}: expected a name and three coordinates, got “${line}”`);
    }
    const [first, second, z] = numeric;
    const [x, y] = order === 'PENZ' ? [first, second] : [second, first];
    points.push({ name: fields[0] || `${points.length + 1}`, x, y, z, check: false, marks: {} });
  }
  if (!points.length) throw new Error('No points: each line needs a name and three coordinates');
  if (!given) throw new Error('Which coordinate system are the points in? Give its EPSG code (for example EPSG:32611)');
  const names = new Set<string>();
  for (const point of points) {
    if (names.has(point.name)) throw new Error(`Two points are named ${point.name}`);
    names.add(point.name);
  }
  return { crs: given, points };
}

/** The points and marks of ODM's gcp_list.txt. */
export function parseGcpList(text: string): PointSet {
  const [header, ...lines] = meaningful(text);
  if (!header) throw new Error('The file is empty');
  const byName = new Map<string, ControlPoint>();
  for (const { number, line } of lines) {
    const fields = line.split(/\s+/);
    const numbers = fields.slice(0, 5).map(Number);
    if (fields.length < 6 || !numbers.every(Number.isFinite)) throw new Error(`Line ${number}: expected “x y z pixel_x pixel_y image [name]”`);
    const [x, y, z, px, py] = numbers;
    const name = fields[6] ?? `${x} ${y} ${z}`;
    const point = byName.get(name) ?? { name, x, y, z, check: CHECK_WORDS.includes((fields[7] ?? '').toLowerCase()), marks: {} };
    point.marks[fields[5]] = { x: px, y: py };
    byName.set(name, point);
  }
  return { crs: header.line, points: [...byName.values()] };
}

const MARK_DECIMALS = 2;

/** ODM's gcp_list.txt of the points' marks; a point without marks has no line (ODM's format has none for it). */
export function writeGcpList({ crs, points }: PointSet): string {
  const lines = [crs];
  for (const point of points) {
    for (const [image, mark] of Object.entries(point.marks)) {
      const fields = [point.x, point.y, point.z, mark.x.toFixed(MARK_DECIMALS), mark.y.toFixed(MARK_DECIMALS), image, point.name];
      lines.push([...fields, ...(point.check ? ['check'] : [])].join(' '));
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The window of a photograph a zoomed view shows (the service's thumbnail view): centred on a pixel, 2^(zoom - 1)
 * times magnified, in frame coordinates (the frame's edges at 0 and the width).
 */
export function viewWindow(width: number, height: number, centre: Mark, zoom: number) {
  const magnification = 2 ** (zoom - 1);
  const w = width / magnification;
  const h = height / magnification;
  return { left: centre.x + 0.5 - w / 2, top: centre.y + 0.5 - h / 2, width: w, height: h };
}

/** The photograph's pixel (ODM's convention) under a point of a view shown `shown` px wide and high. */
export function pixelAt(window: ReturnType<typeof viewWindow>, shown: { width: number; height: number }, at: { x: number; y: number }): Mark {
  return { x: window.left + (at.x / shown.width) * window.width - 0.5, y: window.top + (at.y / shown.height) * window.height - 0.5 };
}

/** Where a photograph's pixel lies in a view shown `shown` px wide and high (the inverse of pixelAt). */
export function shownAt(window: ReturnType<typeof viewWindow>, shown: { width: number; height: number }, pixel: Mark): { x: number; y: number } {
  return { x: ((pixel.x + 0.5 - window.left) / window.width) * shown.width, y: ((pixel.y + 0.5 - window.top) / window.height) * shown.height };
}
