// An uploaded file moved into its folder under the client's name, without losing another file of that name: two
// flights' photographs are often both DJI_0001.JPG. The same bytes sent again (a retried or resumed upload) find
// their earlier copy; other bytes take the next free variant of the name.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { nameVariants } from './safe-path.ts';

async function digest(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

async function sameContent(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  if (!sb.isFile() || sa.size !== sb.size) return false;
  const [da, db] = await Promise.all([digest(a), digest(b)]);
  return da === db;
}

/**
 * Moves `tmp` into `dir` as `name`, or as the variant of `name` that already holds the same bytes, or as the
 * first free variant; answers the name it took. Linking fails where the name exists, so two requests placing
 * files of one name at once each get their own.
 */
export async function placeFile(tmp: string, dir: string, name: string): Promise<string> {
  try {
    for (const candidate of nameVariants(name)) {
      const target = path.join(dir, candidate);
      try {
        await link(tmp, target);
        return candidate;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (await sameContent(tmp, target)) return candidate;
      }
    }
    throw new Error('unreachable');
  } finally {
    await rm(tmp, { force: true });
  }
}
