// Tiles the pyramid does not hold as such, made from the ones it does: a larger tile (512 px, @2x) as a mosaic of
// the tiles under it, a zoom beyond the native one by enlarging part of the deepest tile, and a zoom above the
// pyramid's top by shrinking it. Images are decoded and encoded with sharp (libvips).
import sharp, { type OverlayOptions, type Sharp } from 'sharp';

export const TILE = 256;

/** A position in the pixels of the whole world at zoom z (Web Mercator, 256 px tiles, XYZ). */
export function worldPixel(lon: number, lat: number, z: number): [number, number] {
  const n = TILE * 2 ** z;
  const rad = (lat * Math.PI) / 180;
  return [((lon + 180) / 360) * n, ((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n];
}

/** Looks up one PNG tile of the pyramid (XYZ scheme); null where it holds none. */
export type TileLookup = (z: number, x: number, y: number) => Buffer | null;

const transparent = (size: number) => sharp({ create: { width: size, height: size, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } });

const png = (image: Sharp) => image.png({ compressionLevel: 3 }).toBuffer();

/** A fully transparent tile of that size, for places inside a layer where nothing was surveyed. */
export const emptyTile = (() => {
  const made = new Map<number, Promise<Buffer>>();
  return (size: number): Promise<Buffer> => {
    if (!made.has(size)) made.set(size, png(transparent(size)));
    return made.get(size) as Promise<Buffer>;
  };
})();

/**
 * Tile (z, x, y) drawn at `size` px from the pyramid's tiles at `level`: the 2^(level - z) tiles a side under it
 * when level >= z, else the part of its ancestor at `level` enlarged (nearest neighbour, so pixels stay sharp as
 * in any map). Null where the pyramid holds nothing there.
 */
export async function drawFrom(lookup: TileLookup, level: number, z: number, x: number, y: number, size: number): Promise<Buffer | null> {
  if (level < z) {
    const factor = 2 ** (z - level);
    const parent = lookup(level, Math.floor(x / factor), Math.floor(y / factor));
    if (!parent) return null;
    const part = TILE / factor;
    const region = { left: (x % factor) * part, top: (y % factor) * part, width: part, height: part };
    return png(sharp(parent).extract(region).resize(size, size, { kernel: 'nearest' }));
  }
  const perSide = 2 ** (level - z);
  const piece = size / perSide;
  const overlays: OverlayOptions[] = [];
  for (let row = 0; row < perSide; row++) {
    for (let col = 0; col < perSide; col++) {
      const data = lookup(level, x * perSide + col, y * perSide + row);
      if (!data) continue;
      const input = piece === TILE ? data : await sharp(data).resize(piece, piece, { kernel: piece > TILE ? 'nearest' : 'lanczos3' }).toBuffer();
      overlays.push({ input, left: col * piece, top: row * piece });
    }
  }
  if (overlays.length === 0) return null;
  if (overlays.length === 1 && perSide === 1) return overlays[0].input as Buffer;
  return png(transparent(size).composite(overlays));
}

/**
 * The whole layer in one picture of at most `size` px a side (a thumbnail): the pyramid's tiles at the shallowest
 * zoom where the layer spans `size` px (else its deepest) put side by side, cut to its bounds, then shrunk.
 */
export async function drawOverview(
  lookup: TileLookup,
  info: { minzoom: number; maxzoom: number; bounds: [number, number, number, number] },
  size: number,
): Promise<Sharp> {
  const [west, south, east, north] = info.bounds;
  const pixels = (z: number) => {
    const [left, top] = worldPixel(west, north, z);
    const [right, bottom] = worldPixel(east, south, z);
    return { left, top, right, bottom };
  };
  let z = info.minzoom;
  for (let at = pixels(z); z < info.maxzoom && Math.max(at.right - at.left, at.bottom - at.top) < size; at = pixels(z)) z++;
  const { left, top, right, bottom } = pixels(z);
  const [x0, y0, x1, y1] = [left, top, right, bottom].map((value) => Math.floor(value / TILE));
  const overlays: OverlayOptions[] = [];
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const data = lookup(z, x, y);
      if (data) overlays.push({ input: data, left: (x - x0) * TILE, top: (y - y0) * TILE });
    }
  }
  const canvas = sharp({
    create: { width: (x1 - x0 + 1) * TILE, height: (y1 - y0 + 1) * TILE, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
  });
  // sharp extracts before it composites within one pipeline: the mosaic is made first.
  const mosaic = await canvas.composite(overlays).png({ compressionLevel: 0 }).toBuffer();
  const region = {
    left: Math.max(0, Math.floor(left - x0 * TILE)),
    top: Math.max(0, Math.floor(top - y0 * TILE)),
    width: Math.max(1, Math.round(right - left)),
    height: Math.max(1, Math.round(bottom - top)),
  };
  region.width = Math.min(region.width, (x1 - x0 + 1) * TILE - region.left);
  region.height = Math.min(region.height, (y1 - y0 + 1) * TILE - region.top);
  return sharp(mosaic).extract(region).resize(size, size, { fit: 'inside', withoutEnlargement: true });
}
