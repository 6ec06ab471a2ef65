// Importing results processed elsewhere (tasks/import): an all.zip of Aeromap, ODM or WebODM, or a task's backup
// (backup.ts), uploaded (as an application/zip body, or a multipart file, in Dropzone chunks too) or fetched from
// a URL. An uploaded zip that cannot be read or would unpack outside its folder is refused at once (400). The new
// task shows the download's progress and ends COMPLETED with the assets found, or FAILED with the reason.
import { createWriteStream } from 'node:fs';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { deleteTask, insertTask } from '../../db/tasks.ts';
import { PendingAction, TaskStatus } from '../../protocol/status.ts';
import { partialName } from '../../files/safe-path.ts';
import { checkEntryNames } from '../../files/zip-extract.ts';
import { outboundFetch, refusal } from '../../net/outbound.ts';
import { HttpError } from '../errors.ts';
import { type StepContext, fail, save, throttled } from './context.ts';
import { completeFromZip } from './results.ts';
import { badRequest, dropzoneChunk, writeChunk } from './intake.ts';
import { type TaskFolder, importStaging, taskFolder } from '../layout.ts';
import { type StorageSettings, type WriteBudget, admitUpload, diskBudget } from './storage.ts';

export const UPLOADED_ZIP = 'file://all.zip';
const DEFAULT_NAME = 'Imported Task';

/** A byte counter that stops the stream past a limit. */
function limitBytes(maxBytes: number, onBytes: (total: number) => void): Transform {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      total += chunk.length;
      if (total > maxBytes) return callback(new Error(`larger than the limit of ${maxBytes} bytes`));
      onBytes(total);
      callback(null, chunk);
    },
  });
}

