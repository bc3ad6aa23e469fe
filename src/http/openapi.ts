/**
 * The OpenAPI 3.1 description of the API, served at GET /openapi.json: built by @fastify/swagger
 * from the schemas the routes declare (each resource's schemas.ts and routes.ts), so it has every route as it is. A test
 * checks it against the OpenAPI schema, checks that it has every public route, and checks real
 * answers against it.
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { errorExample, type ErrorStatus } from './schemas';
import { scopesOf } from './scopes';

type Operation = Record<string, unknown> & {
  responses?: Record<string, unknown>;
  description?: string;
  requestBody?: unknown;
  parameters?: unknown;
};
type Doc = { paths?: Record<string, Record<string, Operation>> };

/**
 * Whether a route is the API's, and so in /openapi.json: every route but the operator's web app
 * (/app), its files (/assets), the recipient's pages and their script's calls (/l), and the root.
 * A new route is in the document unless it is one of those (test/http/openapi.test.ts holds the
 * server's routes against the document, and docs/api.md against both).
 */
export function isApiRoute(url: string): boolean {
  return !(url === '/' || url === '/app' || /^\/(app|assets|l)\//.test(url));
}

export async function registerOpenApi(
  app: FastifyInstance,
  { publicUrl, version, postcardPath }: { publicUrl: string; version: string; postcardPath: string },
): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Paperlink API',
        version,
        description:
          'Generate PDF documents from templates, store them, share them by Magic Link, and take postcard requests. Every /v1 call needs the X-Service-API-Token header. Errors have one shape: `{ "error": { "code", "message", "details": [{ "field", "message", "code" }] } }`.',
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
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    // the recipient's pages and the web app are not the API
    transform: ({ schema, url }) => ({ schema: isApiRoute(url) ? schema : { ...schema, hide: true }, url }),
    transformObject: (documents) =>
      'openapiObject' in documents
        ? withCommonAnswers(withScopes(documents.openapiObject as Doc), postcardPath)
        : documents.swaggerObject,
  });
}

/**
 * The answers any operation may give whatever it does, from before its handler runs (src/http/app.ts):
 * a request that cannot be read (400) or comes too slowly (408) or with too many headers (431);
 * with a body, one too large (413) or of another type (415); with parameters or a body, one that
 * breaks their rules (422); without a key (postcards), too many from one address (429); and on
 * every route but this document's, the database away (503) or the disk full (507).
 */
function withCommonAnswers(doc: Doc, postcardPath: string): Doc {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const statuses: ErrorStatus[] = [400, 408, 431];
      if (op.requestBody) statuses.push(413, 415);
      if (op.requestBody || (Array.isArray(op.parameters) && op.parameters.length)) statuses.push(422);
      if (path === postcardPath) statuses.push(429);
      // the database or the disk underneath failing (src/outage.ts), on every route that uses them
      if (path !== '/openapi.json') statuses.push(503, 507);
      const responses = (op.responses ??= {});
      for (const status of statuses) {
        if (responses[status]) continue;
        const [description, example] = errorExample(status);
        responses[status] = {
          description,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } },
        };
      }
    }
  }
  return doc;
}

/** Every /v1 operation: the scope its key needs (src/http/scopes.ts), and the 403 without it. */
function withScopes(doc: Doc): Doc {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(item)) {
      const scopes = scopesOf(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ':$1'));
      if (!scopes.length) continue;
      // x-scope: the scope that names the operation; x-scopes: all it needs
      op['x-scope'] = scopes[0];
      op['x-scopes'] = scopes;
      op.description = `${op.description ? `${op.description} ` : ''}Needs a key with the scope${scopes.length > 1 ? 's' : ''} ${scopes.map((s) => `\`${s}\``).join(' and ')}.`;
      const [description, example] = errorExample(403);
      op.responses = {
        ...op.responses,
        403: {
          description,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } },
        },
      };
    }
  }
  return doc;
}
