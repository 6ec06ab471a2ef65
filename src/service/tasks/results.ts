// A task's results put in place: the node's (or an import's) all.zip unpacked as the task's assets, the tile
// pyramids they lack built, and the task marked COMPLETED with what they hold.
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { engineFailure, lastEngineLine } from '../../protocol/engine.ts';
import { ASSETS } from '../../protocol/files.ts';
import { diskRoom } from '../../files/disk.ts';
import { extractZip } from '../../files/zip-extract.ts';
import type { TaskUpdate } from '../../db/schema.ts';
import { PendingAction, TaskStatus } from '../../protocol/status.ts';
import { restoreBackup } from './backup.ts';
import { buildMissingPyramids } from '../tiles/service.ts';
import { availableAssets, folderSize, installAssets, readAssetFacts } from './assets.ts';
import { type StepContext, fail, save, settled } from './context.ts';

async function imagesInResults(assetsDir: string): Promise<number> {
  try {
    const images: unknown = JSON.parse(await readFile(path.join(assetsDir, 'images.json'), 'utf8'));
    return Array.isArray(images) ? images.length : 0;
  } catch {
    return 0;
  }
}

const execFileAsync = promisify(execFile);

/**
 * The CRS of the results as WebODM keeps it (epsg, else wkt), read by the engine from the orthophoto, else the
 * DSM, else the DTM; both null without a georeferenced raster.
 */
async function resultsCrs(ctx: StepContext, assets: string[]): Promise<{ epsg: number | null; wkt: string | null }> {
  const raster = ['orthophoto.tif', 'dsm.tif', 'dtm.tif'].find((name) => assets.includes(name));
  const source = raster && ASSETS[raster];
  if (!source || !('file' in source)) return { epsg: null, wkt: null };
  try {
    const { stdout } = await execFileAsync(ctx.settings.enginePath, ['crs', path.join(ctx.folder.assets, source.file)], {
      timeout: 60_000,
      signal: ctx.signal,
    });
    const answer = JSON.parse(lastEngineLine(stdout) || '{}') as { epsg?: unknown; wkt?: unknown };
    return {
      epsg: Number.isInteger(answer.epsg) ? (answer.epsg as number) : null,
      wkt: typeof answer.wkt === 'string' ? answer.wkt : null,
    };
  } catch (error) {
    ctx.signal.throwIfAborted();
    ctx.log.warn({ task: ctx.task.id }, `cannot read the CRS of ${raster}: ${engineFailure(error)}`);
    return { epsg: null, wkt: null };
  }
}

/**
 * Unpacks the task's downloaded all.zip as its assets and marks the task COMPLETED. Every part is repeatable:
 * a service stopped half-way extracts again from the zip, which is removed only once the task is complete.
 * Unpacking and tiling stop as soon as the step is aborted (the user's cancel or remove then runs).
 */
export async function completeFromZip(ctx: StepContext, changes: TaskUpdate = {}): Promise<null> {
  const { folder, settings } = ctx;
  await rm(folder.assetsNext, { recursive: true, force: true });
  // Results unpack only into the room above the disk's reserve: a zip that unpacks to more fills nothing.
  const room = Math.max(0, await diskRoom(settings.dataDir, settings.minFreeBytes));
  const limits = { ...settings.zipLimits, maxBytes: Math.min(settings.zipLimits.maxBytes, room) };
  try {
    await extractZip(folder.allZip, folder.assetsNext, 'tree', limits, ctx.signal);
  } catch (error) {
    await rm(folder.assetsNext, { recursive: true, force: true });
    ctx.signal.throwIfAborted();
    await rm(folder.allZip, { force: true });
    const disk = room < settings.zipLimits.maxBytes ? ` (the server's disk has room for ${Math.round(room / 2 ** 20)} MB above its reserve)` : '';
    return fail(ctx, `The task's results cannot be unpacked: ${(error as Error).message}${disk}`);
  }
  return installResults(ctx, changes, folder.allZip);
}

/**
 * Puts the results in assets.next in place of the task's assets (an imported backup's its own), builds the tile
 * pyramids they lack and marks the task COMPLETED; `source` (what they were made from) is removed last.
 */
export async function installResults(ctx: StepContext, changes: TaskUpdate, source: string): Promise<null> {
  const { folder } = ctx;
  let backup;
  try {
    // An imported backup brings the task's photographs, console and fields besides its results.
    backup = ctx.task.pending_action === PendingAction.IMPORT ? await restoreBackup(folder.assetsNext, folder) : null;
  } catch (error) {
    await rm(folder.assetsNext, { recursive: true, force: true });
    await rm(source, { recursive: true, force: true });
    return fail(ctx, `The task's backup cannot be restored: ${(error as Error).message}`);
  }
  await installAssets(backup?.assets ?? folder.assetsNext, folder.assets, folder.assetsOld);
  await rm(folder.assetsNext, { recursive: true, force: true });
  await rm(folder.tileCache, { recursive: true, force: true });
  await buildMissingPyramids(folder.assets, ctx.settings.enginePath, ctx.signal, (message) =>
    ctx.log.warn({ task: ctx.task.id }, message),
  );
  const [assets, facts] = await Promise.all([availableAssets(folder.assets), readAssetFacts(folder.assets)]);
  const crs = await resultsCrs(ctx, assets);
  // Imported results come without the photographs: their count is that of the results' images.json.
  const images = backup?.changes.images_count || ctx.task.images_count || (await imagesInResults(folder.assets));
  await rm(source, { recursive: true, force: true });
  await save(ctx, {
    ...changes,
    // As in WebODM: new results drop the crop drawn on the old ones (a backup brings its own).
    crop: null,
    ...backup?.changes,
    ...crs,
    ...settled,
    status: TaskStatus.COMPLETED,
    pending_action: null,
    last_error: null,
    running_progress: 1,
    available_assets: JSON.stringify(assets),
    extent: facts.extent ? JSON.stringify(facts.extent) : null,
    statistics: JSON.stringify(facts.statistics),
    size: await folderSize(folder.root),
    images_count: images,
  });
  return null;
}
