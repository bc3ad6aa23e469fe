/**
 * The API's schemas, declared once with TypeBox and attached to the routes that use them: fastify
 * validates a request's path, query and headers with them (src/http/validation.ts), serializes the
 * answers with them, and @fastify/swagger builds /openapi.json from them (src/http/openapi.ts).
 * A shared schema has an `$id`: it is registered once (`app.addSchema`), routes point at it with
 * `Type.Ref`, and the document lists it under components.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { EVENT_TYPES } from '../events/types';
import { ALL_SCOPES } from '../keys';
import { DEFAULT_PAGE, MAX_PAGE, type PageQuery as Page } from '../pagination';

export const T = '2026-11-22T10:00:00.000Z';

/** One of these strings (an `enum` in the document). */
export const oneOf = <V extends string>(values: readonly V[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<V>({ type: 'string', enum: [...values], ...options });

/** `type: [X, 'null']`, as the API answers null for "none". */
const nullable = (type: 'string' | 'integer', options: Record<string, unknown> = {}) =>
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

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook'),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: nullable('string'),
    created_at: Type.String(),
    secret: Type.Optional(Type.String({ description: 'Only in the answer to POST /v1/webhooks.' })),
  },
  { $id: 'Webhook', additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('delivery'),
    event: Type.Object({ id: Type.String(), type: Type.String(), created_at: Type.String() }),
    status: oneOf(['pending', 'succeeded', 'failed']),
    attempts: Type.Array(
      Type.Object({
        at: Type.String(),
        status_code: nullable('integer'),
        duration_ms: Type.Number(),
        error: nullable('string'),
      }),
    ),
    next_attempt_at: nullable('string'),
    created_at: Type.String(),
  },
  { $id: 'Delivery', additionalProperties: false },
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

/** Every schema with an `$id`, registered once on the app (src/http/app.ts). */
export const SHARED_SCHEMAS: TSchema[] = [ErrorSchema, WebhookSchema, DeliverySchema, HealthSchema];

const exampleError = (code: string, message: string, details: unknown[] = []) => ({
  error: { code, message, details },
});

const ERRORS = {
  400: [
    'The body is not valid JSON (`malformed_json`).',
    exampleError('malformed_json', 'The body is not valid JSON.'),
  ],
  401: [
    'The X-Service-API-Token header is missing or not a live key (`unauthorized`).',
    exampleError('unauthorized', 'A valid API key is required in the X-Service-API-Token header.'),
  ],
  404: ['No such resource (`not_found`).', exampleError('not_found', 'No webhook with id "wh_…" exists.')],
  415: [
    'The body is not JSON (`unsupported_media_type`).',
    exampleError('unsupported_media_type', 'This endpoint takes a JSON body.'),
  ],
  422: [
    'A rule is broken; one entry in `details` per field (`validation_failed`).',
    exampleError('validation_failed', 'The paging parameters are not valid.', [
      { field: 'limit', message: 'must be <= 100', code: 'range' },
    ]),
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
    Type.String({ minLength: 1, maxLength: 64, description: 'The `next_cursor` of the previous page.' }),
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

export const WebhookCreate = Type.Object(
  {
    url: Type.String({ description: 'https (or http) URL of a public address' }),
    events: Type.Array(oneOf(['*', ...EVENT_TYPES] as const), {
      minItems: 1,
      description: 'The event types to send, or `["*"]` for all.',
    }),
    description: Type.Optional(nullable('string', { maxLength: 200 })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        url: 'https://hooks.example.com/paperlink',
        events: ['document.generated', 'magic_link.viewed'],
        description: 'CRM sync',
      },
    ],
  },
);

export const KeyInfoSchema = Type.Object({
  object: Type.Literal('api_key'),
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  scopes: Type.Array(oneOf(ALL_SCOPES)),
});
