// Files that clients upload to a task: streamed to disk under a temporary name (never held whole in memory),
// checked, then renamed into the task's images folder. Images must be whole images; .txt files are the GCP
// list and geo.txt that travel with them, align.las or align.laz an earlier survey's point cloud to align to (an
// align.tif is a TIFF); anything else is refused with the file's name.
import { createWriteStream } from 'node:fs';
import { mkdir, open, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { placeFile } from '../../files/place.ts';
import { partialName, safeFileName } from '../../files/safe-path.ts';
import { ALIGN_FILE, isImageName, isVideoName } from '../../protocol/files.ts';
import { HttpError } from '../errors.ts';
import type { WriteBudget } from './storage.ts';

const TEXT_EXTENSIONS = new Set(['.txt', '.srt']);
/** The RAW formats not built on TIFF: Fujifilm's RAF, Panasonic's RW2, Olympus's ORF, Canon's CR3 (ISO media). */
const RAW_SIGNATURES = [/^FUJIFILM/, /^IIU\0/, /^(IIRO|IIRS|MMOR)/, /^....ftypcrx/s];

export const badRequest = (message: string) => new HttpError(400, { detail: message });

async function readRange(file: string, start: number, length: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, start);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

const startsWith = (head: Buffer, bytes: number[]) => bytes.every((byte, index) => head[index] === byte);
const JPEG_END = Buffer.from([0xff, 0xd9]);

/**
 * Why a stored file is not a whole image, or null when it is one. A JPEG must end with its end-of-image marker
 * (possibly followed by a trailer); the window searched stays clear of the thumbnail at the file's start,
 * and in the compressed data a 0xFF byte is never followed by 0xD9, so a cut file is told apart.
 */
export async function imageProblem(file: string): Promise<string | null> {
  const { size } = await stat(file);
  if (size < 16) return 'is empty or too short to be an image';
  const head = await readRange(file, 0, 16);
  const tailLength = Math.min(64 * 1024, Math.floor(size / 2));
  const tail = await readRange(file, size - tailLength, tailLength);
  if (startsWith(head, [0xff, 0xd8, 0xff])) return tail.includes(JPEG_END) ? null : 'is a truncated JPEG image';
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47])) return tail.includes('IEND') ? null : 'is a truncated PNG image';
  // TIFF, and the RAW formats built on it (DNG, CR2, NEF, ARW, PEF, SRW).
  if (startsWith(head, [0x49, 0x49, 0x2a, 0x00]) || startsWith(head, [0x4d, 0x4d, 0x00, 0x2a])) return null;
  return RAW_SIGNATURES.some((signature) => signature.test(head.toString('latin1'))) ? null : 'is not a JPEG, PNG, TIFF or camera RAW image';
}

/** An elevation model (a TIFF) or a LAS or LAZ point cloud to align to, by its signature. */
async function alignProblem(name: string, file: string): Promise<string | null> {
  if (/\.tif$/i.test(name)) return imageProblem(file);
  return (await readRange(file, 0, 4)).toString('latin1') === 'LASF' ? null : 'is not a LAS or LAZ point cloud';
}

/** An MP4 or MOV (an ISO media box first: ftyp, or moov, mdat, free, wide in older QuickTime files) or an AVI. */
async function videoProblem(file: string): Promise<string | null> {
  const head = (await readRange(file, 0, 12)).toString('latin1');
  if (/^RIFF....AVI /s.test(head)) return null;
  return /^....(ftyp|moov|mdat|free|wide|skip)/s.test(head) ? null : 'is not an MP4, MOV or AVI video';
}

async function textProblem(file: string): Promise<string | null> {
  const { size } = await stat(file);
  const head = await readRange(file, 0, Math.min(size, 64 * 1024));
  return head.includes(0) ? 'is not a text file' : null;
}

/** Checks a stored upload by its name's kind; answers why it cannot be used, or null. */
export async function uploadProblem(name: string, file: string): Promise<string | null> {
  if (ALIGN_FILE.test(name)) return alignProblem(name, file);
  if (isImageName(name)) return imageProblem(file);
  if (isVideoName(name)) return videoProblem(file);
  if (TEXT_EXTENSIONS.has(path.extname(name).toLowerCase())) return textProblem(file);
  return 'is neither an image (JPEG, PNG, TIFF), a video (MP4, MOV, AVI), a .txt file (GCP list, geo.txt), a DJI .srt nor align.tif, align.las or align.laz';
}

