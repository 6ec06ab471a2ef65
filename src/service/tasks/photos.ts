// The photographs a task was made from, as WebODM serves them (images/download/{name}, images/thumbnail/{name}):
// each by its own name, from the task's images folder alone. A compacted task has none left.
import { type Static, Type } from '@sinclair/typebox';
import sharp from 'sharp';
import { HttpError, notFound } from '../errors.ts';
import { resolveAssetPath } from './assets.ts';

const Fraction = (across: string) =>
  Type.Number({ minimum: -0.5, maximum: 1.5, default: 0.5, description: `Centre of the view ${across} the photograph, from 0 to 1 (a view may reach past its edge)` });

export const PhotoThumbnailQuery = Type.Object({
  size: Type.Integer({ minimum: 1, maximum: 4096, default: 512, description: 'Pixels of the longer side (a photograph is never enlarged)' }),
  quality: Type.Integer({ minimum: 0, maximum: 100, default: 75, description: 'JPEG quality' }),
  center_x: Fraction('across'),
  center_y: Fraction('down'),
  zoom: Type.Number({ minimum: 0.2, maximum: 6, default: 1, description: 'Magnification 2^(zoom - 1) about the centre: 1 shows the whole photograph, 2 a half of it across' }),
  draw_point: Type.Array(Type.String({ pattern: '^\\s*-?\\d+(\\.\\d+)?\\s*,\\s*-?\\d+(\\.\\d+)?\\s*$' }), {
    default: [],
    maxItems: 100,
    description: 'x,y of a point to circle, in fractions of the photograph (repeat the parameter for more)',
  }),
  point_color: Type.Array(Type.String(), { default: [], maxItems: 100, description: 'Hex colour of each point, in order (white where missing or not a colour)' }),
  point_radius: Type.Array(Type.Number({ minimum: 0, maximum: 100 }), {
    default: [],
    maxItems: 100,
    description: "Radius of each point's circle in percent of the photograph's longer side, magnified with the view (1 where missing)",
  }),
});
export type PhotoThumbnailQuery = Static<typeof PhotoThumbnailQuery>;

/** A part of a photograph to show and the points to circle on it, in fractions of the photograph. */
export interface PhotoView {
  centerX: number;
  centerY: number;
  zoom: number;
  points: { x: number; y: number; color: string; radius: number }[];
}

export function photoViewOf(query: PhotoThumbnailQuery): PhotoView {
  const points = query.draw_point.map((point, i) => {
    const [x, y] = point.split(',').map(Number);
    const colour = query.point_color[i]?.replace(/^#/, '') ?? '';
    return { x, y, color: /^[0-9a-f]{6}$/i.test(colour) ? `#${colour}` : '#ffffff', radius: query.point_radius[i] ?? 1 };
  });
  return { centerX: query.center_x, centerY: query.center_y, zoom: query.zoom, points };
}

/** The window a view shows of a `width` x `height` photograph, in its pixels (it may reach past the edges). */
export function viewWindow(width: number, height: number, view: PhotoView) {
  const magnification = 2 ** (view.zoom - 1);
  const w = width / magnification;
  const h = height / magnification;
  return { left: view.centerX * width - w / 2, top: view.centerY * height - h / 2, width: w, height: h, magnification };
}

/** The file of a photograph named by a client: a regular file directly in the images folder, else a 404. */
export async function photoFile(imagesDir: string, name: string): Promise<string> {
  // One name, no folders: nothing but the uploads themselves, never a link out or a partial upload.
  if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw notFound('Image does not exist');
  const file = await resolveAssetPath(imagesDir, name);
  if (!file) throw notFound('Image does not exist');
  return file;
}

/**
 * A JPEG of the view of the photograph (turned as its EXIF orientation says) at most `size` px a side, never larger
 * than the photograph: black past its edges, the points circled as WebODM's image viewer draws them.
 */
export async function photoThumbnail(file: string, size: number, quality: number, view: PhotoView): Promise<Buffer> {
  try {
    const meta = await sharp(file).metadata();
    const turned = (meta.orientation ?? 1) >= 5;
    const [width, height] = turned ? [meta.height ?? 0, meta.width ?? 0] : [meta.width ?? 0, meta.height ?? 0];
    const scale = Math.min(size, Math.max(width, height)) / Math.max(width, height);
    const out = { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
    const window = viewWindow(width, height, view);
    const k = out.width / window.width; // output pixels per photograph pixel
    const shown = await visiblePart(file, width, height, window, k, out);
    const circles = view.points.map((point) => {
      const r = (point.radius / 100) * Math.max(width, height) * k;
      const cx = (point.x * width - window.left) * k;
      const cy = (point.y * height - window.top) * k;
      return `<circle cx="${cx}" cy="${cy}" r="${r}" fill="none" stroke="${point.color}" stroke-width="${Math.max(1, Math.floor(r / 3))}"/>`;
    });
    const overlay = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${out.width}" height="${out.height}">${circles.join('')}</svg>`);
    return await sharp(shown, { raw: { width: out.width, height: out.height, channels: 3 } })
      .composite(circles.length ? [{ input: overlay, left: 0, top: 0 }] : [])
      .jpeg({ quality: Math.max(1, quality) })
      .toBuffer();
  } catch (error) {
    throw new HttpError(400, { detail: `This file is not an image a thumbnail can be made of: ${(error as Error).message}` });
  }
}

/** The window's pixels at `k` output pixels per photograph pixel, `out` in size, black where it leaves the photograph. */
async function visiblePart(file: string, width: number, height: number, window: ReturnType<typeof viewWindow>, k: number, out: { width: number; height: number }): Promise<Buffer> {
  const black = { r: 0, g: 0, b: 0 };
  const x0 = Math.max(0, Math.floor(window.left));
  const y0 = Math.max(0, Math.floor(window.top));
  const x1 = Math.min(width, Math.ceil(window.left + window.width));
  const y1 = Math.min(height, Math.ceil(window.top + window.height));
  const canvas = sharp({ create: { ...out, channels: 3, background: black } });
  const part = { width: Math.round((x1 - x0) * k), height: Math.round((y1 - y0) * k) };
  if (part.width < 1 || part.height < 1) return canvas.raw().toBuffer();
  const pixels = await sharp(file)
    .rotate()
    .extract({ left: x0, top: y0, width: x1 - x0, height: y1 - y0 })
    .resize(part.width, part.height, { fit: 'fill' })
    .flatten({ background: '#ffffff' })
    .removeAlpha()
    .png({ compressionLevel: 0 })
    .toBuffer();
  // Where the part lies on the canvas, cut to it: rounding may take it a pixel past an edge.
  const left = Math.round((x0 - window.left) * k);
  const top = Math.round((y0 - window.top) * k);
  const from = { x: Math.max(0, -left), y: Math.max(0, -top) };
  const to = { x: Math.min(part.width, out.width - left), y: Math.min(part.height, out.height - top) };
  if (to.x <= from.x || to.y <= from.y) return canvas.raw().toBuffer();
  const cut = await sharp(pixels).extract({ left: from.x, top: from.y, width: to.x - from.x, height: to.y - from.y }).toBuffer();
  return canvas.composite([{ input: cut, left: Math.max(0, left), top: Math.max(0, top) }]).removeAlpha().raw().toBuffer();
}
