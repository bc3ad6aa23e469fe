/** Reading multipart/form-data bodies (template uploads in the API and the web app), broken ones included. */
import type { FastifyRequest } from 'fastify';
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
 * Every part of a multipart body. A body that is not well-formed multipart (no boundary, a part
 * cut short, a broken header) is `400 malformed_multipart`; one over the limits stays a 413.
 */
export async function readMultipart(req: FastifyRequest): Promise<Upload> {
  const upload: Upload = { files: [], fields: {} };
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file')
        upload.files.push({ field: part.fieldname, filename: part.filename, bytes: await part.toBuffer() });
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