/** A client's file name, usable in the images folder. */
export function uploadName(filename: string): string {
  const name = safeFileName(filename);
  if (name.startsWith('.')) throw badRequest(`"${filename}" is not a usable file name`);
  return name;
}

/** Streams one multipart file to a temporary name in `dir`; answers that name. */
async function spool(part: MultipartFile, dir: string, budget: WriteBudget): Promise<string> {
  const tmp = partialName(dir);
  try {
    await pipeline(part.file, budget.meter(), createWriteStream(tmp));
    if (part.file.truncated) throw new HttpError(413, { detail: `${part.filename} is larger than the size limit of one file.` });
    return tmp;
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Checks a spooled file and moves it into place under its name (or the variant placeFile gives it, answered); a
 * file that fails is removed. */
export async function admit(tmp: string, dir: string, name: string): Promise<string> {
  const problem = await uploadProblem(name, tmp);
  if (problem) {
    await rm(tmp, { force: true });
    throw badRequest(`${name} ${problem}.`);
  }
  return placeFile(tmp, dir, name);
}

export interface MultipartLimits {
  fileBytes: number;
  files: number;
}

export type TextFields = Record<string, string>;

/**
 * Reads a multipart request: text fields are collected, files are stored in `dir` as they arrive. Answers the
 * text fields and the names stored. A bad file stops the request with a 400 naming it.
 */
export async function receiveMultipart(
  request: FastifyRequest,
  dir: string,
  limits: MultipartLimits,
  budget: WriteBudget,
  onFile?: (part: MultipartFile, dir: string, fields: TextFields) => Promise<string | null>,
): Promise<{ fields: TextFields; stored: string[] }> {
  await mkdir(dir, { recursive: true });
  const fields: TextFields = {};
  const stored: string[] = [];
  const parts = request.parts({ limits: { fileSize: limits.fileBytes, files: limits.files, fields: 100, fieldSize: 1_048_576 } });
  for await (const part of parts) {
    if (part.type === 'field') {
      if (typeof part.value === 'string') fields[part.fieldname.replace(/\[\]$/, '')] = part.value;
      continue;
    }
    const custom = onFile && (await onFile(part, dir, fields));
    if (custom) {
      stored.push(custom);
      continue;
    }
    stored.push(await admit(await spool(part, dir, budget), dir, uploadName(part.filename)));
  }
  return { fields, stored };
}

/**
 * Writes a chunk of a Dropzone upload at its offset in the upload's file (chunks may come again, or out of
 * order). A chunk cut short is cut off again, so that the chunks before it stay as they were.
 */
export async function writeChunk(part: MultipartFile, file: string, offset: number, budget: WriteBudget): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  if (offset > 0) await (await open(file, 'a')).close();
  try {
    await pipeline(part.file, budget.meter(), createWriteStream(file, { flags: offset === 0 ? 'w' : 'r+', start: offset }));
  } catch (error) {
    await (offset === 0 ? rm(file, { force: true }) : truncate(file, offset).catch(() => undefined));
    throw error;
  }
  if (part.file.truncated) throw new HttpError(413, { detail: `${part.filename} is larger than the size limit of one file.` });
}

/** The chunk of a Dropzone upload that these fields describe, or null for a whole file. */
export function dropzoneChunk(fields: Record<string, string>): { id: string; offset: number; last: boolean } | null {
  const id = fields.dzuuid;
  if (!id) return null;
  if (!/^[A-Za-z0-9-]{1,64}$/.test(id)) throw badRequest('Not a valid upload id (dzuuid).');
  const index = Number(fields.dzchunkindex ?? 0);
  const total = Number(fields.dztotalchunkcount ?? 1);
  const offset = Number(fields.dzchunkbyteoffset ?? 0);
  if (![index, total, offset].every((n) => Number.isSafeInteger(n) && n >= 0) || index >= total) {
    throw badRequest('Invalid chunk fields (dzchunkindex, dztotalchunkcount, dzchunkbyteoffset).');
  }
  return { id, offset, last: index === total - 1 };
}
