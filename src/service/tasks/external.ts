// Importing products made elsewhere (tasks/import/external, as WebODM): init gives an upload id, upload stores
// one product per request (the form field names it: orthophoto, dsm, dtm, pointcloud, texturedmodel; Dropzone
// chunks too), commit has the engine check them (CRS, bands, LAS and glTF signatures; 400 with the reasons) and
// creates the task, which the import step turns into results (engine `external`), tiles and COPC included.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { externalStaging } from '../layout.ts';
import { badRequest, dropzoneChunk, writeChunk } from './intake.ts';
import { type ImportSettings, createImport } from './import.ts';
import { admitUpload } from './storage.ts';
import { engineFailure, lastEngineLine } from '../../protocol/engine.ts';
import { type StepContext, fail } from './context.ts';
import { installResults } from './results.ts';

export const EXTERNAL_IMPORT = 'file://external';

/** The products, by form field: the extensions taken and the name staged (the asset's name, as the engine's
 * external/products.py reads them). */
const PRODUCTS: Record<string, { extensions: string[]; asset: string }> = {
  orthophoto: { extensions: ['.tif', '.tiff'], asset: 'orthophoto.tif' },
  dsm: { extensions: ['.tif', '.tiff'], asset: 'dsm.tif' },
  dtm: { extensions: ['.tif', '.tiff'], asset: 'dtm.tif' },
  pointcloud: { extensions: ['.laz', '.las'], asset: 'georeferenced_model.laz' },
  texturedmodel: { extensions: ['.glb'], asset: 'textured_model.glb' },
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const execFileAsync = promisify(execFile);

/** The staging folder of an upload id in a project; an id that is not one this project began is refused. */
function stagingFolder(settings: ImportSettings, projectId: number, uuid: unknown): string {
  const folder = typeof uuid === 'string' && UUID.test(uuid) ? path.join(externalStaging(settings.dataDir, projectId), uuid) : null;
  if (!folder || !existsSync(folder)) throw badRequest('Invalid uuid: begin with tasks/import/external/init in this project.');
  return folder;
}

export async function initExternal(settings: ImportSettings, projectId: number): Promise<string> {
  const uuid = randomUUID();
  await mkdir(path.join(externalStaging(settings.dataDir, projectId), uuid), { recursive: true });
  return uuid;
}

/** Why a file sent under `field` cannot be stored in the upload `uuid`, or null. */
function fileRefusal(settings: ImportSettings, projectId: number, uuid: unknown, field: string, filename: string): Error | null {
  try {
    stagingFolder(settings, projectId, uuid);
  } catch (error) {
    return error as Error;
  }
  const product = Object.hasOwn(PRODUCTS, field) ? PRODUCTS[field] : undefined;
  if (!product) return badRequest(`Send the file as one of ${Object.keys(PRODUCTS).join(', ')} (not "${field}").`);
  if (!product.extensions.includes(path.extname(filename).toLowerCase())) {
    return badRequest(`A ${field} must be a ${product.extensions.join(' or ')} file, not "${filename}".`);
  }
  return null;
}

/** Stores the product of one multipart request (whole or a Dropzone chunk); answers the asset and whether it is whole. */
export async function uploadExternal(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  request: FastifyRequest,
): Promise<{ asset: string; done: boolean }> {
  const budget = await admitUpload(db, settings, projectId);
  const fields: Record<string, string> = {};
  let stored: { asset: string; done: boolean } | null = null;
  for await (const part of request.parts({ limits: { fileSize: settings.maxBytes, files: 1, fields: 20 } })) {
    if (part.type === 'field') {
      if (typeof part.value === 'string') fields[part.fieldname] = part.value;
      continue;
    }
    // A refused file is read to its end first: a body left unread keeps the client's connection busy.
    const refusal = fileRefusal(settings, projectId, fields.uuid, part.fieldname, part.filename);
    if (refusal) {
      part.file.resume();
      await finished(part.file);
      throw refusal;
    }
    const folder = stagingFolder(settings, projectId, fields.uuid);
    const product = PRODUCTS[part.fieldname];
    const chunk = dropzoneChunk(fields);
    if (chunk && chunk.offset > settings.maxBytes) throw badRequest('The file is larger than the import limit.');
    await writeChunk(part, path.join(folder, product.asset), chunk?.offset ?? 0, budget);
    stored = { asset: product.asset, done: chunk?.last ?? true };
  }
  if (!stored) {
    stagingFolder(settings, projectId, fields.uuid);
    throw badRequest(`No file uploaded: send one of ${Object.keys(PRODUCTS).join(', ')}.`);
  }
  return stored;
}

/** The fields of a multipart form without files (a commit sent as a form). */
export async function multipartFields(request: FastifyRequest): Promise<Record<string, string>> {
  const fields: Record<string, string> = {};
  for await (const part of request.parts({ limits: { files: 0, fields: 20 } })) {
    if (part.type === 'field' && typeof part.value === 'string') fields[part.fieldname] = part.value;
  }
  return fields;
}

/** Checks the staged products (400 with what is wrong) and creates the importing task around them. */
export async function commitExternal(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  uuid: unknown,
  name: string | undefined,
): Promise<number> {
  const folder = stagingFolder(settings, projectId, uuid);
  const problems = await checkProducts(settings.enginePath, folder);
  if (problems.length > 0) throw badRequest(`The products cannot be imported: ${problems.join('; ')}.`);
  return createImport(db, settings, projectId, name, EXTERNAL_IMPORT, (task) => rename(folder, task.external));
}

async function checkProducts(enginePath: string, folder: string): Promise<string[]> {
  if ((await readdir(folder)).length === 0) return ['nothing was uploaded'];
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(enginePath, ['external', folder], { timeout: 120_000 }));
  } catch (error) {
    return [`they could not be read (${engineFailure(error)})`];
  }
  const answer = JSON.parse(lastEngineLine(stdout) || '{}') as { problems?: unknown };
  return Array.isArray(answer.problems) ? answer.problems.map(String) : ['the products could not be checked'];
}

/** Has the engine write the staged products as the task's results, then puts them in place. */
export async function externalStep(ctx: StepContext): Promise<null> {
  const { folder } = ctx;
  if (!existsSync(folder.external)) return fail(ctx, 'The uploaded products are missing; import them again.');
  await rm(folder.assetsNext, { recursive: true, force: true });
  try {
    await execFileAsync(ctx.settings.enginePath, ['external', folder.external, folder.assetsNext], {
      timeout: 60 * 60_000,
      maxBuffer: 16 * 2 ** 20,
      signal: ctx.signal,
    });
  } catch (error) {
    await rm(folder.assetsNext, { recursive: true, force: true });
    ctx.signal.throwIfAborted();
    return fail(ctx, `The products cannot be imported: ${engineFailure(error)}`);
  }
  return installResults(ctx, {}, folder.external);
}
