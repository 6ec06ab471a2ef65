// WebODM's RESIZE action: before a task goes to a node, its photographs are reduced so that their longest side
// is `resize_to` pixels (Lanczos, never enlarged), their EXIF, XMP and colour profile kept, each replaced by a
// rename so that a step cut half-way leaves whole files. Pixel positions in the GCP list are scaled with their
// photograph. What the folder held first (each photograph's longest side, the GCP list) is written down before
// anything changes, so that a step that resumes scales the list from the first sizes, whatever was reduced
// already. `resize_progress` goes from 0 to 1.
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { partialName } from '../../files/safe-path.ts';
import { type StepContext, save, settled, throttled } from './context.ts';
import { folderSize } from './assets.ts';
import { gcpFileName } from '../gcp/list.ts';
import { isImageName } from '../../protocol/files.ts';

const RESIZABLE = /\.(jpe?g|png|tiff?)$/i;

/** Reduces one photograph in place, unless its longest side is within `size` already. */
export async function resizePhoto(file: string, size: number): Promise<void> {
  const { width = 0, height = 0, format } = await sharp(file).metadata();
  if (Math.max(width, height) <= size) return;
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
}

/** The folder before the resize: each photograph's longest side, and the GCP list's name and text. */
interface ResizePlan {
  longest: Record<string, number>;
  gcp: { name: string; text: string } | null;
}

/** The plan written by an earlier run of the step, or a new one, written down before any photograph changes. */
async function resizePlan(file: string, images: string): Promise<ResizePlan> {
  const known = await readFile(file, 'utf8').then((text) => JSON.parse(text) as ResizePlan, () => null);
  if (known) return known;
  const names = (await readdir(images).catch(() => [] as string[])).sort();
  const longest: Record<string, number> = {};
  for (const name of names.filter((n) => RESIZABLE.test(n) && isImageName(n))) {
    const { width = 0, height = 0 } = await sharp(path.join(images, name)).metadata();
    longest[name] = Math.max(width, height);
  }
  const gcpName = gcpFileName(names);
  const plan: ResizePlan = { longest, gcp: gcpName ? { name: gcpName, text: await readFile(path.join(images, gcpName), 'utf8') } : null };
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = partialName(path.dirname(file));
  await writeFile(tmp, JSON.stringify(plan));
  await rename(tmp, file);
  return plan;
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

/**
 * Reduces the photographs of `images` (and scales its GCP list), from the plan at `planFile` when an earlier run
 * left one; `progress` is told the share done before each photograph.
 */
export async function resizeFolder(images: string, planFile: string, size: number, progress: (fraction: number) => void, signal: AbortSignal) {
  const plan = await resizePlan(planFile, images);
  const photos = Object.keys(plan.longest);
  for (const [index, name] of photos.entries()) {
    progress(index / photos.length);
    signal.throwIfAborted();
    await resizePhoto(path.join(images, name), size);
  }
  const scales = new Map(photos.map((name) => [name, Math.min(1, size / plan.longest[name])]));
  if (plan.gcp && [...scales.values()].some((scale) => scale !== 1)) {
    const tmp = partialName(images);
    await writeFile(tmp, scaleGcpList(plan.gcp.text, scales));
    await rename(tmp, path.join(images, plan.gcp.name));
  }
  await rm(planFile, { force: true });
}

export async function resizeStep(ctx: StepContext): Promise<number> {
  const { folder, task } = ctx;
  // Reported before each photograph, so that no write of a fraction is still on its way when 1 is saved.
  const report = throttled((fraction) => save(ctx, { resize_progress: fraction }));
  await resizeFolder(folder.images, folder.resizePlan, task.resize_to, report, ctx.signal);
  await save(ctx, { ...settled, pending_action: null, resize_progress: 1, size: await folderSize(folder.root) });
  return 0;
}
