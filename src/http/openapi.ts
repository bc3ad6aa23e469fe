/**
 * The OpenAPI 3.1 description of the API, served at GET /openapi.json. A test checks it against the
 * OpenAPI schema, checks that it has every route, and checks real answers against it.
 */
import { EXAMPLE_IDS } from '../templates/store';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { scopeOf } from './scopes';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown, example?: unknown) => ({
  'application/json': { schema, ...(example === undefined ? {} : { example }) },
});

const T = '2026-11-22T10:00:00.000Z';
const exampleDocument = {
  id: 'doc_01m82kzq5az78r9b7p2fxgxka8',
  object: 'document',
  name: 'Welcome letter',
  description: null,
  status: 'generated',
  template_id: EXAMPLE_IDS.letter,
  created_at: T,
  created_by: { name: 'n8n production' },
  size: 50907,
  sha256: 'c24a4762e2e5dcf0d2abf4b9a29f6371c5a6b49bb148fd8aac569c2ca797b975',
};
const exampleTemplate = {
  id: EXAMPLE_IDS.letter,
  object: 'template',
  name: 'Letter',
  format: 'xml',
  variables: ['date', 'recipient_name', 'body', 'sender_name', 'enclosure'],
  optional_variables: [{ name: 'enclosure', default: '' }],
  size: 3520,
  created_at: T,
  updated_at: T,
};
const exampleGenerate = {
  template_id: EXAMPLE_IDS.letter,
  merge_parameters: {
    date: 'November 22, 2026',
    recipient_name: 'Dr. Eleanor Vance',
    body: 'Thank you for meeting with us.',
    sender_name: 'Marta Kowalczyk',
  },
  destinations: { inkit_storage: { name: 'Welcome letter' } },
};
const exampleRender = {
  id: 'rnd_01m82kzq5ayn1abaq43v42m6fp',
  object: 'render',
  document_id: exampleDocument.id,
  status: 'completed',
  template_id: EXAMPLE_IDS.letter,
  destinations: {
    inkit_storage: {
      document_id: exampleDocument.id,
      name: 'Welcome letter',
      size: 50907,
      sha256: exampleDocument.sha256,
    },
  },
  warnings: [],
  created_at: T,
};
const exampleError = (code: string, message: string, details: unknown[] = []) => ({
  error: { code, message, details },
});

const errors = {
  400: {
    description: 'The body is not valid JSON (`malformed_json`).',
    content: json(ref('Error'), exampleError('malformed_json', 'The body is not valid JSON.')),
  },
  401: {
    description: 'The X-Service-API-Token header is missing or not a live key (`unauthorized`).',
    content: json(
      ref('Error'),
      exampleError('unauthorized', 'A valid API key is required in the X-Service-API-Token header.'),
    ),
  },
  403: {
    description:
      'The key is live but lacks the scope this operation needs (`insufficient_scope`; `details` names it). See `x-scope`.',
    content: json(
      ref('Error'),
      exampleError('insufficient_scope', 'This API key lacks the scope documents:read.', [
        { field: 'X-Service-API-Token', message: 'the key lacks the scope documents:read', code: 'insufficient_scope' },
      ]),
    ),
  },
  404: {
    description: 'No such resource (`not_found`).',
    content: json(ref('Error'), exampleError('not_found', 'No document with id "doc_…" exists.')),
  },
  409: {
    description:
      'The Idempotency-Key was used with another body (`idempotency_key_reused`), or a Magic Link was asked for before the Magic Link app was set up (`app_not_configured`).',
    content: json(
      ref('Error'),
      exampleError('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.'),
    ),
  },
  413: {
    description: 'The body is larger than BODY_LIMIT (`body_too_large`).',
    content: json(ref('Error'), exampleError('body_too_large', 'The request body is larger than this server accepts.')),
  },
  415: {
    description: 'The body is not JSON (`unsupported_media_type`).',
    content: json(ref('Error'), exampleError('unsupported_media_type', 'This endpoint takes a JSON body.')),
  },
  422: {
    description:
      'A rule is broken; one entry in `details` per field (`validation_failed`, `missing_variables`, `template_invalid`, `invalid_value`, `unsupported_character`).',
    content: json(
      ref('Error'),
      exampleError('missing_variables', 'Give a value for every variable of the template; missing: date.', [
        { field: 'merge_parameters.date', message: 'is required by the template', code: 'required' },
      ]),
    ),
  },
  500: {
    description: 'Our fault; nothing internal is shown (`internal_error`).',
    content: json(ref('Error'), exampleError('internal_error', 'Something went wrong on our side.')),
  },
};
const pick = (...codes: (keyof typeof errors)[]) => Object.fromEntries(codes.map((c) => [String(c), errors[c]]));
const idParam = (what: string, example: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description: `The ${what} id.`,
  schema: { type: 'string' },
  example,
});
const pageParams = [
  {
    name: 'limit',
    in: 'query',
    description: 'Items per page, 1 to 100 (default 20).',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  {
    name: 'starting_after',
    in: 'query',
    description: 'The `next_cursor` of the previous page.',
    schema: { type: 'string' },
  },
];
const list = (item: string) => ({
  type: 'object',
  required: ['object', 'data', 'has_more', 'next_cursor'],
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: ref(item) },
    has_more: { type: 'boolean' },
    next_cursor: { type: ['string', 'null'] },
  },
  additionalProperties: false,
});
const deleted = (object: string) => ({
  type: 'object',
  required: ['id', 'object', 'deleted'],
  properties: { id: { type: 'string' }, object: { const: object }, deleted: { const: true } },
  additionalProperties: false,
});

