/**
 * The HTTP API (Fastify). Handlers are thin: they read the request, call the core, and shape the
 * answer. Every failure leaves through the one error handler, in the one error shape.
 */
import cookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Service } from '../service';
import { AuthenticationError, ValidationError } from '../errors';
import { parseScopes, type KeyInfo } from '../keys';
import { isObject } from '../guards';
import { renderIdFor } from '../idempotency';
import { EXAMPLE_IDS } from '../templates/store';
import { errorAnswer, errorBody, errorHandler, isPagePath, requireJson, sendError, type ErrorBody } from './errors';
import { acceptMultipart, readMultipart } from './multipart';
import { registerAssets } from './assets';
import { contentDisposition } from './headers';
import { redactUrl, registerLinkRoutes } from './links';
import { registerOpenApi } from './openapi';
import {
  answer,
  Deleted,
  described,
  DocumentSchema,
  errors,
  ErrorSchema,
  exampleDocument,
  exampleGenerate,
  exampleRender,
  exampleTemplate,
  GenerateRequestSchema,
  HealthSchema,
  IdempotencyHeader,
  IdParams,
  KeyInfoSchema,
  List,
  oneOf,
  PageQuery,
  pageOf,
  RenderSchema,
  DOCX_TYPE,
  SHARED_SCHEMAS,
  TemplateSchema,
  TemplateUploadBody,
} from './schemas';
import { validatorFor } from './validation';
import { registerPostcardRoutes } from './postcards';
import { registerWebhookRoutes } from './webhooks';
import { requireScopes, scopeOf } from './scopes';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: KeyInfo;
  }
}

export interface AppOptions {
  /** false: no logging. Default: JSON lines at LOG_LEVEL to standard output. */
  logger?: boolean;
  /** Where log lines go instead of standard output (tests read them). */
  logStream?: NodeJS.WritableStream;
  /** Whether the server is shutting down: every request read from then on (`/readyz` too) is answered 503 stopping. */
  stopping?: () => boolean;
}

const API_KEY_HEADER = 'x-service-api-token';

/** The routes each app registered, by method and URL pattern. */
export const registeredRoutes = new WeakMap<FastifyInstance, { method: string; url: string }[]>();

