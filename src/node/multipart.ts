// Request bodies as NodeODM clients send them: multipart (PyODM, ClusterODM, WebODM), urlencoded (PyODM's
// cancel/remove/restart) or JSON.
import type { FastifyRequest } from 'fastify';

export type FormFields = Record<string, unknown>;

/** What one request may carry: fields are held in memory, so they are kept small (an options list with a
 * boundary polygon of tens of thousands of vertices fits); files are streamed to disk and bounded there. */
export const FORM_LIMITS = { fieldBytes: 4 * 2 ** 20, fields: 200, files: 100_000, parts: 100_200 };

const LIMIT_ERRORS: Record<string, string> = {
  FST_FILES_LIMIT: `More than ${FORM_LIMITS.files} files in one request`,
  FST_FIELDS_LIMIT: `More than ${FORM_LIMITS.fields} fields in one request`,
  FST_PARTS_LIMIT: `More than ${FORM_LIMITS.parts} parts in one request`,
};

/** Receives one uploaded file; must consume `content`. */
export type FileHandler = (fileName: string, content: NodeJS.ReadableStream) => Promise<void>;

/** The fields of the request, in whatever order they came; files go to `onFile`, or are skipped without it. */
export async function readForm(request: FastifyRequest, onFile?: FileHandler): Promise<FormFields> {
  if (!request.isMultipart()) {
    return typeof request.body === 'object' && request.body !== null ? (request.body as FormFields) : {};
  }
  const fields: FormFields = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (onFile) await onFile(part.filename, part.file);
        else part.file.resume();
      } else if (part.valueTruncated) {
        throw new Error(`The field ${part.fieldname} is longer than ${FORM_LIMITS.fieldBytes / 2 ** 20} MB`);
      } else {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    const known = LIMIT_ERRORS[(error as { code?: string }).code ?? ''];
    throw known ? new Error(known) : error;
  }
  return fields;
}
