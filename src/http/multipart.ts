/** Reading multipart/form-data bodies (template uploads in the API and the web app), broken ones included. */
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MalformedRequestError, PaperlinkError } from '../errors';

export interface Upload {
  /** Files in the order they came, by form field name. */
  files: { field: string; filename: string; bytes: Buffer }[];
  /** Text fields; a repeated name keeps the last value. */
  fields: Record<string, string>;
}

const TOO_LARGE = new Set([
  'FST_REQ_FILE_TOO_LARGE',
  'FST_PARTS_LIMIT',
  'FST_FILES_LIMIT',
  'FST_FIELDS_LIMIT',
  'FST_ERR_CTP_BODY_TOO_LARGE',
]);

/**
 * Lets the routes of `scope` (and only those) take multipart/form-data. The plugin adds a hook
 * before and after every request of the scope it is registered in (temporary files we never
 * make); registered at the root, every Magic Link view and postcard would pay for them. A
 * multipart body sent to any other route is 415 unsupported_media_type.
 */
export async function acceptMultipart(scope: FastifyInstance, bodyLimit: number): Promise<void> {
  await scope.register(multipart, { limits: { fileSize: bodyLimit, files: 50, fields: 20 } });
}

/**
 * Every part of a multipart body. A body that is not well-formed multipart (no boundary, a part
 * cut short, a broken header) is `400 malformed_multipart`; one over the limits stays a 413.
 */
export async function readMultipart(req: FastifyRequest): Promise<Upload> {
  const upload: Upload = { files: [], fields: {} };
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file')
        upload.files.push({
          field: part.fieldname,
          // a file part may come without a file name (busboy then gives none, whatever the types say)
          filename: typeof part.filename === 'string' ? part.filename : '',
          bytes: await part.toBuffer(),
        });
      else upload.fields[part.fieldname] = String(part.value);
    }
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (err instanceof PaperlinkError || TOO_LARGE.has(code) || (err as { statusCode?: number }).statusCode === 413)
      throw err;
    throw new MalformedRequestError(
      'malformed_multipart',
      `The multipart body cannot be read (${err instanceof Error ? err.message : String(err)}). Send multipart/form-data with a boundary in Content-Type and every part complete, e.g. curl -F file=@template.xml.`,
    );
  }
  return upload;
}