/** The HTTP API and the recipient's pages (src/app.ts adds the operator's web app). */
export async function buildApi(service: Service, options: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = service;
  const app = Fastify({
    bodyLimit: config.bodyLimit,
    // a stopping server answers the requests it has read, and those that come after on an open
    // connection get 503 stopping in our shape (below); src/serve.ts closes idle connections
    forceCloseConnections: false,
    return503OnClosing: false,
    logger:
      options.logger === false
        ? false
        : {
            level: config.logLevel,
            ...(options.logStream ? { stream: options.logStream } : {}),
            redact: [`req.headers["${API_KEY_HEADER}"]`, 'req.headers.authorization', 'req.headers.cookie'],
            // link tokens are in URLs: never log them
            serializers: {
              req: (req: { method: string; url: string; ip?: string }) => ({
                method: req.method,
                url: redactUrl(req.url),
                ip: req.ip,
              }),
            },
          },
    genReqId: () => `req_${Math.random().toString(36).slice(2, 12)}`,
    requestIdHeader: false,
    // what the router refuses (a broken %-escape, an over-long id) gets the one error shape too, and
    // under /v1 only after the key was checked: without a key, every /v1 answer is a 401
    frameworkErrors: (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
      const answer = async (): Promise<[number, ErrorBody]> => {
        if (req.url.startsWith('/v1/') && !(await service.keys.authenticate('api', req.headers[API_KEY_HEADER]))) {
          const unauthorized = new AuthenticationError();
          return [401, errorBody(unauthorized.code, unauthorized.message)];
        }
        if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
          return [
            414,
            errorBody(
              'uri_too_long',
              'An id in the address is longer than any id this API makes (at most 100 characters). Check the address.',
            ),
          ];
        if (err.code === 'FST_ERR_BAD_URL')
          return [
            400,
            errorBody(
              'bad_url',
              'The address has a broken %-escape (a % not followed by two hex digits, or bytes that are not UTF-8). Escape the id with encodeURIComponent.',
            ),
          ];
        return [400, errorBody('bad_request', err.message)];
      };
      answer().then(
        ([status, body]) => void sendError(req, reply, status, body),
        (e: unknown) => void sendError(req, reply, 500, errorAnswer(e as FastifyError, req, config.bodyLimit)[1]),
      );
    },
    // what Node's HTTP parser refuses before any route (headers over 16 KB, garbage) in the shape as well
    clientErrorHandler: (err, socket) => {
      if (!socket.writable) return socket.destroy();
      const big = (err as NodeJS.ErrnoException).code === 'HPE_HEADER_OVERFLOW';
      const body = JSON.stringify(
        big
          ? errorBody('headers_too_large', 'The request headers are larger than 16 KB. Send fewer or shorter headers.')
          : errorBody('bad_request', 'The request could not be read as HTTP.'),
      );
      socket.end(
        `HTTP/1.1 ${big ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });
  // the routes' schemas (src/http/schemas.ts): checked, serialized, and described in /openapi.json
  app.setValidatorCompiler(validatorFor(SHARED_SCHEMAS));
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await registerOpenApi(app, {
    publicUrl: config.publicUrl,
    version: service.version,
    postcardPath: config.postcardPath,
  });
  // every route as registered (the OpenAPI test checks that each public one is in /openapi.json)
  const routes: { method: string; url: string }[] = [];
  registeredRoutes.set(app, routes);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url });
  });
  app.setErrorHandler(errorHandler(config.bodyLimit));
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0];
    void sendError(
      req,
      reply,
      404,
      errorBody(
        'not_found',
        isPagePath(req.url)
          ? `There is no page at ${path}. Check the address, or open the link from the e-mail again.`
          : `There is no ${req.method} ${path}. GET /openapi.json lists every endpoint.`,
      ),
    );
  });

  // Only JSON, XML, HTML, Word and PDF bodies exist in this API; anything else is a 415.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(
    ['application/xml', 'text/xml', 'text/html', 'application/pdf', DOCX_TYPE],
    { parseAs: 'buffer' },
    (_req, body, done) => done(null, body),
  );
  // HTML forms (the recipient's pages, the web app): a repeated name (checkboxes) gives a list
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    const form: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(body as string)) {
      const seen = form[k];
      form[k] = seen === undefined ? v : Array.isArray(seen) ? [...seen, v] : [seen, v];
    }
    done(null, form);
  });
  await app.register(cookie);

  // one hook for every request, and a synchronous one: most requests need none of it but the id
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('X-Request-Id', req.id);
    if (options.stopping?.()) {
      void reply.header('connection', 'close');
      return void sendError(
        req,
        reply,
        503,
        errorBody('stopping', 'This server is shutting down. Send the request to another one, or again in a moment.'),
      );
    }
    if (!req.url.startsWith('/v1/')) return done();
    service.keys.authenticate('api', req.headers[API_KEY_HEADER]).then((key) => {
      if (!key) return done(new AuthenticationError());
      req.apiKey = key;
      // what this key may do (src/http/scopes.ts); an unknown path's 404 needs no scope
      const scope = req.routeOptions.url === undefined ? null : scopeOf(req.method, req.routeOptions.url);
      try {
        if (scope) requireScopes(key, [scope]);
      } catch (err) {
        return done(err as Error);
      }
      done();
    }, done);
  });

  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // the key itself: its name and scopes; `?require=a,b` answers 403 insufficient_scope unless it has them all
  api.get(
    '/v1/key',
    {
      schema: {
        operationId: 'getKey',
        summary: 'The API key making the call: its name and scopes',
        description:
          'Any live key may call it. With `require`, it also checks the key has every scope named, and answers 403 `insufficient_scope` naming those it lacks (the n8n credential test uses it).',
        querystring: Type.Object({
          require: Type.Optional(
            Type.String({
              maxLength: 500,
              description: 'Scopes the key must have, comma-separated, e.g. `generate,documents:read`.',
            }),
          ),
        }),
        response: {
          200: {
            ...KeyInfoSchema,
            description: 'The key.',
            examples: [
              {
                object: 'api_key',
                id: 'key_01m82kzq5az78r9b7p2fxgxka8',
                name: 'n8n production',
                prefix: 'plk_7fK2aQ9x',
                scopes: ['generate', 'documents:read'],
              },
            ],
          },
          ...errors(401, 422),
        },
      },
    },
    async (req) => {
      const key = req.apiKey!;
      const names = (req.query.require ?? '').split(',').filter((n) => n.trim());
      if (names.length) requireScopes(key, parseScopes(names, 'require'));
      return { object: 'api_key' as const, id: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes };
    },
  );

  api.get(
    '/healthz',
    {
      schema: {
        operationId: 'health',
        summary: 'Whether the service and its database answer',
        security: [],
        response: { 200: answer(HealthSchema, 'Healthy.'), ...errors(500) },
      },
    },
    async () => {
      await service.ping();
      return {
        status: 'ok' as const,
        database: service.database.dialect,
        storage: service.storage.kind,
        version: service.version,
      };
    },
  );
  // ready for traffic: the database answers (migrations ran and the engine started before the
  // app was built), and the server is not shutting down
  api.get(
    '/readyz',
    {
      schema: {
        operationId: 'ready',
        summary: 'Whether this server should get traffic: its database answers, and it is not shutting down',
        security: [],
        response: {
          200: Type.Object(
            {
              status: Type.Literal('ready'),
              database: oneOf(['sqlite', 'postgres'] as const),
              engine: oneOf(['embedded', 'temporal'] as const),
            },
            { description: 'Ready.', examples: [{ status: 'ready', database: 'sqlite', engine: 'embedded' }] },
          ),
          503: answer(ErrorSchema, 'Not ready: `stopping` (shutting down) or `database_unavailable`.'),
        },
      },
    },
    async (_req, reply) => {
      try {
        await service.ping();
      } catch (err) {
        return reply
          .status(503)
          .send(
            errorBody(
              'database_unavailable',
              `The database does not answer (${err instanceof Error ? err.message : String(err)}). Check that it runs and DATABASE_URL or DATA_DIR.`,
            ),
          );
      }
      return { status: 'ready' as const, database: service.database.dialect, engine: service.config.engine };
    },
  );
  api.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'openapi',
        summary: 'This document',
        security: [],
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1.' }) },
      },
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  );

  api.post(
    '/v1/generate',
    {
      schema: {
        operationId: 'generate',
        tags: ['Documents'],
        summary: 'Render a template with merge parameters and store the PDF',
        description:
          'Every variable of the template needs a value (an empty string is a value). Numbers and booleans become text; objects and arrays are refused. Keys the template does not use are listed under `warnings`, and so is text that does not fit its box (`text_overflow`). With an Idempotency-Key, the same key and body return the first answer again for 24 hours.',
        headers: IdempotencyHeader,
        body: described(GenerateRequestSchema, exampleGenerate),
        response: {
          201: answer(
            RenderSchema,
            'Rendered and stored; with magic_link, the link is made and e-mailed.',
            exampleRender,
          ),
          ...errors(400, 401, 409, 413, 415, 422, 500),
        },
      },
    },
    async (req, reply) => {
      requireJson(req);
      const key = req.apiKey!;
      const idem = req.headers['idempotency-key'];
      // with an Idempotency-Key, the key names the render (and so its workflow, its document and its
      // link): however often and however concurrently it is retried, each effect happens once
      const renderId = idem === undefined ? undefined : renderIdFor(key.id, idem);
      const work = async () => ({
        status: 201,
        body: await service.engine.generate({ body: req.body, caller: { keyId: key.id, name: key.name }, renderId }),
      });
      // a replay answers what the first request was answered, whichever status that was
      const send = (r: { status: number; body: unknown }) => (reply as FastifyReply).status(r.status).send(r.body);
      if (idem === undefined) return send(await work());
      const r = await service.idempotency.run(`${key.id}:POST /v1/generate`, idem, req.body, work);
      if (r.replayed) void reply.header('Idempotent-Replayed', 'true');
      return send(r);
    },
  );

  // the one API route that takes multipart (uploads); src/http/multipart.ts says why it is scoped
  await app.register(async (scope) => {
    await acceptMultipart(scope, config.bodyLimit);
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      '/v1/templates',
      {
        schema: {
          operationId: 'createTemplate',
          tags: ['Templates'],
          summary: 'Store a template: an XML layout, an HTML document with Liquid, a Word document, or a fillable PDF',
          description:
            'Send the XML itself (`Content-Type: application/xml`), the HTML itself (`text/html`; see docs/html-templates.md), a Word document (`' +
            DOCX_TYPE +
            '`; see docs/docx-templates.md), a PDF (`application/pdf`), JSON `{ "name", "source" | "source_base64", "assets" }`, or a multipart form with the template as `file` and the images it names as further files. `?name=` names raw uploads.',
          querystring: Type.Object({
            name: Type.Optional(Type.String({ description: 'Template name for raw uploads (XML, HTML, Word, PDF).' })),
          }),
          body: TemplateUploadBody,
          response: {
            201: answer(TemplateSchema, 'Stored.', exampleTemplate),
            ...errors(400, 401, 413, 415, 422),
          },
        },
      },
      async (req, reply) => {
        const query = req.query;
        let created;
        if (req.isMultipart()) {
          let source: Buffer | undefined;
          const upload = await readMultipart(req);
          const name: string | undefined = upload.fields.name;
          const assets = new Map<string, Uint8Array>();
          for (const file of upload.files) {
            if (file.field === 'file' || file.field === 'template') source = file.bytes;
            else {
              // an asset is found by its form field name (e.g. -F "images/logo.png=@logo.png") or its file name
              assets.set(file.field, file.bytes);
              if (file.filename) assets.set(file.filename, file.bytes);
            }
          }
          if (!source)
            throw new ValidationError(
              'Upload the template as the form field "file" (an XML or HTML file, a Word .docx or a fillable PDF); other files are its assets.',
              [{ field: 'file', message: 'is required', code: 'required' }],
            );
          created = await service.templates.create({
            source,
            name: name ?? query.name,
            assets: async (p) => assets.get(p),
          });
        } else if (Buffer.isBuffer(req.body)) {
          created = await service.templates.create({ source: new Uint8Array(req.body), name: query.name });
        } else {
          requireJson(req);
          const body = (req.body ?? {}) as Record<string, unknown>;
          const fields = ['source', 'source_base64'].filter((f) => typeof body[f] === 'string');
          if (fields.length !== 1) {
            throw new ValidationError(
              'Give the template as "source" (XML or HTML text) or "source_base64" (a file: XML, HTML, a Word .docx or a fillable PDF, base64), exactly one.',
              [{ field: 'source', message: 'give exactly one of source or source_base64', code: 'required' }],
            );
          }
          if (body.name !== undefined && typeof body.name !== 'string')
            throw new ValidationError('name must be text.', [
              { field: 'name', message: 'must be a string', code: 'type' },
            ]);
          // the images and fonts an XML template names, by the path it names them with: { "images/logo.png": "<base64>" }
          const assets = body.assets === undefined ? {} : body.assets;
          if (!isObject(assets) || Object.values(assets).some((v) => typeof v !== 'string')) {
            throw new ValidationError(
              'assets maps each path the template names (e.g. "images/logo.png") to the file as base64.',
              [{ field: 'assets', message: 'must be an object of base64 strings', code: 'type' }],
            );
          }
          const source =
            typeof body.source === 'string'
              ? body.source
              : new Uint8Array(Buffer.from(body.source_base64 as string, 'base64'));
          created = await service.templates.create({
            source,
            name: body.name,
            assets: async (p) =>
              Object.hasOwn(assets, p) ? new Uint8Array(Buffer.from(assets[p] as string, 'base64')) : undefined,
          });
        }
        return reply.status(201).send(created);
      },
    );
  });
  const templateParams = IdParams('template', EXAMPLE_IDS.letter);
  api.get(
    '/v1/templates',
    {
      schema: {
        operationId: 'listTemplates',
        tags: ['Templates'],
        summary: 'List templates, newest first',
        querystring: PageQuery,
        response: {
          200: described(
            List('Template'),
            {
              object: 'list',
              data: [exampleTemplate],
              has_more: false,
              next_cursor: null,
            },
            'A page of templates.',
          ),
          ...errors(401, 422),
        },
      },
    },
    async (req) => service.templates.list(pageOf(req.query)),
  );
  api.get(
    '/v1/templates/:id',
    {
      schema: {
        operationId: 'getTemplate',
        tags: ['Templates'],
        summary: 'A template and its variables',
        params: templateParams,
        response: { 200: answer(TemplateSchema, 'The template.', exampleTemplate), ...errors(401, 404) },
      },
    },
    async (req) => service.templates.get(req.params.id),
  );
  api.delete(
    '/v1/templates/:id',
    {
      schema: {
        operationId: 'deleteTemplate',
        tags: ['Templates'],
        summary: 'Delete a template (documents made from it stay)',
        params: templateParams,
        response: {
          200: described(
            Deleted('template'),
            { id: EXAMPLE_IDS.letter, object: 'template', deleted: true },
            'Deleted.',
          ),
          ...errors(401, 404),
        },
      },
    },
    async (req) => {
      await service.templates.remove(req.params.id);
      return { id: req.params.id, object: 'template' as const, deleted: true as const };
    },
  );

  const documentParams = IdParams('document', exampleDocument.id);
  api.get(
    '/v1/documents',
    {
      schema: {
        operationId: 'listDocuments',
        tags: ['Documents'],
        summary: 'List generated documents, newest first',
        querystring: Type.Composite([
          PageQuery,
          Type.Object({
            search: Type.Optional(
              Type.String({
                maxLength: 200,
                description: 'Only documents whose name contains this text, ignoring case.',
              }),
            ),
          }),
        ]),
        response: {
          200: described(
            List('Document'),
            {
              object: 'list',
              data: [exampleDocument],
              has_more: false,
              next_cursor: null,
            },
            'A page of documents.',
          ),
          ...errors(401, 422),
        },
      },
    },
    async (req) => service.documents.list(pageOf(req.query), req.query.search || undefined),
  );
  api.get(
    '/v1/documents/:id',
    {
      schema: {
        operationId: 'getDocument',
        tags: ['Documents'],
        summary: 'A generated document',
        params: documentParams,
        response: { 200: answer(DocumentSchema, 'The document record.', exampleDocument), ...errors(401, 404) },
      },
    },
    async (req) => service.documents.get(req.params.id),
  );
  api.get(
    '/v1/documents/:id/pdf',
    {
      schema: {
        operationId: 'downloadDocument',
        tags: ['Documents'],
        summary: 'The PDF, with its name in Content-Disposition',
        params: documentParams,
        produces: ['application/pdf'],
        response: {
          200: {
            description: 'The PDF bytes.',
            headers: {
              'Content-Disposition': {
                type: 'string',
                examples: [`attachment; filename="Welcome letter.pdf"; filename*=UTF-8''Welcome%20letter.pdf`],
              },
            },
            content: { 'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } } },
          },
          ...errors(401, 404),
        },
      },
    },
    async (req, reply) => {
      const { document, bytes } = await service.documents.pdf(req.params.id);
      return reply
        .header('Content-Type', 'application/pdf')
        .header('Content-Disposition', contentDisposition(document.name))
        .send(Buffer.from(bytes));
    },
  );
  api.delete(
    '/v1/documents/:id',
    {
      schema: {
        operationId: 'deleteDocument',
        tags: ['Documents'],
        summary: 'Delete a document and its PDF',
        params: documentParams,
        response: {
          200: described(
            Deleted('document'),
            { id: exampleDocument.id, object: 'document', deleted: true },
            'Deleted.',
          ),
          ...errors(401, 404),
        },
      },
    },
    async (req) => {
      await service.documents.remove(req.params.id);
      return { id: req.params.id, object: 'document' as const, deleted: true as const };
    },
  );

  registerAssets(app);
  registerLinkRoutes(app, service);
  registerPostcardRoutes(app, service);
  registerWebhookRoutes(app, service);
  return app;
}
