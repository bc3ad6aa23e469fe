/**
 * The one error shape of the API, `{ "error": { "code", "message", "details": [{ field, message, code }] } }`,
 * and the status code for each kind of failure. Nothing internal (stack, SQL, paths) reaches a client.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  AuthenticationError,
  ConflictError,
  InsufficientStorageError,
  TooLargeError,
  ForbiddenError,
  MalformedRequestError,
  NotFoundError,
  PaperlinkError,
  RateLimitError,
  UnavailableError,
  ValidationError,
  errorBody,
  isAnswered,
  type ErrorCode,
  type ErrorBody,
} from '../errors';

export { errorBody, type ErrorBody } from '../errors';
import type { ErrorObject } from 'ajv';
import { pageHeaders } from './headers';
import { schemaFailure } from './validation';
import { errorPage } from './pages';
import { outageOf } from '../outage';

/**
 * Whether a path is a page people open in a browser (a recipient's link, the web app), not the API.
 * The viewer's page-time reports (`/l/<token>/activity`) are called by a script: they answer JSON.
 */
export function isPagePath(url: string): boolean {
  if (/^\/l\/[^/?#]+\/activity(?:[?#]|$)/.test(url)) return false;
  return url.startsWith('/l/') || url === '/app' || url.startsWith('/app/') || url.startsWith('/app?');
}

/** Sends a failure: as a styled page on a page path, in the one JSON shape everywhere else. */
export function sendError(req: FastifyRequest, reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  // the router's own refusals answer before any hook has set it
  void reply.header('X-Request-Id', req.id);
  req.errorCode = body.error.code;
  if (!isPagePath(req.url)) return reply.status(status).send(body);
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .headers(pageHeaders('recipient'))
    .send(errorPage(status, body.error));
}

/** The HTTP status an error is answered with. */
export function statusOf(err: PaperlinkError): number {
  if (err instanceof ValidationError) return 422;
  if (err instanceof MalformedRequestError) return 400;
  if (err instanceof AuthenticationError) return 401;
  if (err instanceof ForbiddenError) return 403;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof ConflictError) return 409;
  if (err instanceof TooLargeError) return 413;
  if (err instanceof RateLimitError) return 429;
  if (err instanceof InsufficientStorageError) return 507;
  if (err instanceof UnavailableError) return 503;
  return 400;
}

/**
 * Framework errors (body parsing, limits) in our shape. `limit`: the body limit of the route that
 * refused (a postcard's is 64 KB); `serverLimit`: BODY_LIMIT.
 */
function fromFramework(err: FastifyError, limit: number, serverLimit: number): [number, ErrorBody] | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return [
        415,
        errorBody(
          'unsupported_media_type',
          'This endpoint takes a JSON body: send it with Content-Type: application/json.',
        ),
      ];
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
      return [
        413,
        errorBody(
          'body_too_large',
          limit < serverLimit
            ? `The request body is larger than this endpoint accepts (${limit} bytes, whatever BODY_LIMIT says). Send less.`
            : `The request body is larger than this server accepts (${limit} bytes). Send less, or raise BODY_LIMIT.`,
        ),
      ];
    default:
  }
  // from the JSON parser (src/http/app.ts): JSON.parse's own words say where it broke
  if (err instanceof SyntaxError && err.statusCode === 400) {
    return [
      400,
      errorBody('malformed_json', `The body is not valid JSON (${err.message}). Check quotes, commas and brackets.`),
    ];
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return [err.statusCode, errorBody('bad_request', err.message)];
  }
  return undefined;
}

function isJson(req: FastifyRequest): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

/** A 415 unless the body is JSON. */
export function requireJson(req: FastifyRequest): void {
  if (!isJson(req)) {
    throw Object.assign(new Error('not JSON'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 });
  }
}

/**
 * What a failure is to the client: ours (a PaperlinkError in the catalogue's codes), what a route's schema refused
 * (src/http/validation.ts), or the disk or the database failing underneath (src/outage.ts);
 * undefined for anything else.
 */
function failureOf(err: FastifyError): (PaperlinkError & { readonly code: ErrorCode }) | undefined {
  if (err.validation) return schemaFailure(err.validation as ErrorObject[], err.validationContext);
  // a start's failure (StartupError) is never the client's: a 500, logged, like any other bug
  return isAnswered(err) ? err : outageOf(err);
}

/** The status and body of any failure: ours, the framework's (limits, parsing), or a bug (500, logged). */
function errorAnswer(
  err: FastifyError,
  req: FastifyRequest,
  limit: number,
  failure = failureOf(err),
): [number, ErrorBody] {
  if (failure) {
    // the disk or the database failing: the client is told to come back; the operator reads why
    if (failure !== err && !err.validation) req.log.warn({ err }, `request failed: ${failure.code}`);
    return [statusOf(failure), errorBody(failure.code, failure.message, failure.details)];
  }
  const known = fromFramework(err, req.routeOptions?.bodyLimit ?? limit, limit);
  if (known) return known;
  req.log.error({ err }, 'request failed');
  const body = errorBody(
    'internal_error',
    `Something went wrong on our side. Try again; if it keeps failing, report request id ${req.id}.`,
  );
  body.error.request_id = String(req.id);
  return [500, body];
}

/**
 * The answer to a failure, as errorAnswer gives it, with what goes with it: Retry-After where the
 * answer says when to come back, the operator's log line for a printer that would not start, and
 * `noticed` told of every UnavailableError (a write the disk refused: /readyz hears of it).
 */
export function failureAnswer(
  err: FastifyError,
  req: FastifyRequest,
  reply: FastifyReply,
  limit: number,
  noticed: (failure: PaperlinkError) => void = () => undefined,
): [number, ErrorBody] {
  const failure = failureOf(err);
  if (failure instanceof UnavailableError) {
    noticed(failure);
    // a printer that would not start: its own words are for the operator's log, not the client
    if (failure === err && failure.cause) req.log.warn({ err: failure.cause }, `request failed: ${failure.code}`);
  }
  if (failure instanceof RateLimitError || failure instanceof UnavailableError)
    void reply.header('Retry-After', String(failure.retryAfterSeconds));
  return errorAnswer(err, req, limit, failure);
}

/** The routes' error handler: failureAnswer, sent as a page or in the JSON shape. */
export function errorHandler(limit: number, noticed?: (failure: PaperlinkError) => void) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    const [status, body] = failureAnswer(err, req, reply, limit, noticed);
    void sendError(req, reply, status, body);
  };
}
