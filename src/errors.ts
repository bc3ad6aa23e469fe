/**
 * One base error class for everything Paperlink throws on purpose. Each error has a literal
 * `code` (the same string the HTTP API returns in `error.code`), a message that says what to do,
 * and optional `details`, one entry per offending field.
 *
 * The class says what kind of failure it is; the HTTP layer maps the class to a status code.
 */

export interface ErrorDetail {
  /** The field (or template location, or variable) the detail is about, e.g. `merge_parameters.name`. */
  field: string;
  message: string;
  /** A machine-readable reason for this one detail, e.g. `required`, `too_long`. */
  code?: string;
}

/** The one error shape of every answer that is not a success (HTTP API, n8n trigger nodes). */
export interface ErrorBody {
  error: { code: string; message: string; details: ErrorDetail[]; request_id?: string };
}

export function errorBody(code: string, message: string, details: ErrorDetail[] = []): ErrorBody {
  return { error: { code, message, details } };
}

export interface PaperlinkErrorOptions {
  details?: ErrorDetail[];
  cause?: unknown;
}

export class PaperlinkError extends Error {
  readonly code: string;
  readonly details: ErrorDetail[];

  constructor(code: string, message: string, options: PaperlinkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = this.constructor.name;
    this.code = code;
    this.details = options.details ?? [];
  }
}

/** The request was understood but breaks a rule (HTTP 422). */
export class ValidationError extends PaperlinkError {
  constructor(
    message: string,
    details: ErrorDetail[] = [],
    code = 'validation_failed',
    options: PaperlinkErrorOptions = {},
  ) {
    super(code, message, { ...options, details });
  }
}

/** The request body is not well-formed (HTTP 400). */
export class MalformedRequestError extends PaperlinkError {}

/** A credential is missing or wrong (HTTP 401). */
export class AuthenticationError extends PaperlinkError {
  constructor(message = 'A valid API key is required in the X-Service-API-Token header.', code = 'unauthorized') {
    super(code, message);
  }
}

/** The credential is good but may not do this (HTTP 403), e.g. an API key without the scope a route needs. */
export class ForbiddenError extends PaperlinkError {
  constructor(message: string, code = 'forbidden', options: PaperlinkErrorOptions = {}) {
    super(code, message, options);
  }
}

/** The id names nothing (HTTP 404). */
export class NotFoundError extends PaperlinkError {
  constructor(resource: string, id: string) {
    super('not_found', `No ${resource} with id ${JSON.stringify(id)} exists.`);
  }
}

/** The request conflicts with the current state (HTTP 409). */
export class ConflictError extends PaperlinkError {}

/** The request is larger than what has to carry it takes (HTTP 413). */
export class TooLargeError extends PaperlinkError {
  constructor(message: string) {
    super('body_too_large', message);
  }
}

/** Too many attempts (HTTP 429). */
export class RateLimitError extends PaperlinkError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, code = 'rate_limited') {
    super(code, message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** What the request needs is down for now; try again later (HTTP 503, with Retry-After). */
export class UnavailableError extends PaperlinkError {
  readonly retryAfterSeconds: number;
  constructor(code: string, message: string, retryAfterSeconds: number, options: PaperlinkErrorOptions = {}) {
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
  code: string;
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
