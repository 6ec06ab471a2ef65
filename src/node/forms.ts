// Request bodies as NodeODM clients send them: multipart (PyODM, ClusterODM, WebODM), urlencoded (PyODM's
// cancel/remove/restart) or JSON.
import type { FastifyRequest } from 'fastify';

export type FormFields = Record<string, unknown>;

/** Receives one uploaded file; must consume `content`. */
export type FileHandler = (fileName: string, content: NodeJS.ReadableStream) => Promise<void>;

/** The fields of the request, in whatever order they came; files go to `onFile`, or are skipped without it. */
export async function readForm(request: FastifyRequest, onFile?: FileHandler): Promise<FormFields> {
  if (!request.isMultipart()) {
    return typeof request.body === 'object' && request.body !== null ? (request.body as FormFields) : {};
  }
  const fields: FormFields = {};
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (onFile) await onFile(part.filename, part.file);
      else part.file.resume();
    } else {
      fields[part.fieldname] = part.value;
    }
  }
  return fields;
}
