// The photographs a task was made from, as WebODM serves them (images/download/{name}, images/thumbnail/{name}):
// each by its own name, from the task's images folder alone. A compacted task has none left.
import { Type } from '@sinclair/typebox';
import sharp from 'sharp';
import { HttpError, notFound } from '../errors.ts';
import { resolveAssetPath } from './assets.ts';

export const PhotoThumbnailQuery = Type.Object({
  size: Type.Integer({ minimum: 1, maximum: 4096, default: 512, description: 'Pixels of the longer side (a photograph is never enlarged)' }),
  quality: Type.Integer({ minimum: 0, maximum: 100, default: 75, description: 'JPEG quality' }),
});

/** The file of a photograph named by a client: a regular file directly in the images folder, else a 404. */
export async function photoFile(imagesDir: string, name: string): Promise<string> {
  // One name, no folders: nothing but the uploads themselves, never a link out or a partial upload.
  if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw notFound('Image does not exist');
  const file = await resolveAssetPath(imagesDir, name);
  if (!file) throw notFound('Image does not exist');
  return file;
}

/** A JPEG of the photograph at most `size` px a side, turned as its EXIF orientation says. */
export async function photoThumbnail(file: string, size: number, quality: number): Promise<Buffer> {
  try {
    return await sharp(file)
      .rotate()
      .resize(size, size, { fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality: Math.max(1, quality) })
      .toBuffer();
  } catch (error) {
    throw new HttpError(400, { detail: `This file is not an image a thumbnail can be made of: ${(error as Error).message}` });
  }
}
