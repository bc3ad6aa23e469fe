/**
 * What the route schemas check, and how a failure reads. Fastify checks every part of a request
 * against its route's schema before the handler runs (ajv, every broken field reported), so a request
 * the schema forbids never reaches the code: a number out of its range, a field of the wrong type, a
 * field the endpoint does not take. Path, query and header values are text and are coerced ("20" is
 * the integer 20); a JSON body is taken as it was sent, neither coerced nor filled with defaults (the
 * core applies its own). Bodies of other media (XML, HTML, PDF, Word, multipart) are read by their
 * own parsers. The rules no schema can say (a template that exists, a view limit beside a time limit)
 * are the core's, which the web app, the CLI and the n8n nodes call too; where a schema and the core
 * say the same thing they say it with one code (CODES below; `email` is the core's own isEmail).
 */
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { ValidationError, type ErrorDetail } from '../errors';
import { isEmail } from '../guards';

/**
 * The formats our schemas use, as the service reads them: JSON Schema's, with an address being what
 * the core takes (no invisible or bidirectional characters), whichever door it came through. A client
 * that checks our answers against /openapi.json may do the same.
 */
export function withFormats<T extends Ajv>(ajv: T): T {
  addFormats(ajv);
  ajv.addFormat('email', { type: 'string', validate: (v: string) => isEmail(v) });
  return ajv;
}

function compiler(shared: object[], part: 'text' | 'json'): Ajv {
  const ajv = new Ajv({
    // a query or path value is text: "20" is the integer 20; a JSON body's types are its own
    coerceTypes: part === 'text' ? 'array' : false,
    useDefaults: part === 'text',
    removeAdditional: false,
    allErrors: true,
    // each error carries the schema it broke, for the codes a schema names (`x-codes`)
    verbose: true,
    // the schemas carry OpenAPI's words (examples) beside JSON Schema's
    strict: false,
  });
  withFormats(ajv);
  for (const schema of shared) ajv.addSchema(schema);
  return ajv;
}

/** The compiler of one app's route schemas, which may point at its shared schemas (`$ref` to an `$id`). */
export function validatorFor(shared: object[]): FastifySchemaCompiler<unknown> {
  const text = compiler(shared, 'text');
  const json = compiler(shared, 'json');
  return ({ schema, httpPart, contentType }) => {
    if (httpPart !== 'body') return text.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
    // a body of another medium (XML, a PDF, a form) is read by its own parser, not by JSON Schema
    if (contentType && contentType !== 'application/json') return () => true;
    return json.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  };
}

/** `/events/1/type` → `events[1].type`, as the core names fields. */
function fieldOf(path: string): string {
  return path
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((out, p) => (/^\d+$/.test(p) ? `${out}[${p}]` : out ? `${out}.${p}` : p), '');
}

/** A schema keyword's failure as the core's code for the same mistake. */
const CODES: Record<string, string> = {
  required: 'required',
  type: 'type',
  minimum: 'range',
  maximum: 'range',
  exclusiveMinimum: 'range',
  exclusiveMaximum: 'range',
  multipleOf: 'range',
  additionalProperties: 'unknown_field',
};

/** A format's failure: an address is `invalid_email`, as the core says it. */
const FORMAT_CODES: Record<string, string> = { email: 'invalid_email' };

/** The code of one failure: the one its schema names for the keyword (`x-codes`), else the common one. */
function codeOf(e: ErrorObject): string {
  const own = (e.parentSchema as { 'x-codes'?: Record<string, string> } | undefined)?.['x-codes'];
  if (own?.[e.keyword]) return own[e.keyword];
  if (e.keyword === 'format') return FORMAT_CODES[(e.params as { format: string }).format] ?? 'invalid';
  return CODES[e.keyword] ?? 'invalid';
}

/**
 * The failures that say what is wrong. A value that may take one of several shapes (a duration or
 * null) fails each shape it does not take; when it failed inside one (a duration of 1e308 days), that
 * failure is the one to fix, and the others (that it is not null, nor one of the shapes) go.
 */
function telling(errors: ErrorObject[]): ErrorObject[] {
  const under = (e: ErrorObject) => errors.some((o) => o.instancePath.startsWith(`${e.instancePath}/`));
  return errors.filter((e) => !(['type', 'oneOf', 'anyOf', 'const'].includes(e.keyword) && under(e)));
}

/** A schema failure as the one error shape's 422: one detail per field, with the core's codes. */
export function schemaFailure(errors: ErrorObject[], context: string | undefined): ValidationError {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of telling(errors)) {
    const extra =
      e.keyword === 'required'
        ? (e.params as { missingProperty: string }).missingProperty
        : e.keyword === 'additionalProperties'
          ? (e.params as { additionalProperty: string }).additionalProperty
          : '';
    const field = fieldOf(`${e.instancePath}${extra ? `/${extra}` : ''}`) || context || 'request';
    // a value that fails two rules (a type, then a range) is one broken field
    if (seen.has(field)) continue;
    seen.add(field);
    details.push({
      field,
      message:
        e.keyword === 'additionalProperties' ? 'is not a parameter of this endpoint' : (e.message ?? 'is not valid'),
      code: codeOf(e),
    });
  }
  const where =
    { querystring: 'query parameters', params: 'path parameters', headers: 'headers' }[context ?? ''] ?? 'parameters';
  return new ValidationError(
    `Some ${where} of this request are not valid; see details for each field to fix.`,
    details,
  );
}
