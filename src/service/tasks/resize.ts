// WebODM's RESIZE action: before a task goes to a node, its photographs are reduced so that their longest side
// is `resize_to` pixels (Lanczos, never enlarged), their EXIF, XMP and colour profile kept, each replaced by a
// rename so that a step cut half-way leaves whole files (it resumes: reduced photographs are skipped). Pixel
// positions in the GCP list are scaled with their photograph. `resize_progress` goes from 0 to 1.
import { readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { partialName } from '../../files/safe-path.ts';
import { type StepContext, save, settled, throttled } from './context.ts';
import { folderSize } from './assets.ts';

const RESIZABLE = /\.(jpe?g|png|tiff?)$/i;
/** .txt files that travel with the photographs but hold no pixel positions. */
const NOT_GCP = new Set(['geo.txt', 'image_groups.txt']);

/** Reduces one photograph in place; answers the scale applied (1: already small enough). */
export async function resizePhoto(file: string, size: number): Promise<number> {
  const { width = 0, height = 0, format } = await sharp(file).metadata();
  const longest = Math.max(width, height);
  if (longest <= size) return 1;
  const tmp = partialName(path.dirname(file));
  try {
    let image = sharp(file).resize({ width: size, height: size, fit: 'inside', kernel: 'lanczos3' }).keepMetadata();
    if (format === 'jpeg') image = image.jpeg({ quality: 100 });
    else if (format === 'png') image = image.png();
    else image = image.tiff();
    await image.toFile(tmp);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  return size / longest;
}

/**
 * A GCP list with the pixel positions of the resized photographs scaled: after its header line, each line is
 * "geo_x geo_y geo_z px py image [name]".
 */
export function scaleGcpList(text: string, scales: Map<string, number>): string {
  const [header, ...lines] = text.split('\n');
  const scaled = lines.map((line) => {
    const fields = line.trim().split(/\s+/);
    const scale = fields.length >= 6 ? scales.get(fields[5]) : undefined;
    if (scale === undefined || scale === 1) return line;
    const [px, py] = [Number(fields[3]), Number(fields[4])];
    if (!Number.isFinite(px) || !Number.isFinite(py)) return line;
    return [...fields.slice(0, 3), String(px * scale), String(py * scale), ...fields.slice(5)].join(' ');
  });
  return [header, ...scaled].join('\n');
}

export async function resizeStep(ctx: StepContext): Promise<number> {
  const { folder, task } = ctx;
  const names = (await readdir(folder.images).catch(() => [] as string[])).sort();
  const photos = names.filter((name) => RESIZABLE.test(name));
  // Reported before each photograph, so that no write of a fraction is still on its way when 1 is saved.
  const report = throttled((fraction) => save(ctx, { resize_progress: fraction }));
  const scales = new Map<string, number>();
  for (const [index, name] of photos.entries()) {
    ctx.signal.throwIfAborted();
    report(index / photos.length);
    scales.set(name, await resizePhoto(path.join(folder.images, name), task.resize_to));
  }
  const gcp = names.find((name) => name.toLowerCase().endsWith('.txt') && !NOT_GCP.has(name.toLowerCase()));
  if (gcp && [...scales.values()].some((scale) => scale !== 1)) {
    const file = path.join(folder.images, gcp);
    const tmp = partialName(folder.images);
    await writeFile(tmp, scaleGcpList(await readFile(file, 'utf8'), scales));
    await rename(tmp, file);
  }
  await save(ctx, { ...settled, pending_action: null, resize_progress: 1, size: await folderSize(folder.root) });
  return 0;
}