/** Fetches a URL into a file (a temporary name first); the server must start answering within the timeout. */
async function fetchToFile(ctx: StepContext, url: string, file: string): Promise<void> {
  const { importTimeoutMs, importMaxBytes } = ctx.settings;
  const headers = new AbortController();
  const timer = setTimeout(() => headers.abort(new Error(`no answer within ${importTimeoutMs / 1000} s`)), importTimeoutMs);
  let response: Awaited<ReturnType<typeof outboundFetch>>;
  try {
    response = await outboundFetch(url, { signal: AbortSignal.any([headers.signal, ctx.signal]) }, { allowPrivate: ctx.settings.allowPrivateUrls });
  } catch (error) {
    const reason = headers.signal.aborted ? (headers.signal.reason as Error) : error;
    throw new Error(describeFetchError(reason));
  } finally {
    clearTimeout(timer);
  }
  const length = Number(response.headers.get('content-length') ?? 0);
  if (!response.ok || !response.body || length > importMaxBytes) {
    // The body left unread would hold its connection open.
    await response.body?.cancel();
    throw new Error(response.ok && response.body ? `${length} bytes is larger than the limit of ${importMaxBytes} bytes` : `the server answered HTTP ${response.status}`);
  }
  const report = throttled((fraction) => save(ctx, { running_progress: 0.9 * fraction }));
  const budget = await diskBudget(ctx.settings);
  const tmp = partialName(path.dirname(file));
  try {
    await pipeline(
      Readable.fromWeb(response.body as never),
      limitBytes(importMaxBytes, (total) => length > 0 && report(total / length)),
      budget.meter(),
      createWriteStream(tmp),
      { signal: ctx.signal },
    );
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
}

function describeFetchError(error: unknown): string {
  const refused = refusal(error);
  if (refused) return `${refused.message}; set ALLOW_PRIVATE_URLS=true to import from there`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** Downloads the zip if it came by URL, then unpacks it. */
export async function importStep(ctx: StepContext): Promise<null> {
  const { task, folder } = ctx;
  if (!existsSync(folder.allZip)) {
    const url = task.import_url ?? '';
    if (!/^https?:\/\//i.test(url)) return fail(ctx, 'The uploaded zip file is missing; import it again.');
    await mkdir(folder.work, { recursive: true });
    try {
      await fetchToFile(ctx, url, folder.allZip);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      return fail(ctx, `Cannot download ${url}: ${(error as Error).message}`);
    }
  }
  return completeFromZip(ctx);
}

export interface ImportSettings extends StorageSettings {
  maxBytes: number;
  /** The engine that checks products imported from elsewhere. */
  enginePath: string;
  wake(): void;
}

/** Creates the importing task around what `place` puts into the task's folder (a zip, or products). */
export async function createImport(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  name: string | undefined,
  importUrl: string,
  place?: (folder: TaskFolder) => Promise<void>,
): Promise<number> {
  const id = await insertTask(db, {
    project_id: projectId,
    name: name || DEFAULT_NAME,
    processing_node_id: null,
    auto_processing_node: 0,
    options: '[]',
    // Partial until the upload is in place, so the scheduler does not start on a half-written one.
    partial: 1,
    status: TaskStatus.RUNNING,
    pending_action: PendingAction.IMPORT,
    import_url: importUrl,
  });
  const folder = taskFolder(settings.dataDir, projectId, id);
  try {
    if (place) {
      await mkdir(folder.work, { recursive: true });
      await place(folder);
    }
    await db.updateTable('tasks').set({ partial: 0 }).where('id', '=', id).execute();
  } catch (error) {
    await deleteTask(db, id);
    await rm(folder.root, { recursive: true, force: true });
    throw error;
  }
  settings.wake();
  return id;
}

/** Creates the importing task around a zip that `write` writes; one that cannot be read or would unpack outside
 * its folder is refused. */
function createZipImport(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  name: string | undefined,
  write: (zipFile: string) => Promise<void>,
): Promise<number> {
  return createImport(db, settings, projectId, name, UPLOADED_ZIP, async (folder) => {
    await write(folder.allZip);
    await checkEntryNames(folder.allZip).catch((error: Error) => {
      throw badRequest(`The zip file cannot be imported: ${error.message}.`);
    });
  });
}

/** An application/zip body, streamed to the task's folder. */
export async function importZipBody(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  body: NodeJS.ReadableStream,
  name: string | undefined,
): Promise<number> {
  return storeZip(db, settings, projectId, body, name, await admitUpload(db, settings, projectId));
}

function storeZip(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  body: NodeJS.ReadableStream,
  name: string | undefined,
  budget: WriteBudget,
): Promise<number> {
  return createZipImport(db, settings, projectId, name, async (zipFile) => {
    const tmp = partialName(path.dirname(zipFile));
    try {
      const tooLarge = (error: Error) => new HttpError(413, { detail: `The zip file is ${error.message}.` });
      await pipeline(body, limitBytes(settings.maxBytes, () => undefined), budget.meter(), createWriteStream(tmp)).catch((error: Error) => {
        throw error instanceof HttpError ? error : tooLarge(error);
      });
      await rename(tmp, zipFile);
    } finally {
      await rm(tmp, { force: true });
    }
  });
}

export async function importFromUrl(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  url: string,
  name: string | undefined,
): Promise<number> {
  if (!/^https?:\/\/[^\s/]+/i.test(url)) {
    const hint = /^[\w.-]+\.[a-z]{2,}/i.test(url) ? ` Did you mean http://${url}?` : '';
    throw new HttpError(400, { url: [`Invalid URL: it must start with http:// or https://.${hint}`] });
  }
  await admitUpload(db, settings, projectId);
  return createImport(db, settings, projectId, name, url);
}

/**
 * A multipart import: one zip file, whole or in Dropzone chunks. A chunk that is not the last is stored under
 * the upload's id and answered with null; the last one creates the task.
 */
export async function importMultipart(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  request: FastifyRequest,
): Promise<number | null> {
  const budget = await admitUpload(db, settings, projectId);
  const fields: Record<string, string> = {};
  const staging = importStaging(settings.dataDir);
  await mkdir(staging, { recursive: true });
  let created: number | null = null;
  let files = 0;
  for await (const part of request.parts({ limits: { fileSize: settings.maxBytes, files: 1, fields: 20 } })) {
    if (part.type === 'field') {
      if (typeof part.value === 'string') fields[part.fieldname] = part.value;
      continue;
    }
    files++;
    created = await importPart(db, settings, projectId, part, fields, staging, budget);
  }
  if (files === 0) {
    if (fields.url) return importFromUrl(db, settings, projectId, fields.url, fields.name);
    throw badRequest('Send one zip file (or a url) to import.');
  }
  return created;
}

async function importPart(
  db: Kysely<Database>,
  settings: ImportSettings,
  projectId: number,
  part: MultipartFile,
  fields: Record<string, string>,
  staging: string,
  budget: WriteBudget,
): Promise<number | null> {
  const chunk = dropzoneChunk(fields);
  if (!chunk) return storeZip(db, settings, projectId, part.file, fields.name, budget);
  if (chunk.offset > settings.maxBytes) throw new HttpError(413, { detail: 'The zip file is larger than the import limit.' });
  const staged = path.join(staging, chunk.id);
  await writeChunk(part, staged, chunk.offset, budget);
  if (!chunk.last) return null;
  return createZipImport(db, settings, projectId, fields.name, (zipFile) => rename(staged, zipFile));
}
