/**
 * One base error class for everything Paperlink throws on purpose. Each error has a literal
 * `code` (the same string the HTTP API returns in `error.code`), a message that says what to do,
 * and optional `details`, one entry per offending field.
 *
 * The class says what kind of failure it is; the HTTP layer maps the class to a status code.
 */

/**
 * Every `error.code` the API answers, by its HTTP status: the catalogue a client author reads. Each
 * error class below takes only the codes of its own status, so the compiler refuses a code thrown
 * anywhere that is not here; docs/api.md's table of errors is checked against this one
 * (test/docs/errors.test.ts). A detail's `code` (per field: `required`, `range`, …) is another list.
 */
export const ERROR_CODES = {
  400: ['malformed_json', 'malformed_multipart', 'bad_url', 'bad_request'],
  // invalid_credentials: the web app's sign-in; invalid_signature: the n8n Paperlink Trigger's webhook
  401: ['unauthorized', 'invalid_credentials', 'invalid_signature'],
  403: ['insufficient_scope'],
  404: ['not_found'],
  408: ['request_timeout'],
  409: [
    'idempotency_key_reused',
    'app_not_configured',
    'webhook_limit_reached',
    'settings_busy',
    'version_conflict',
    'proof_unavailable',
  ],
  413: ['body_too_large'],
  415: ['unsupported_media_type'],
  422: [
    'validation_failed',
    'missing_variables',
    'template_invalid',
    'invalid_value',
    'unsupported_character',
    'render_limit_exceeded',
    'too_deep',
    'text_overflow',
    'standard_unavailable',
    'format_unavailable',
    // a postcard a printer would refuse (src/templates/print.ts)
    'not_print_ready',
    // the n8n Postcard Intake trigger's own list of templates
    'template_not_allowed',
  ],
  429: ['rate_limited'],
  431: ['headers_too_large'],
  500: ['internal_error'],
  503: [
    'engine_unavailable',
    'database_unavailable',
    'storage_unavailable',
    'renderer_unavailable',
    'write_failed',
    'stopping',
  ],
  507: ['insufficient_storage'],
} as const;

/**
 * What fails a process's start (serve, paperlink worker, a plugin's worker) before it answers
 * anything: the CLI prints the code and message and exits.
 */
export const STARTUP_CODES = [
  'invalid_configuration',
  'data_dir_in_use',
  'temporal_unreachable',
  'temporal_task_queue_versioned',
] as const;

/** The codes answered with one status. */
export type CodeOf<S extends keyof typeof ERROR_CODES> = (typeof ERROR_CODES)[S][number];
/** Any code of the catalogue. */
export type ErrorCode = CodeOf<keyof typeof ERROR_CODES>;
/** A code that fails a start. */
export type StartupCode = (typeof STARTUP_CODES)[number];

export interface ErrorDetail {
  /** The field (or template location, or variable) the detail is about, e.g. `merge_parameters.name`. */
  field: string;
  message: string;
  /** A machine-readable reason for this one detail, e.g. `required`, `too_long`. */
  code?: string;
}

/** The one error shape of every answer that is not a success (HTTP API, n8n trigger nodes). */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details: ErrorDetail[]; request_id?: string };
}

export function errorBody(code: ErrorCode, message: string, details: ErrorDetail[] = []): ErrorBody {
  return { error: { code, message, details } };
}

export interface PaperlinkErrorOptions {
  details?: ErrorDetail[];
  cause?: unknown;
}

export class PaperlinkError extends Error {
  readonly code: ErrorCode | StartupCode;
  readonly details: ErrorDetail[];

  constructor(code: ErrorCode | StartupCode, message: string, options: PaperlinkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = this.constructor.name;
    this.code = code;
    this.details = options.details ?? [];
  }
}

