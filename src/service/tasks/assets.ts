// A task's outputs: the asset names of the spec (and WebODM's) mapped to ODM's paths under assets/, what a
// finished task holds, and putting an extracted all.zip into place.
import { lstat, readFile, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { ASSETS } from '../../protocol/files.ts';

async function exists(file: string, kind: 'file' | 'folder'): Promise<boolean> {
  try {
    const info = await stat(file);
    return kind === 'file' ? info.isFile() : info.isDirectory();
  } catch {
    return false;
  }
}

/** The asset names whose file (or folder) the assets folder holds, in the order of ASSETS. */
export async function availableAssets(assetsDir: string): Promise<string[]> {
  const present = await Promise.all(
    Object.values(ASSETS).map(async (source) =>
      'file' in source ? exists(path.join(assetsDir, source.file), 'file') : exists(path.join(assetsDir, source.folder), 'folder'),
    ),
  );
  const names = Object.keys(ASSETS).filter((_, index) => present[index]);
  // all.zip only when there is something in it besides the console.
  return names.length > 1 ? names : [];
}

/** Every regular file under a folder, as paths relative to it with forward slashes; links are not followed. */
export async function filesUnder(folder: string): Promise<{ relative: string; size: number }[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const files: { relative: string; size: number }[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files.push({ relative: path.relative(folder, full).split(path.sep).join('/'), size: (await lstat(full)).size });
  }
  return files.sort((a, b) => a.relative.localeCompare(b.relative));
}

/** Bytes taken by the files under a folder (0 when it does not exist). */
export async function folderSize(folder: string): Promise<number> {
  try {
    return (await filesUnder(folder)).reduce((sum, file) => sum + file.size, 0);
  } catch {
    return 0;
  }
}

/**
 * An extracted all.zip in ODM's layout: zips made by wrapping the task folder hold it under one top-level
 * folder, which is taken as the root.
 */
async function layoutRoot(extracted: string): Promise<string> {
  const entries = (await readdir(extracted, { withFileTypes: true })).filter((entry) => !entry.name.startsWith('.'));
  const [only] = entries;
  if (entries.length === 1 && only.isDirectory() && !/^odm_|^opensfm$|^entwine/.test(only.name)) {
    return path.join(extracted, only.name);
  }
  return extracted;
}

/** Puts an extracted archive in place as the assets folder, replacing the old one in two renames. */
export async function installAssets(extracted: string, assetsDir: string, oldDir: string): Promise<void> {
  const root = await layoutRoot(extracted);
  await rm(oldDir, { recursive: true, force: true });
  if (await exists(assetsDir, 'folder')) await rename(assetsDir, oldDir);
  await rename(root, assetsDir);
  await rm(oldDir, { recursive: true, force: true });
  if (root !== extracted) await rm(extracted, { recursive: true, force: true });
}

export interface AssetFacts {
  extent: [number, number, number, number] | null;
  statistics: Record<string, unknown>;
}

function isBounds(value: unknown): value is [number, number, number, number] {
  return Array.isArray(value) && value.length === 4 && value.every((v) => typeof v === 'number' && Number.isFinite(v));
}

type Section = Record<string, unknown> | undefined;

/**
 * The figures WebODM shows for a task, read from the sections of stats.json that ODM's report writes (and the
 * engine writes too, so an ODM archive and an Aeromap one read alike): the point count of the dense cloud, else
 * of the sparse one; the average GSD in cm; the area in m²; the capture dates of the first and last photograph.
 */
export function webodmStatistics(stats: Record<string, unknown>): Record<string, unknown> {
  const section = (name: string) => stats[name] as Section;
  const cloud = section('point_cloud_statistics');
  const denseStats = (cloud?.stats as Section)?.statistic;
  const points = cloud?.dense
    ? (Array.isArray(denseStats) ? (denseStats[0] as Section)?.count : undefined)
    : section('reconstruction_statistics')?.reconstructed_points_count;
  const processing = section('processing_statistics');
  return {
    pointcloud: { points: points ?? null },
    gsd: section('odm_processing_statistics')?.average_gsd ?? null,
    area: processing?.area ?? null,
    start_date: processing?.start_date ?? null,
    end_date: processing?.end_date ?? null,
  };
}

/**
 * What the engine's report says of a finished task: the WGS84 bounds of the orthophoto (else the DSM, else the
 * DTM) and the quality figures: WebODM's keys (webodmStatistics) beside the engine's own sections. An archive
 * without a report has none.
 */
export async function readAssetFacts(assetsDir: string): Promise<AssetFacts> {
  let statistics: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(await readFile(path.join(assetsDir, 'odm_report', 'stats.json'), 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) statistics = parsed as Record<string, unknown>;
  } catch {
    // No report, or one that is not JSON: the task has no figures.
  }
  const boundsOf = (section: string) => (statistics[section] as { bounds_wgs84?: unknown } | undefined)?.bounds_wgs84;
  const extent = ['orthophoto', 'dem'].map(boundsOf).find(isBounds) ?? null;
  if (Object.keys(statistics).length > 0) statistics = { ...statistics, ...webodmStatistics(statistics) };
  return { extent, statistics };
}

/**
 * The real path of `relative` inside the assets folder when it is a regular file there, else null: no
 * climbing out, no link that leads outside, no folders.
 */
export async function resolveAssetPath(assetsDir: string, relative: string): Promise<string | null> {
  if (relative.includes('\0')) return null;
  try {
    const root = await realpath(assetsDir);
    const target = await realpath(path.resolve(root, relative));
    if (!target.startsWith(root + path.sep)) return null;
    return (await stat(target)).isFile() ? target : null;
  } catch {
    return null;
  }
}

/** WebODM's download name: the task's name with only letters, digits, - and _, then the asset's name. */
export function downloadName(taskName: string, asset: string): string {
  const stem = taskName.replaceAll(' ', '-').replaceAll('/', '-').replace(/[^0-9a-zA-Z_-]+/g, '');
  return stem ? `${stem}-${asset}` : asset;
}
