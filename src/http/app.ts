/**
 * The HTTP server (Fastify) with what every route shares: the one error handler and error shape,
 * body parsers, the API key and its scopes, logging, metrics and traces, the OpenAPI document. It
 * has no route of its own: each resource's routes are in its folder (src/<resource>/routes.ts),
 * registered by src/app.ts. Handlers are thin: they read the request, call the core, and shape the
 * answer.
 */
import cookie from '@fastify/cookie';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Duplex } from 'node:stream';
import secureJson from 'secure-json-parse';
import type { Service } from '../service';
import { AuthenticationError } from '../errors';
import { httpDuration, httpRequests } from '../metrics';
import { requestSpan, within } from '../tracing';
import { SpanStatusCode, type Context, type Span } from '@opentelemetry/api';
import type { KeyInfo } from '../keys';
import { errorBody, errorHandler, isPagePath, requireJson, sendError, type ErrorBody } from './errors';
import { prettyLog } from './logformat';
import { registerOpenApi } from './openapi';
import { RateLimiter, rateGroupOf } from './ratelimit';
import { DOCX_TYPE, ErrorSchema, HealthSchema } from './schemas';
import type { TSchema } from '@sinclair/typebox';
import { requireScopes, scopesOf } from './scopes';
import { validatorFor } from './validation';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: KeyInfo;
    /** The request's span, when tracing is on (src/tracing.ts). */
    traced?: { span: Span; context: Context };
    /** The code of the error answered (sendError), for the request's span. */
    errorCode?: string;
  }
}

/**
 * A span per request (OTEL_*; src/tracing.ts), named by the route as declared, a child of the
 * caller's `traceparent`. The handler runs within it (entered once the body is read, as stream
 * events would lose it), so what the handler does — the engine, a Temporal workflow's start, the
 * render — is part of the same trace. It ends when the response does, sent or not (a client that
 * went away: `error.type` aborted); an error answer puts its code in `error.type` (sendError), and
 * only a 5xx is the server's error, as OpenTelemetry's HTTP conventions say.
 */
function traceRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    const traced = requestSpan(req.method, req.routeOptions.url, req.headers);
    req.traced = traced;
    reply.raw.once('close', () => {
      const { span } = traced;
      const sent = reply.raw.writableFinished;
      if (sent) span.setAttribute('http.response.status_code', reply.statusCode);
      const code = sent ? req.errorCode : 'aborted';
      if (code) span.setAttribute('error.type', code);
      if (!sent || reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: code });
      span.end();
    });
    done();
  });
  app.addHook('preHandler', (req, _reply, done) => (req.traced ? within(req.traced.context, done) : done()));
}

/**
 * What the router refuses (a broken %-escape, an over-long id) in the one error shape too, and
 * under /v1 only after the key was checked: without a key, every /v1 answer is a 401.
 */
function frameworkErrors(service: Service, handleError: ReturnType<typeof errorHandler>) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const answer = async (): Promise<[number, ErrorBody]> => {
      if (req.url.startsWith('/v1/') && !(await service.keys.authenticate('api', req.headers[API_KEY_HEADER]))) {
        const unauthorized = new AuthenticationError();
        return [401, errorBody(unauthorized.code, unauthorized.message)];
      }
      // an id longer than any id this API makes: a broken rule of the id (the page of a link: no such link)
      if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
        return isPagePath(req.url)
          ? [404, errorBody('not_found', 'There is no page at this address. Open the link from the e-mail again.')]
          : [
              422,
              errorBody(
                'validation_failed',
                'An id in the address is longer than any id this API makes (at most 100 characters). Check the address.',
                [{ field: 'id', message: 'must be at most 100 characters', code: 'too_long' }],
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
      // the key could not be checked (the database away): as every route answers that
      (e: unknown) => handleError(e as FastifyError, req, reply),
    );
  };
}

/** What Node's HTTP parser refuses before any route (headers over 16 KB, garbage), in the shape as well. */
function clientErrorHandler(requestTimeoutMs: number) {
  return (err: Error, socket: Duplex) => {
    // an answer already begun on this connection cannot be followed by another
    const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (!socket.writable || answering) return socket.destroy();
    const code = (err as NodeJS.ErrnoException).code;
    const [status, body] =
      code === 'HPE_HEADER_OVERFLOW'
        ? [
            '431 Request Header Fields Too Large',
            errorBody('headers_too_large', 'The request headers are larger than 16 KB. Send fewer or shorter headers.'),
          ]
        : code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [
              '408 Request Timeout',
              errorBody(
                'request_timeout',
                `The request was not sent whole within ${requestTimeoutMs} ms (REQUEST_TIMEOUT_MS). Send the body at once, or a smaller one.`,
              ),
            ]
          : ['400 Bad Request', errorBody('bad_request', 'The request could not be read as HTTP.')];
    const text = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  };
}