/**
 * Serves /openapi.json, built by @fastify/swagger from the routes' schemas (src/http/schemas.ts).
 * Routes not yet given a schema take their operation from the hand-written table below, which
 * shrinks as they move onto their routes. Every /v1 operation says the scope its key needs.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  { publicUrl, version, postcardPath }: { publicUrl: string; version: string; postcardPath: string },
): Promise<void> {
  const isPublic = (url: string) =>
    url.startsWith('/v1/') || [postcardPath, '/healthz', '/readyz', '/openapi.json'].includes(url);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Paperlink API',
        version,
        description:
          'Generate PDF documents from templates and store them. Every /v1 call needs the X-Service-API-Token header. Errors have one shape: `{ "error": { "code", "message", "details": [{ "field", "message", "code" }] } }`.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: publicUrl }],
      security: [{ apiKey: [] }],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Service-API-Token',
            description: 'Made on first start or with `paperlink keys create --name NAME`.',
          },
        },
      },
    },
    // shared schemas are components named by their $id
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // the recipient's pages and the web app are not the API
    transform: ({ schema, url }) => ({ schema: (isPublic(url) ? schema : { ...schema, hide: true }) as never, url }),
    transformObject: (documents) => {
      if (!('openapiObject' in documents)) return documents.swaggerObject;
      return finish(documents.openapiObject as Doc, legacy(postcardPath));
    },
  });
}

type Operation = Record<string, unknown> & { responses?: Record<string, unknown>; description?: string };
type Doc = { paths?: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } };

/** The generated document with the table's operations for routes without a schema, and each operation's scope. */
function finish(doc: Doc, table: Doc): Doc {
  const paths = (doc.paths ??= {});
  for (const [path, item] of Object.entries(table.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      // a route with a schema describes itself; the table stands in only for those without one
      if (paths[path]?.[method]?.operationId === undefined) (paths[path] ??= {})[method] = op;
    }
  }
  const components = (doc.components ??= {});
  components.schemas = { ...table.components?.schemas, ...components.schemas };
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(item)) {
      const scope = scopeOf(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ':$1'));
      if (!scope) continue;
      op['x-scope'] = scope;
      op.description = `${op.description ? `${op.description} ` : ''}Needs a key with the scope \`${scope}\`.`;
      op.responses = { ...op.responses, ...pick(403) };
    }
  }
  return doc;
}

