/**
 * The API's schemas, declared once with TypeBox and attached to the routes that use them: fastify
 * validates a request's path, query and headers with them (src/http/validation.ts), serializes the
 * answers with them, and @fastify/swagger builds /openapi.json from them (src/http/openapi.ts).
 * A shared schema has an `$id`: it is registered once (`app.addSchema`), routes point at it with
 * `Type.Ref`, and the document lists it under components.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DEFAULT_PAGE, MAX_CURSOR, MAX_PAGE, type PageQuery as Page } from '../pagination';

export const T = '2026-11-22T10:00:00.000Z';

/**
 * A shared schema: registered once by its `$id`, pointed at with `ref`. A schema may name the code a
 * failure of one of its keywords answers with (`'x-codes': { additionalProperties: 'unknown_unit' }`),
 * where the core has a word of its own for the mistake (src/http/validation.ts).
 */
export const shared = <S = unknown>(id: string, schema: Record<string, unknown>) =>
  Type.Unsafe<S>({ $id: id, ...schema });
export const ref = (id: string) => ({ $ref: id });

/** One of these strings (an `enum` in the document). */
export const oneOf = <V extends string>(values: readonly V[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<V>({ type: 'string', enum: [...values], ...options });

/** `type: [X, 'null']`, as the API answers null for "none". */
export const nullable = (type: 'string' | 'integer', options: Record<string, unknown> = {}) =>
  Type.Unsafe<string | number | null>({ type: [type, 'null'], ...options });

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'What went wrong, for programs: e.g. `validation_failed`, `not_found`.' }),
      message: Type.String({ description: 'What went wrong and what to do, for people.' }),
      details: Type.Array(
        Type.Object({
          field: Type.String(),
          message: Type.String(),
          code: Type.Optional(Type.String()),
        }),
        { description: 'One entry per field at fault.' },
      ),
      request_id: Type.Optional(Type.String()),
    }),
  },
  { $id: 'Error' },
);

export const HealthSchema = Type.Object(
  {
    status: Type.Literal('ok'),
    database: oneOf(['sqlite', 'postgres']),
    storage: oneOf(['filesystem', 'database']),
    version: Type.String(),
  },
  { $id: 'Health' },
);

/** The content type of a Word document (.docx). */
export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

const exampleError = (code: string, message: string, details: unknown[] = []) => ({
  error: { code, message, details },
});

const ERRORS = {
  400: [
    'The body is not valid JSON (`malformed_json`), a multipart body is cut short (`malformed_multipart`), the address has a broken %-escape (`bad_url`), or the request could not be read (`bad_request`).',
    exampleError('malformed_json', 'The body is not valid JSON.'),
  ],
  401: [
    'The X-Service-API-Token header is missing or not a live key (`unauthorized`).',
    exampleError('unauthorized', 'A valid API key is required in the X-Service-API-Token header.'),
  ],
  403: [
    'The key is live but lacks the scope this operation needs (`insufficient_scope`; `details` names it). See `x-scope`.',
    exampleError('insufficient_scope', 'This API key lacks the scope documents:read.', [
      { field: 'X-Service-API-Token', message: 'the key lacks the scope documents:read', code: 'insufficient_scope' },
    ]),
  ],
  404: ['No such resource (`not_found`).', exampleError('not_found', 'No document with id "doc_…" exists.')],
  408: [
    'The request did not arrive whole within REQUEST_TIMEOUT_MS (`request_timeout`); the connection is closed.',
    exampleError('request_timeout', 'The request was not sent whole within 60000 ms (REQUEST_TIMEOUT_MS).'),
  ],
  409: [
    'The Idempotency-Key was used with another body (`idempotency_key_reused`), a Magic Link was asked for before the Magic Link app was set up (`app_not_configured`), there are WEBHOOK_MAX_SUBSCRIPTIONS webhooks already (`webhook_limit_reached`), or the settings of an app kept changing under this change (`settings_busy`: send it again).',
    exampleError('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.'),
  ],
  413: [
    'The body is larger than this operation takes: BODY_LIMIT, or 64 KB for a postcard (`body_too_large`; the message names the limit).',
    exampleError('body_too_large', 'The request body is larger than this server accepts.'),
  ],
  415: [
    'The body is not JSON (`unsupported_media_type`).',
    exampleError('unsupported_media_type', 'This endpoint takes a JSON body.'),
  ],
  422: [
    'A rule is broken; one entry in `details` per field (`validation_failed`, `missing_variables`, `template_invalid`, `invalid_value`, `unsupported_character`).',
    exampleError('missing_variables', 'Give a value for every variable of the template; missing: date.', [
      { field: 'merge_parameters.date', message: 'is required by the template', code: 'required' },
    ]),
  ],
  429: [
    'Too many requests a minute from this address (`rate_limited`); `Retry-After` says how many seconds to wait.',
    exampleError('rate_limited', 'Too many requests from this address (at most 3000 a minute here).'),
  ],
  431: [
    'The request headers are larger than 16 KB (`headers_too_large`).',
    exampleError('headers_too_large', 'The request headers are larger than 16 KB.'),
  ],
  503: [
    'Not now; `Retry-After` says when to try again, with the same Idempotency-Key where one was given: the database does not answer (`database_unavailable`), the document storage does not take the document (`storage_unavailable`), Chromium or LibreOffice would not start (`renderer_unavailable`), Temporal did not run the render in time (`engine_unavailable`), or the server is shutting down (`stopping`).',
    exampleError('database_unavailable', 'The database does not answer now (restarting or unreachable).'),
  ],
  507: [
    'The server cannot write to its disk (full or read-only) and kept nothing of the request (`insufficient_storage`); `Retry-After` says when to try again.',
    exampleError('insufficient_storage', 'The server cannot write to its disk now (full or read-only).'),
  ],
  500: [
    'Our fault; nothing internal is shown (`internal_error`).',
    exampleError('internal_error', 'Something went wrong on our side.'),
  ],
} as const;

