// Tiles the pyramid does not hold as such, made from the ones it does: a larger tile (512 px, @2x) as a mosaic of
// the tiles under it, a zoom beyond the native one by enlarging part of the deepest tile, and a zoom above the
// pyramid's top by shrinking it. Images are decoded and encoded with sharp (libvips).
import sharp, { type OverlayOptions, type Sharp } from 'sharp';

export const TILE = 256;

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
