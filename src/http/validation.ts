/**
 * What the route schemas check, and how a failure reads. Fastify checks a request's path, query and
 * headers against its route's schema (ajv, values coerced from text, every broken field reported);
 * a body is checked by the core (src/webhooks, src/engine, …), which the web app, the CLI and the
 * n8n nodes call as well, so that one mistake gets one answer whichever door it came through. The
 * body's schema describes it (in /openapi.json) and types the handler.
 */
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { ValidationError, type ErrorDetail } from '../errors';

/** The compiler of one app's route schemas, which may point at its shared schemas (`$ref` to an `$id`). */
export function validatorFor(shared: object[]): FastifySchemaCompiler<unknown> {
  const ajv = new Ajv({
    // a query or path value is text: "20" is the integer 20
    coerceTypes: 'array',
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    // the schemas carry OpenAPI's words (examples) beside JSON Schema's
    strict: false,
  });
  addFormats(ajv);
  for (const schema of shared) ajv.addSchema(schema);
  return ({ schema, httpPart }) => {
    if (httpPart === 'body') return () => true;
    return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
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

const CODES: Record<string, string> = {
  required: 'required',
  type: 'type',
  minimum: 'range',
  maximum: 'range',
  exclusiveMinimum: 'range',
  exclusiveMaximum: 'range',
  additionalProperties: 'unknown_field',
};

/** A schema failure as the one error shape's 422: one detail per field, with the core's codes. */
export function schemaFailure(errors: ErrorObject[], context: string | undefined): ValidationError {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
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
      code: CODES[e.keyword] ?? 'invalid',
    });
  }
  const where =
    { querystring: 'query parameters', params: 'path parameters', headers: 'headers' }[context ?? ''] ?? 'parameters';
  return new ValidationError(
    `Some ${where} of this request are not valid; see details for each field to fix.`,
    details,
  );
}