/**
 * An answer that is a shared schema, described, with examples. (A bare `$ref` would lose its
 * description and examples on the way into the document.)
 */
export const answer = <S extends TSchema>(shared: S, description: string, ...examples: unknown[]) =>
  Type.Unsafe<Static<S>>({ allOf: [Type.Ref(shared)], description, ...(examples.length ? { examples } : {}) });

/** A request or answer schema with its example (and description): a shared one is pointed at. */
export function described<S extends TSchema>(schema: S, example: unknown, description?: string): S {
  const extra = { examples: [example], ...(description ? { description } : {}) };
  return ('$id' in schema ? { allOf: [Type.Ref(schema)], ...extra } : { ...schema, ...extra }) as S;
}

/** The Idempotency-Key header (its rules are checked by src/idempotency.ts, for every caller). */
export const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Any unique string (e.g. a UUID), 1 to 255 visible ASCII characters: the same key and body give the first answer again for 24 hours.',
    }),
  ),
});

/** The description and example of an error answer, for what is added to the document after it is built. */
/** An error status this API answers with. */
export type ErrorStatus = keyof typeof ERRORS;
export const errorExample = (status: ErrorStatus) => ERRORS[status];

/** The error answers of an operation, each in the one error shape. */
export function errors(...statuses: (keyof typeof ERRORS)[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, answer(ErrorSchema, ERRORS[s][0], ERRORS[s][1])]));
}

/** `:id` in the path. */
export const IdParams = (what: string, example: string) =>
  Type.Object({ id: Type.String({ description: `The ${what} id.`, maxLength: 100, examples: [example] }) });

/** `?limit&starting_after` of every list (the same rules as src/pagination.ts). */
export const PageQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      default: DEFAULT_PAGE,
      description: `Items per page, 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`,
    }),
  ),
  starting_after: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_CURSOR, description: 'The `next_cursor` of the previous page.' }),
  ),
});

/** The page a list's query asks for. */
export const pageOf = (query: Static<typeof PageQuery>): Page => ({
  limit: query.limit ?? DEFAULT_PAGE,
  startingAfter: query.starting_after,
});

/** A page of `item`s. */
export const List = (item: string) =>
  Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(Type.Ref(item)),
      has_more: Type.Boolean(),
      next_cursor: nullable('string'),
    },
    { additionalProperties: false },
  );

/** The answer to a DELETE. */
export const Deleted = (object: string) =>
  Type.Object(
    { id: Type.String(), object: Type.Literal(object), deleted: Type.Literal(true) },
    { additionalProperties: false },
  );