/** What fails a process's start (STARTUP_CODES): the CLI prints it and exits; never an answer of the API. */
export class StartupError extends PaperlinkError {
  declare readonly code: StartupCode;
  constructor(code: StartupCode, message: string, options: PaperlinkErrorOptions = {}) {
    super(code, message, options);
  }
}

/** An error the API answers with, in its catalogue's codes: any PaperlinkError but a start's. */
export function isAnswered(err: unknown): err is PaperlinkError & { readonly code: ErrorCode } {
  return err instanceof PaperlinkError && !(err instanceof StartupError);
}

/** The request was understood but breaks a rule (HTTP 422). */
export class ValidationError extends PaperlinkError {
  declare readonly code: CodeOf<422>;
  constructor(
    message: string,
    details: ErrorDetail[] = [],
    code: CodeOf<422> = 'validation_failed',
    options: PaperlinkErrorOptions = {},
  ) {
    super(code, message, { ...options, details });
  }
}

/** The request body is not well-formed (HTTP 400). */
export class MalformedRequestError extends PaperlinkError {
  declare readonly code: CodeOf<400>;
  constructor(code: CodeOf<400>, message: string, options: PaperlinkErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A credential is missing or wrong (HTTP 401). */
export class AuthenticationError extends PaperlinkError {
  declare readonly code: CodeOf<401>;
  constructor(
    message = 'A valid API key is required in the X-Service-API-Token header.',
    code: CodeOf<401> = 'unauthorized',
  ) {
    super(code, message);
  }
}

/** The credential is good but may not do this (HTTP 403), e.g. an API key without the scope a route needs. */
export class ForbiddenError extends PaperlinkError {
  declare readonly code: CodeOf<403>;
  constructor(message: string, code: CodeOf<403> = 'insufficient_scope', options: PaperlinkErrorOptions = {}) {
    super(code, message, options);
  }
}

/** The id names nothing (HTTP 404). */
export class NotFoundError extends PaperlinkError {
  declare readonly code: CodeOf<404>;
  constructor(
    /** What was not found (`template`, `template version`): a caller that asked for more than one thing can say which. */
    readonly resource: string,
    id: string,
  ) {
    super('not_found', `No ${resource} with id ${JSON.stringify(id)} exists.`);
  }
}

/** The request conflicts with the current state (HTTP 409). */
export class ConflictError extends PaperlinkError {
  declare readonly code: CodeOf<409>;
  constructor(code: CodeOf<409>, message: string, options: PaperlinkErrorOptions = {}) {
    super(code, message, options);
  }
}

/** The request is larger than what has to carry it takes (HTTP 413). */
export class TooLargeError extends PaperlinkError {
  declare readonly code: CodeOf<413>;
  constructor(message: string) {
    super('body_too_large', message);
  }
}

/** Too many attempts (HTTP 429). */
export class RateLimitError extends PaperlinkError {
  declare readonly code: CodeOf<429>;
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, code: CodeOf<429> = 'rate_limited') {
    super(code, message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** What the request needs is down for now; try again later (HTTP 503, with Retry-After). */
export class UnavailableError extends PaperlinkError {
  declare readonly code: CodeOf<503> | CodeOf<507>;
  readonly retryAfterSeconds: number;
  constructor(
    code: CodeOf<503> | CodeOf<507>,
    message: string,
    retryAfterSeconds: number,
    options: PaperlinkErrorOptions = {},
  ) {
    super(code, message, options);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * The server cannot write: its disk (the data dir's, or the database's) is full or read-only (HTTP
 * 507, with Retry-After). Nothing of the request was kept; the same request may be sent again.
 */
export class InsufficientStorageError extends UnavailableError {
  constructor(message: string, retryAfterSeconds: number, options: PaperlinkErrorOptions = {}) {
    super('insufficient_storage', message, retryAfterSeconds, options);
  }
}

/** Where in a template source something is. Lines and columns count from 1. */
export interface SourceLocation {
  line: number;
  column: number;
}

/** A template cannot be loaded: broken XML, unknown element or attribute, missing asset, too big. */
export class TemplateError extends ValidationError {
  readonly location?: SourceLocation;
  constructor(message: string, location?: SourceLocation, options: PaperlinkErrorOptions = {}) {
    const where = location ? `line ${location.line}, column ${location.column}: ` : '';
    super(
      `${where}${message}`,
      options.details ?? [{ field: location ? `template:${location.line}:${location.column}` : 'template', message }],
      'template_invalid',
      options,
    );
    this.location = location;
  }
}

/** Some variables of a template were not given values. */
export class MissingVariablesError extends ValidationError {
  readonly missing: string[];
  constructor(missing: string[]) {
    super(
      `Missing value${missing.length === 1 ? '' : 's'} for ${missing.map((m) => JSON.stringify(m)).join(', ')}. Give every variable of the template a value (an empty string is a value).`,
      missing.map((name) => ({ field: name, message: 'is required by the template', code: 'required' })),
      'missing_variables',
    );
    this.missing = missing;
  }
}

/** A value cannot be used where it is merged (e.g. a list that is not a JSON array). */
export class InvalidValueError extends ValidationError {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${JSON.stringify(variable)} ${message}`, [{ field: variable, message, code: 'invalid' }], 'invalid_value');
    this.variable = variable;
  }
}

/** No configured font can draw a character. */
export class UnsupportedCharacterError extends ValidationError {
  readonly character: string;
  readonly codePoint: number;
  /** The variable whose value holds the character; absent when it is the template's own text. */
  readonly variable?: string;
  constructor(character: string, where: { variable?: string; location?: SourceLocation; font: string }) {
    const cp = character.codePointAt(0) ?? 0;
    const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
    const place = where.variable
      ? `the value of ${JSON.stringify(where.variable)}`
      : where.location
        ? `the template text at line ${where.location.line}, column ${where.location.column}`
        : 'the template text';
    const message = `${place} contains ${JSON.stringify(character)} (${hex}), which no configured font can draw (tried ${where.font}). Remove the character or ship a font that has it with the template.`;
    super(
      message,
      [{ field: where.variable ?? 'template', message, code: 'unsupported_character' }],
      'unsupported_character',
    );
    this.character = character;
    this.codePoint = cp;
    this.variable = where.variable;
  }
}

/** The kinds of PaperlinkError the HTTP layer tells apart, by name, for carrying an error across a process boundary. */
const KINDS = {
  ValidationError,
  MalformedRequestError,
  AuthenticationError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  InsufficientStorageError,
  UnavailableError,
  PaperlinkError,
} as const;

/** A PaperlinkError as plain data (e.g. the details of a Temporal ApplicationFailure). */
export interface ErrorData {
  kind: keyof typeof KINDS;
  code: ErrorCode | StartupCode;
  message: string;
  details: ErrorDetail[];
  retryAfterSeconds?: number;
}

export function errorData(err: PaperlinkError): ErrorData {
  const kind = (Object.keys(KINDS) as (keyof typeof KINDS)[]).find((k) => err instanceof KINDS[k]) ?? 'PaperlinkError';
  const data: ErrorData = { kind, code: err.code, message: err.message, details: err.details };
  if (err instanceof RateLimitError || err instanceof UnavailableError) data.retryAfterSeconds = err.retryAfterSeconds;
  return data;
}

/** The error `errorData` describes, of the same kind, so it maps to the same HTTP answer. */
export function reviveError(data: ErrorData): PaperlinkError {
  const err = new PaperlinkError(data.code, data.message, { details: data.details });
  const kind = KINDS[data.kind] ?? PaperlinkError;
  Object.setPrototypeOf(err, kind.prototype);
  err.name = kind.name;
  if (data.retryAfterSeconds !== undefined) Object.assign(err, { retryAfterSeconds: data.retryAfterSeconds });
  return err;
}
