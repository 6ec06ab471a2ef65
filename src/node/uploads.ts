// Files of a task before it exists: uploads land in uploads/<uuid>/files/ (each written under a temporary name,
// then renamed), and a commit assembles the engine's project folder from them without touching them, so that a
// commit cut short by a crash can simply run again.
import fs from 'node:fs';
import { copyFile, link, mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import { diskRoom } from '../files/disk.ts';
import { extractZip } from '../files/zip-extract.ts';
import { type OutboundPolicy, outboundFetch, refusal } from '../net/outbound.ts';
import type { DataLayout } from './layout.ts';
import { placeFile } from '../files/place.ts';
import { freeName, partialName, safeFileName } from '../files/safe-path.ts';

/** Files that are not images and that the engine must not find in images/ (NodeODM moves the same ones). */
const ANCILLARY = /(\.txt|^align\.(las|laz|tif))$/i;
const ZIP = /\.zip$/i;
const SEED = /^seed\.zip$/i;
/** Files of these names reach the engine at the project root, where it reads them. */
const GEO_FILE = 'geo.txt';
export const GCP_FILE = 'gcp_list.txt';
const NOT_GCP = /^(geo|image_groups)\.txt$/i;
/** The whole download of a zipurl, from its request to its last byte (its size is bounded by the disk's room). */
const ZIPURL_DEADLINE_MS = 60 * 60_000;

export interface AssembledTask {
  dir: string;
  imagesCount: number;
}

/** A refusal that sending the file again cannot change (answered with noRetry, so clients stop retrying). */
export class UploadRefused extends Error {}

export interface UploadLimits {
  /** Space kept free on the data folder's disk: uploads and unpacking stop short of it. */
  minFreeBytes: number;
  /** Most entries a zip of images may hold. */
  maxZipEntries: number;
  /** Most images a task may have (--max-images), refused as they arrive; null: no limit. */
  maxImages: number | null;
}

export class UploadArea {
  constructor(
    private readonly layout: DataLayout,
    private readonly outbound: OutboundPolicy,
    private readonly limits: UploadLimits,
  ) {}

  /** Bytes that may still be written before the disk reaches its reserve. */
  private room(): Promise<number> {
    return diskRoom(this.layout.root, this.limits.minFreeBytes);
  }

  private diskFull(): Error {
    return new Error(`The node's disk is nearly full (it keeps ${Math.round(this.limits.minFreeBytes / 2 ** 20)} MB free); try again later or on another node`);
  }

  /** Refuses an image beyond --max-images before it is stored (those in zips are counted when they unpack). */
  private async requireImageRoom(uuid: string, fileName: string): Promise<void> {
    const max = this.limits.maxImages;
    if (max === null || ANCILLARY.test(fileName) || ZIP.test(fileName)) return;
    const stored = (await readdir(this.filesDir(uuid))).filter((n) => !ANCILLARY.test(n) && !ZIP.test(n)).length;
    if (stored >= max) throw new UploadRefused(`More than ${max} images uploaded, but this node can only process up to ${max}.`);
  }

  private filesDir(uuid: string): string {
    return path.join(this.layout.uploadDir(uuid), 'files');
  }

  /** Creates the upload folder; fails when it exists, so two requests can never share a uuid. */
  async create(uuid: string): Promise<void> {
    await mkdir(this.layout.uploadsDir, { recursive: true });
    await mkdir(this.layout.uploadDir(uuid));
    await mkdir(this.filesDir(uuid));
  }

  /** Stores one uploaded file under the client's file name, made safe (and unique where another file has it); a
   * file that would take the disk into its reserve is stopped as it comes. */
  async receive(uuid: string, fileName: string, content: NodeJS.ReadableStream): Promise<void> {
    await this.requireImageRoom(uuid, fileName);
    const room = await this.room();
    if (room <= 0) throw this.diskFull();
    const tmp = partialName(this.layout.uploadDir(uuid));
    const full = this.diskFull();
    let written = 0;
    try {
      await pipeline(content, async function* (chunks: AsyncIterable<string | Buffer>) {
        for await (const chunk of chunks) {
          written += chunk.length;
          if (written > room) throw full;
          yield chunk;
        }
      }, fs.createWriteStream(tmp));
      // The same file sent again (a client resuming its upload) is kept once; another of the same name is kept too.
      await placeFile(tmp, this.filesDir(uuid), safeFileName(fileName));
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Fetches the archive of a `zipurl` into the upload (http and https only). */
  async download(uuid: string, url: string): Promise<void> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`Invalid zipurl: ${url}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new Error(`Invalid zipurl: only http and https are supported (${url})`);
    }
    const response = await outboundFetch(parsed, { signal: AbortSignal.timeout(ZIPURL_DEADLINE_MS) }, this.outbound).catch((err: Error) => {
      const reason = (err.cause as Error | undefined)?.message ?? err.message;
      throw new Error(`Cannot download ${url}: ${reason}${refusal(err) ? ' (start the node with --allow-private-urls to allow it)' : ''}`);
    });
    if (!response.ok || !response.body) {
      // The body left unread would hold its connection open.
      await response.body?.cancel();
      throw new Error(`Cannot download ${url}: HTTP ${response.status}`);
    }
    await this.receive(uuid, 'zipurl.zip', Readable.fromWeb(response.body as WebReadableStream));
  }

  /** Builds the task folder from the uploaded files: images (zips of images unpacked flat) in images/, seed.zip
   * unpacked at the root, ground control points and geo.txt where the engine reads them, the other ancillary
   * files kept in gcp/. */
  async assemble(uuid: string): Promise<AssembledTask> {
    const dir = this.layout.assemblyDir(uuid);
    const images = path.join(dir, 'images');
    await rm(dir, { recursive: true, force: true });
    await mkdir(images, { recursive: true });
    const files = this.filesDir(uuid);
    const names = (await readdir(files)).sort();
    // Zips unpack only into the room left on the disk (a zip bomb fills nothing), entries counted.
    const limits = async () => ({ maxEntries: this.limits.maxZipEntries, maxBytes: Math.max(0, await this.room()) });
    for (const name of names.filter((n) => SEED.test(n))) await extractZip(path.join(files, name), dir, 'tree', await limits());
    for (const name of names.filter((n) => !SEED.test(n))) {
      if (ZIP.test(name)) await extractZip(path.join(files, name), images, 'flat', await limits());
      else await link(path.join(files, name), path.join(images, freeName(images, name)));
    }
    await this.placeAncillary(dir);
    return { dir, imagesCount: (await readdir(images)).length };
  }

  private async placeAncillary(dir: string): Promise<void> {
    const images = path.join(dir, 'images');
    const gcp = path.join(dir, 'gcp');
    const ancillary = (await readdir(images)).filter((n) => ANCILLARY.test(n)).sort();
    if (ancillary.length === 0) return;
    await mkdir(gcp, { recursive: true });
    for (const name of ancillary) await rename(path.join(images, name), path.join(gcp, name));
    const texts = ancillary.filter((n) => /\.txt$/i.test(n));
    const geo = texts.find((n) => n.toLowerCase() === GEO_FILE);
    const points = texts.find((n) => n.toLowerCase() === GCP_FILE) ?? texts.find((n) => !NOT_GCP.test(n));
    if (geo) await copyFile(path.join(gcp, geo), path.join(dir, GEO_FILE));
    if (points) await copyFile(path.join(gcp, points), path.join(dir, GCP_FILE));
  }

  /** Moves the assembled folder to its final place (same file system: a rename). */
  async install(assembled: AssembledTask, taskDir: string): Promise<void> {
    await mkdir(path.dirname(taskDir), { recursive: true });
    await rename(assembled.dir, taskDir);
  }

  async discard(uuid: string): Promise<void> {
    await rm(this.layout.assemblyDir(uuid), { recursive: true, force: true });
    await rm(this.layout.uploadDir(uuid), { recursive: true, force: true });
  }
}