/** The bodies this server reads: JSON, XML, HTML, Word, PDF and forms; anything else is a 415. */
function addBodyParsers(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
  // JSON as Fastify reads it (a "__proto__" or "constructor.prototype" key is refused), but an
  // empty body is no body: many clients send Content-Type: application/json on every call,
  // a DELETE too; and a broken body's error says where it broke
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    // as it came: what a signature was made over (a mail partner's events, src/postcards/routes.ts)
    (req as { rawBody?: string }).rawBody = text;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      done(Object.assign(err as Error, { statusCode: 400 }), undefined);
    }
  });
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

/** Each app's per-address limiter (tests look at what it holds). */
export const rateLimiters = new WeakMap<FastifyInstance, RateLimiter>();

/** The routes each app registered, by method and URL pattern. */
export const registeredRoutes = new WeakMap<FastifyInstance, { method: string; url: string }[]>();

/** Replaces link tokens in a URL, so that logs never hold them. */
export function redactUrl(url: string): string {
  // also drop the query: the sign-in callback carries the provider's one-time code
  return url.startsWith('/l/') ? url.replace(/[?#].*$/, '').replace(/^\/l\/[^/]+/, '/l/[token]') : url;
}

/**
 * The server every route shares, with no route of its own: src/app.ts registers each resource's
 * routes on it, and `schemas` are the shared schemas they point at (each resource's `schemas.ts`).
 */
export async function httpServer(
  service: Service,
  schemas: TSchema[],
  options: AppOptions = {},
): Promise<FastifyInstance> {
  const { config } = service;
  const { trustProxy } = config;
  // LOG_FORMAT=pretty: readable lines, to the given stream or standard output; json: pino's own lines
  const logStream = config.logFormat === 'pretty' ? prettyLog(options.logStream ?? process.stdout) : options.logStream;
  // every failure, in every answer: /readyz hears of a write the disk refused
  const handleError = errorHandler(config.bodyLimit, (failure) => service.writes.noticed(failure));
  const app = Fastify({
    bodyLimit: config.bodyLimit,
    // a client has REQUEST_TIMEOUT_MS to send a whole request, headers and body (a slow sender
    // holds a connection no longer); Node checks every few seconds and answers 408 (below)
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(5_000, Math.max(50, Math.floor(config.requestTimeoutMs / 4))),
    },
    // TRUST_PROXY: whose X-Forwarded-For gives req.ip (a number: that many proxy hops)
    trustProxy: typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
    // a stopping server answers the requests it has read, and those that come after on an open
    // connection get 503 stopping in our shape (below); src/serve.ts closes idle connections
    forceCloseConnections: false,
    return503OnClosing: false,
    logger:
      options.logger === false
        ? false
        : {
            level: config.logLevel,
            ...(logStream ? { stream: logStream } : {}),
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
    frameworkErrors: frameworkErrors(service, handleError),
    clientErrorHandler: clientErrorHandler(config.requestTimeoutMs),
  });
  // the routes' schemas (each resource's schemas.ts): checked, serialized, and described in /openapi.json
  const shared = [ErrorSchema, HealthSchema, ...schemas];
  app.setValidatorCompiler(validatorFor(shared));
  for (const schema of shared) app.addSchema(schema);
  // a route whose body is JSON (its schema names no other media) answers 415 to any other body,
  // before its schema is checked: a form or a text is the wrong medium, not a wrong field
  app.addHook('preValidation', async (req) => {
    const body = req.routeOptions.schema?.body as { content?: unknown } | undefined;
    if (body && !body.content) requireJson(req);
  });
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
  app.setErrorHandler(handleError);
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

  addBodyParsers(app);
  await app.register(cookie);
  const limiter = new RateLimiter(service.clock, config.rateLimits);
  rateLimiters.set(app, limiter);

  // what operators chart (src/metrics.ts): by the route as declared, so ids in paths make no new series
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    httpRequests.inc({ method: req.method, route, status: reply.statusCode });
    httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });
  if (config.tracing) traceRequests(app);

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
    if (!req.url.startsWith('/v1/')) {
      // the routes without an API key: so many requests a minute per client address
      const group = rateGroupOf(req.method, req.routeOptions.url, config.postcardPath);
      try {
        if (group) limiter.take(group, req.ip);
      } catch (err) {
        return done(err as Error);
      }
      return done();
    }
    service.keys.authenticate('api', req.headers[API_KEY_HEADER]).then((key) => {
      if (!key) return done(new AuthenticationError());
      req.apiKey = key;
      // what this key may do (src/http/scopes.ts); an unknown path's 404 needs no scope
      const scopes = req.routeOptions.url === undefined ? [] : scopesOf(req.method, req.routeOptions.url);
      try {
        requireScopes(key, scopes);
        // what costs a render and keeps nothing is counted per key (src/http/ratelimit.ts)
        const group = rateGroupOf(req.method, req.routeOptions.url, config.postcardPath);
        if (group) limiter.take(group, key.id);
      } catch (err) {
        return done(err as Error);
      }
      done();
    }, done);
  });

  return app;
}