/** The operations not yet declared on their routes. */
function legacy(postcardPath: string): Doc {
  return {
    paths: {
      '/v1/generate': {
        post: {
          operationId: 'generate',
          summary: 'Render a template with merge parameters and store the PDF',
          description:
            'Every variable of the template needs a value (an empty string is a value). Numbers and booleans become text; objects and arrays are refused. Keys the template does not use are listed under `warnings`, and so is text that does not fit its box (`text_overflow`). With an Idempotency-Key, the same key and body return the first answer again for 24 hours.',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              description: 'Any unique string (e.g. a UUID), 1 to 255 characters.',
              schema: { type: 'string', minLength: 1, maxLength: 255 },
            },
          ],
          requestBody: { required: true, content: json(ref('GenerateRequest'), exampleGenerate) },
          responses: {
            201: {
              description: 'Rendered and stored; with magic_link, the link is made and e-mailed.',
              content: json(ref('Render'), exampleRender),
            },
            ...pick(400, 401, 409, 413, 415, 422, 500),
          },
        },
      },
      '/v1/templates': {
        get: {
          operationId: 'listTemplates',
          summary: 'List templates, newest first',
          parameters: pageParams,
          responses: {
            200: {
              description: 'A page of templates.',
              content: json(ref('TemplateList'), {
                object: 'list',
                data: [exampleTemplate],
                has_more: false,
                next_cursor: null,
              }),
            },
            ...pick(401, 422),
          },
        },
        post: {
          operationId: 'createTemplate',
          summary: 'Store a template: XML text or a fillable PDF',
          description:
            'Send the XML itself (`Content-Type: application/xml`), a PDF (`application/pdf`), JSON `{ "name", "source" | "source_base64", "assets" }`, or a multipart form with the template as `file` and the images it names as further files. `?name=` names raw uploads.',
          parameters: [
            {
              name: 'name',
              in: 'query',
              description: 'Template name for raw XML or PDF uploads.',
              schema: { type: 'string' },
            },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: ref('TemplateUpload'),
                example: {
                  name: 'Thank you note',
                  source: '<document size="A5"><body><p>Thank you, {{name}}!</p></body></document>',
                },
              },
              'application/xml': {
                schema: { type: 'string' },
                example: '<document><body><p>Hello {{name}}</p></body></document>',
              },
              'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } },
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  properties: {
                    file: { type: 'string', contentMediaType: 'application/octet-stream' },
                    name: { type: 'string' },
                  },
                  required: ['file'],
                },
              },
            },
          },
          responses: {
            201: { description: 'Stored.', content: json(ref('Template'), exampleTemplate) },
            ...pick(400, 401, 413, 415, 422),
          },
        },
      },
      '/v1/templates/{id}': {
        get: {
          operationId: 'getTemplate',
          summary: 'A template and its variables',
          parameters: [idParam('template', EXAMPLE_IDS.letter)],
          responses: {
            200: { description: 'The template.', content: json(ref('Template'), exampleTemplate) },
            ...pick(401, 404),
          },
        },
        delete: {
          operationId: 'deleteTemplate',
          summary: 'Delete a template (documents made from it stay)',
          parameters: [idParam('template', EXAMPLE_IDS.letter)],
          responses: {
            200: {
              description: 'Deleted.',
              content: json(deleted('template'), { id: EXAMPLE_IDS.letter, object: 'template', deleted: true }),
            },
            ...pick(401, 404),
          },
        },
      },
      '/v1/documents': {
        get: {
          operationId: 'listDocuments',
          summary: 'List generated documents, newest first',
          parameters: [
            ...pageParams,
            {
              name: 'search',
              in: 'query',
              description: 'Only documents whose name contains this text, ignoring case.',
              schema: { type: 'string', maxLength: 200 },
            },
          ],
          responses: {
            200: {
              description: 'A page of documents.',
              content: json(ref('DocumentList'), {
                object: 'list',
                data: [exampleDocument],
                has_more: false,
                next_cursor: null,
              }),
            },
            ...pick(401, 422),
          },
        },
      },
      '/v1/documents/{id}': {
        get: {
          operationId: 'getDocument',
          summary: 'A generated document',
          parameters: [idParam('document', exampleDocument.id)],
          responses: {
            200: { description: 'The document record.', content: json(ref('Document'), exampleDocument) },
            ...pick(401, 404),
          },
        },
        delete: {
          operationId: 'deleteDocument',
          summary: 'Delete a document and its PDF',
          parameters: [idParam('document', exampleDocument.id)],
          responses: {
            200: {
              description: 'Deleted.',
              content: json(deleted('document'), { id: exampleDocument.id, object: 'document', deleted: true }),
            },
            ...pick(401, 404),
          },
        },
      },
      '/v1/documents/{id}/pdf': {
        get: {
          operationId: 'downloadDocument',
          summary: 'The PDF, with its name in Content-Disposition',
          parameters: [idParam('document', exampleDocument.id)],
          responses: {
            200: {
              description: 'The PDF bytes.',
              headers: {
                'Content-Disposition': {
                  schema: { type: 'string' },
                  example: `attachment; filename="Welcome letter.pdf"; filename*=UTF-8''Welcome%20letter.pdf`,
                },
              },
              content: { 'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } } },
            },
            ...pick(401, 404),
          },
        },
      },
      '/v1/documents/{id}/magic_links': {
        post: {
          operationId: 'createMagicLink',
          summary: 'Share a stored document with a new Magic Link, e-mailed to the recipient',
          parameters: [idParam('document', exampleDocument.id)],
          requestBody: {
            required: true,
            content: json(ref('MagicLinkSettings'), {
              recipient_email: 'ann@example.com',
              expire_after_n_views: 3,
              retain_from_created: { hours: 24 },
            }),
          },
          responses: {
            201: {
              description: 'Made and e-mailed (status `send_failed` when the e-mail could not be sent; it is retried).',
              content: json(ref('MagicLink')),
            },
            ...pick(401, 404, 409, 422),
          },
        },
      },
      '/v1/magic_links': {
        get: {
          operationId: 'listMagicLinks',
          summary: 'List Magic Links, newest first',
          parameters: [
            ...pageParams,
            {
              name: 'status',
              in: 'query',
              description: 'Only links with this status.',
              schema: { type: 'string', enum: ['active', 'send_failed', 'expired', 'revoked'] },
            },
            {
              name: 'document_id',
              in: 'query',
              description: 'Only the links of this document.',
              schema: { type: 'string' },
            },
            {
              name: 'recipient_email',
              in: 'query',
              description: 'Only the links sent to this address.',
              schema: { type: 'string' },
            },
            {
              name: 'created_after',
              in: 'query',
              description: 'Only links made at or after this time (ISO 8601: 2026-11-23 or 2026-11-23T10:00:00Z).',
              schema: { type: 'string' },
            },
            {
              name: 'created_before',
              in: 'query',
              description: 'Only links made before this time (ISO 8601).',
              schema: { type: 'string' },
            },
          ],
          responses: {
            200: {
              description: 'A page of links.',
              content: json({
                type: 'object',
                required: ['object', 'data', 'has_more', 'next_cursor'],
                properties: {
                  object: { const: 'list' },
                  data: { type: 'array', items: ref('MagicLink') },
                  has_more: { type: 'boolean' },
                  next_cursor: { type: ['string', 'null'] },
                },
              }),
            },
            ...pick(401, 422),
          },
        },
      },
      '/v1/magic_links/expire': {
        post: {
          operationId: 'expireMagicLinks',
          summary: 'Revoke several Magic Links now',
          description:
            'Every id must name a link, else 422 with one detail per unknown id and nothing is revoked. Links that already ended are returned as they are. Each link is revoked on its own: sending the same request again is safe.',
          requestBody: {
            required: true,
            content: json(
              {
                type: 'object',
                required: ['ids'],
                properties: { ids: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string' } } },
                additionalProperties: false,
              },
              { ids: ['ml_01m82kzq5az78r9b7p2fxgxka8'] },
            ),
          },
          responses: {
            200: {
              description: 'The links, in the order of their first mention.',
              content: json({
                type: 'object',
                required: ['object', 'data'],
                properties: { object: { const: 'list' }, data: { type: 'array', items: ref('MagicLink') } },
              }),
            },
            ...pick(401, 422),
          },
        },
      },
      '/v1/magic_links/{id}': {
        get: {
          operationId: 'getMagicLink',
          summary: 'A Magic Link: status, views used and left, deadlines, access log',
          parameters: [idParam('Magic Link', 'ml_01m82kzq5az78r9b7p2fxgxka8')],
          responses: { 200: { description: 'The link.', content: json(ref('MagicLink')) }, ...pick(401, 404) },
        },
      },
      '/v1/magic_links/{id}/expire': {
        post: {
          operationId: 'expireMagicLink',
          summary: 'Revoke a Magic Link now',
          parameters: [idParam('Magic Link', 'ml_01m82kzq5az78r9b7p2fxgxka8')],
          responses: {
            200: { description: 'Revoked (status `revoked`).', content: json(ref('MagicLink')) },
            ...pick(401, 404),
          },
        },
      },
      '/v1/magic_links/{id}/resend': {
        post: {
          operationId: 'resendMagicLink',
          summary: 'E-mail the link again, with a new URL (the old one stops working)',
          parameters: [idParam('Magic Link', 'ml_01m82kzq5az78r9b7p2fxgxka8')],
          responses: {
            200: { description: 'Sent (or `send_failed`).', content: json(ref('MagicLink')) },
            ...pick(401, 404, 422),
          },
        },
      },
      '/v1/apps/magic_link': {
        get: {
          operationId: 'getMagicLinkApp',
          summary: 'The Magic Link app settings (provider secrets are never shown)',
          responses: { 200: { description: 'The settings.', content: json(ref('MagicLinkApp')) }, ...pick(401, 409) },
        },
        put: {
          operationId: 'setUpMagicLinkApp',
          summary: 'Set up the Magic Link app; fields left out keep their value',
          requestBody: {
            required: true,
            content: json(ref('MagicLinkApp'), {
              public_url: 'https://docs.example.com',
              sender_name: 'Acme Billing',
              sender_email: 'billing@example.com',
              organization_name: 'Acme',
              accent_color: '#1F6FEB',
              auth_types: ['email'],
            }),
          },
          responses: {
            200: { description: 'Saved.', content: json(ref('MagicLinkApp')) },
            ...pick(400, 401, 415, 422),
          },
        },
      },
      [postcardPath]: {
        post: {
          operationId: 'submitPostcard',
          summary: 'Submit a postcard request (the postcard webhook)',
          description:
            'The token is the body field `api_token` (a postcard token, `paperlink tokens create --kind postcard`), never a header. Fields as spec 2.5; any other field is custom data that fills merge fields of the same name. Answered 202 only after the request is stored durably; rendered afterwards. An Idempotency-Key gives the same id again.',
          security: [],
          parameters: [
            { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', minLength: 1, maxLength: 255 } },
          ],
          requestBody: {
            required: true,
            content: json(ref('PostcardRequest'), {
              api_token: 'plp_…',
              template_id: EXAMPLE_IDS.postcard,
              first_name: 'Jordan',
              last_name: 'Alvarez',
              email: 'jordan@example.com',
              address_line_1: '742 Evergreen Terrace',
              address_city: 'Springfield',
              address_state: 'OR',
              address_zip: '97477',
              address_country: 'US',
              source: 'website',
              tagline: 'See you on the slopes',
            }),
          },
          responses: {
            202: {
              description: 'Stored; it will be rendered.',
              content: json(
                {
                  type: 'object',
                  required: ['id', 'status'],
                  properties: { id: { type: 'string' }, status: { const: 'received' } },
                  additionalProperties: false,
                },
                { id: 'pc_01m82kzq5az78r9b7p2fxgxka8', status: 'received' },
              ),
            },
            ...pick(400, 401, 413, 415, 422, 500),
          },
        },
      },
      '/v1/postcards': {
        get: {
          operationId: 'listPostcards',
          summary: 'List postcards, newest first, optionally by status',
          parameters: [
            ...pageParams,
            { name: 'status', in: 'query', schema: { enum: ['received', 'rendered', 'failed'] } },
          ],
          responses: {
            200: { description: 'A page of postcards.', content: json(list('Postcard')) },
            ...pick(401, 422),
          },
        },
      },
      '/v1/postcards/{id}': {
        get: {
          operationId: 'getPostcard',
          summary: 'A postcard: status, normalised contact and address, custom data, document, failure reason',
          parameters: [idParam('postcard', 'pc_01m82kzq5az78r9b7p2fxgxka8')],
          responses: { 200: { description: 'The postcard.', content: json(ref('Postcard')) }, ...pick(401, 404) },
        },
      },
    },
    components: {
      schemas: {
        GenerateRequest: {
          type: 'object',
          required: ['template_id', 'merge_parameters', 'destinations'],
          properties: {
            template_id: { type: 'string' },
            merge_parameters: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
            destinations: {
              type: 'object',
              minProperties: 1,
              properties: {
                inkit_storage: {
                  type: 'object',
                  properties: {
                    name: {
                      type: 'string',
                      maxLength: 200,
                      description: 'Default: the name of the template (the date is the created_at of the document).',
                    },
                  },
                },
                magic_link: ref('MagicLinkSettings'),
              },
              additionalProperties: false,
            },
            name: { type: 'string', maxLength: 200 },
            description: { type: 'string', maxLength: 2000 },
          },
        },
        Render: {
          type: 'object',
          required: ['id', 'object', 'document_id', 'status', 'template_id', 'destinations', 'warnings', 'created_at'],
          properties: {
            id: { type: 'string', description: 'The render id.' },
            object: { const: 'render' },
            document_id: { type: 'string' },
            magic_link_piece_id: {
              type: 'string',
              description: 'The Magic Link id, when a magic_link destination was given.',
            },
            status: { const: 'completed' },
            template_id: { type: 'string' },
            destinations: {
              type: 'object',
              properties: {
                inkit_storage: {
                  type: 'object',
                  required: ['document_id', 'name', 'size', 'sha256'],
                  properties: {
                    document_id: { type: 'string' },
                    name: { type: 'string' },
                    size: { type: 'integer' },
                    sha256: { type: 'string' },
                  },
                  additionalProperties: false,
                },
                magic_link: {
                  type: 'object',
                  required: ['id', 'url', 'recipient_email', 'expires_at', 'views_left', 'status'],
                  properties: {
                    id: { type: 'string' },
                    url: { type: 'string' },
                    recipient_email: { type: 'string' },
                    expires_at: { type: ['string', 'null'] },
                    views_left: { type: ['integer', 'null'] },
                    status: { enum: ['active', 'send_failed', 'expired', 'revoked'] },
                  },
                  additionalProperties: false,
                },
              },
              additionalProperties: false,
            },
            warnings: {
              type: 'array',
              items: {
                type: 'object',
                required: ['code', 'field', 'message'],
                properties: { code: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } },
              },
            },
            created_at: { type: 'string', format: 'date-time' },
          },
          additionalProperties: false,
        },
        TemplateUpload: {
          type: 'object',
          properties: {
            name: { type: 'string', maxLength: 200 },
            source: { type: 'string', description: 'XML text' },
            source_base64: { type: 'string', description: 'An XML file or a fillable PDF, base64' },
            assets: {
              type: 'object',
              additionalProperties: { type: 'string' },
              description:
                'The images and fonts an XML template names, by the path it names them with, each as base64: `{ "images/logo.png": "iVBOR…" }`',
            },
          },
        },
        Template: {
          type: 'object',
          required: [
            'id',
            'object',
            'name',
            'format',
            'variables',
            'optional_variables',
            'size',
            'created_at',
            'updated_at',
          ],
          properties: {
            id: { type: 'string' },
            object: { const: 'template' },
            name: { type: 'string' },
            format: { enum: ['xml', 'pdf'] },
            variables: {
              type: 'array',
              items: { type: 'string' },
              description: 'Every merge field, in order of first use. Each needs a value, but the optional ones.',
            },
            optional_variables: {
              type: 'array',
              description:
                'The variables that may be left out (written `{{name | default: "text"}}` in the template), each with the text it takes then.',
              items: {
                type: 'object',
                required: ['name', 'default'],
                properties: { name: { type: 'string' }, default: { type: 'string' } },
                additionalProperties: false,
              },
            },
            size: { type: 'integer' },
            created_at: { type: 'string', format: 'date-time' },
            updated_at: { type: 'string', format: 'date-time' },
          },
          additionalProperties: false,
        },
        TemplateList: list('Template'),
        Document: {
          type: 'object',
          required: [
            'id',
            'object',
            'name',
            'description',
            'status',
            'template_id',
            'created_at',
            'created_by',
            'size',
            'sha256',
          ],
          properties: {
            id: { type: 'string' },
            object: { const: 'document' },
            name: { type: 'string' },
            description: { type: ['string', 'null'] },
            status: { const: 'generated' },
            template_id: { type: 'string' },
            created_at: { type: 'string', format: 'date-time' },
            created_by: {
              type: 'object',
              required: ['name'],
              properties: { name: { type: ['string', 'null'], description: 'The name of the API key that made it.' } },
            },
            size: { type: 'integer' },
            sha256: { type: 'string' },
            magic_links: { type: 'array', items: ref('MagicLink'), description: 'Only on GET /v1/documents/{id}.' },
          },
          additionalProperties: false,
        },
        DocumentList: list('Document'),
        Duration: {
          type: 'object',
          description: 'Exactly one unit key with a positive whole number, e.g. {"hours": 24}.',
          minProperties: 1,
          maxProperties: 1,
          properties: {
            minutes: { type: 'integer', minimum: 1 },
            hours: { type: 'integer', minimum: 1 },
            days: { type: 'integer', minimum: 1 },
          },
          additionalProperties: false,
        },
        MagicLinkSettings: {
          type: 'object',
          required: ['recipient_email'],
          description:
            'At least one limit: expire_after_n_views, retain_from_created or retain_from_opened (views may be combined with one time limit; whichever comes first ends the link). With a view limit the link also expires 10 days after creation.',
          properties: {
            recipient_email: { type: 'string', format: 'email', description: 'The link is e-mailed here.' },
            auth_email: {
              type: 'string',
              format: 'email',
              description: 'The address the recipient must prove; defaults to recipient_email.',
            },
            auth_type: { enum: ['email', 'social'], default: 'email' },
            expire_after_n_views: { type: 'integer', minimum: 1 },
            retain_from_created: ref('Duration'),
            retain_from_opened: ref('Duration'),
          },
          additionalProperties: false,
        },
        MagicLink: {
          type: 'object',
          required: [
            'id',
            'object',
            'document_id',
            'status',
            'recipient_email',
            'auth_email',
            'auth_type',
            'created_at',
            'views_used',
            'views_left',
            'expires_at',
          ],
          properties: {
            id: { type: 'string' },
            object: { const: 'magic_link' },
            document_id: { type: 'string' },
            status: { enum: ['active', 'send_failed', 'expired', 'revoked'] },
            recipient_email: { type: 'string' },
            auth_email: { type: 'string' },
            auth_type: { enum: ['email', 'social'] },
            expire_after_n_views: { type: ['integer', 'null'] },
            retain_from_created: { oneOf: [ref('Duration'), { type: 'null' }] },
            retain_from_opened: { oneOf: [ref('Duration'), { type: 'null' }] },
            created_at: { type: 'string', format: 'date-time' },
            sent_at: { type: ['string', 'null'], format: 'date-time' },
            opened_at: { type: ['string', 'null'], format: 'date-time' },
            expires_at: {
              type: ['string', 'null'],
              format: 'date-time',
              description: 'When the link stops working by time; null when only views end it.',
            },
            views_used: { type: 'integer' },
            views_left: { type: ['integer', 'null'] },
            send_error: { type: ['string', 'null'] },
            url: {
              type: 'string',
              description:
                'Only when the link is made or re-sent: the token is stored hashed and cannot be shown again.',
            },
            access_log: {
              type: 'array',
              items: {
                type: 'object',
                required: ['at', 'kind', 'outcome'],
                properties: {
                  at: { type: 'string' },
                  kind: { type: 'string' },
                  outcome: { type: 'string' },
                  ip: { type: ['string', 'null'] },
                  user_agent: { type: ['string', 'null'] },
                  email: { type: ['string', 'null'] },
                },
              },
            },
          },
          additionalProperties: false,
        },
        MagicLinkApp: {
          type: 'object',
          properties: {
            object: { const: 'app' },
            name: { const: 'magic_link' },
            public_url: {
              type: ['string', 'null'],
              description:
                "Where links point. null (or the server's own address): follow this server's PUBLIC_URL, as a new install does; a URL: always that one.",
            },
            public_url_follows_server: {
              type: 'boolean',
              readOnly: true,
              description: "true when public_url is this server's address (PUBLIC_URL), false when it was set here",
            },
            sender_name: { type: 'string' },
            sender_email: { type: 'string' },
            organization_name: { type: 'string' },
            logo_url: { type: ['string', 'null'] },
            accent_color: { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' },
            auth_types: { type: 'array', items: { enum: ['email', 'social'] } },
            oidc_providers: {
              type: 'array',
              items: {
                type: 'object',
                required: ['id', 'name', 'issuer', 'client_id'],
                properties: {
                  id: { type: 'string' },
                  name: { type: 'string' },
                  issuer: { type: 'string' },
                  client_id: { type: 'string' },
                  client_secret: { type: 'string', writeOnly: true },
                  client_secret_set: { type: 'boolean', readOnly: true },
                },
              },
            },
            configured_at: { type: 'string', readOnly: true },
          },
        },
        PostcardRequest: {
          type: 'object',
          required: [
            'api_token',
            'template_id',
            'address_line_1',
            'address_city',
            'address_state',
            'address_zip',
            'address_country',
          ],
          description: 'first_name or last_name is required. Every other field is custom data (a string).',
          properties: {
            api_token: { type: 'string' },
            template_id: { type: 'string' },
            first_name: { type: 'string', maxLength: 100 },
            last_name: { type: 'string', maxLength: 100 },
            email: { type: 'string', format: 'email' },
            company: { type: 'string', maxLength: 200 },
            phone: { type: 'string', maxLength: 40 },
            address_line_1: { type: 'string', maxLength: 64, description: 'At most 64 characters (not bytes).' },
            address_line_2: { type: 'string', maxLength: 64 },
            address_city: { type: 'string', maxLength: 100 },
            address_state: {
              type: 'string',
              minLength: 2,
              maxLength: 2,
              description: 'Two letters; a US state or territory code when the country is US.',
            },
            address_zip: { type: 'string', maxLength: 20 },
            address_country: {
              type: 'string',
              minLength: 2,
              maxLength: 2,
              description: 'ISO 3166-1 alpha-2, any case; stored upper-case.',
            },
            source: { type: 'string', maxLength: 100 },
          },
          additionalProperties: { type: 'string', maxLength: 2000 },
        },
        Postcard: {
          type: 'object',
          required: [
            'id',
            'object',
            'status',
            'template_id',
            'contact',
            'address',
            'custom_data',
            'document_id',
            'failure_reason',
            'warnings',
            'created_at',
            'updated_at',
          ],
          properties: {
            id: { type: 'string' },
            object: { const: 'postcard' },
            status: { enum: ['received', 'rendered', 'failed'] },
            template_id: { type: 'string' },
            contact: { type: 'object', additionalProperties: { type: 'string' } },
            address: { type: 'object', additionalProperties: { type: 'string' } },
            custom_data: { type: 'object', additionalProperties: { type: 'string' } },
            document_id: { type: ['string', 'null'] },
            failure_reason: { type: ['string', 'null'] },
            warnings: {
              type: 'array',
              description:
                'What the render warned about: `text_overflow` when a text does not fit its box (`field` is the variable).',
              items: {
                type: 'object',
                required: ['code', 'field', 'message'],
                properties: { code: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } },
              },
            },
            created_at: { type: 'string', format: 'date-time' },
            updated_at: { type: 'string', format: 'date-time' },
          },
          additionalProperties: false,
        },
      },
    },
  };
}
