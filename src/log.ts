/**
 * What `serve` and `paperlink worker` say themselves, beside the request log: the greeting, a
 * failure in the background, the Temporal SDK's messages. One format per process: under
 * LOG_FORMAT=json each message is one JSON object on one line, in the shape of the request log
 * beside it (pino's: `level` as a number, `time` in ms, `pid`, `hostname`, then the fields, then
 * `msg`); under `pretty`, the text as it reads. A failure carries its error as `err`, with its
 * whole cause chain (`err.cause`, recursively) and the ids it concerns as fields of their own.
 * The password of a URL is masked in every message and error.
 */
import os from 'node:os';
import { systemClock, type Clock } from './clock';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** pino's numbers, so one collector reads both logs of a process alike. */
export const LEVELS: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** What a message carries besides its text: `err` (any thrown value), `level`, and ids (`link_id: 'ml_…'`). */
export interface LogFields {
  err?: unknown;
  /** Default `info`; `warn` when there is an `err` (background work that failed is retried). */
  level?: LogLevel;
  [field: string]: unknown;
}

/** Says one message. The text may hold several lines: under json each is an object of its own (the fields go with the first). */
export type Log = (text: string, fields?: LogFields) => void;

/** An error as a log carries it: its class, code, message, stack and everything it was caused by. */
export interface ErrorFields {
  type: string;
  message: string;
  code?: string | number;
  /** A PaperlinkError's details (field and message each). */
  details?: unknown;
  stack?: string;
  /** An AggregateError's errors. */
  errors?: ErrorFields[];
  cause?: ErrorFields;
}

/**
 * Masks the password of a URL (a DATABASE_URL or SMTP_URL an error repeats). Keys, tokens and
 * one-time codes are never put in a message or an error in the first place.
 */
export function redact(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s@/]*@/gi, '$1:***@');
}

/** `err` with its cause chain, for a log line; at most `depth` causes deep (a cycle ends there too). */
export function errorFields(err: unknown, depth = 8): ErrorFields {
  if (!(err instanceof Error))
    return {
      type: typeof err,
      message: redact(typeof err === 'object' && err !== null ? safeJson(err) : String(err)),
    };
  const o = err as Error & { code?: unknown; details?: unknown; errors?: unknown };
  const out: ErrorFields = {
    type: err.name && err.name !== 'Error' ? err.name : err.constructor.name,
    message: redact(err.message),
  };
  if (typeof o.code === 'string' || typeof o.code === 'number') out.code = o.code;
  // a PaperlinkError's details say which field, never a value; other errors' details (an
  // ApplicationFailure's payloads, gRPC metadata) may hold personal data and are left out
  if (Array.isArray(o.details) && o.details.every((d) => d && typeof d === 'object' && 'field' in d))
    out.details = (o.details as { field: string; message: string; code?: string }[]).map((d) => ({
      field: d.field,
      message: redact(String(d.message)),
      ...(d.code ? { code: d.code } : {}),
    }));
  if (err.stack) out.stack = redact(err.stack);
  if (depth > 0 && Array.isArray(o.errors)) out.errors = o.errors.map((e) => errorFields(e, depth - 1));
  if (depth > 0 && err.cause !== undefined && err.cause !== err) out.cause = errorFields(err.cause, depth - 1);
  return out;
}

/** The messages of `err` and of each of its causes, outermost first. */
export function causeChain(err: unknown): string[] {
  const chain: string[] = [];
  let e: unknown = err;
  for (let i = 0; e !== undefined && i < 9; i++) {
    chain.push(errorFields(e, 0).message);
    if (!(e instanceof Error)) break;
    e = e.cause;
  }
  return chain;
}

/**
 * The process's Log in `format`, written by `write` (standard output for serve, standard error for
 * the worker). Every message is written, whatever LOG_LEVEL says (it governs the request log and
 * the Temporal SDK's): these are few, and a person starting the process needs the greeting.
 */
export function createLog(format: 'json' | 'pretty', write: (text: string) => void, clock: Clock = systemClock): Log {
  if (format === 'pretty')
    return (text, fields = {}) => {
      // the causes the text does not say already, one a line under it
      const causes = fields.err === undefined ? [] : causeChain(fields.err).filter((c) => !text.includes(c));
      write(`${redact(text.replace(/\n+$/, ''))}${causes.map((c) => `\n  cause: ${c}`).join('')}\n`);
    };
  const hostname = os.hostname();
  return (text, fields = {}) => {
    const { err, level, ...rest } = fields;
    const ids: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rest)) ids[k] = v instanceof Error ? errorFields(v) : v;
    const lines = text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const first = {
      ...ids,
      ...(err === undefined ? {} : { err: errorFields(err) }),
    };
    const number = LEVELS[level ?? (err === undefined ? 'info' : 'warn')];
    write(
      lines
        .map(
          (msg, i) =>
            `${safeJson({ level: number, time: clock.now().getTime(), pid: process.pid, hostname, ...(i === 0 ? first : {}), msg: redact(msg) })}\n`,
        )
        .join(''),
    );
  };
}

/**
 * JSON.stringify that never throws: a value seen before on the way down (a cycle: the SDK's metadata
 * can hold a timer) is written as "[circular]", a bigint as its digits, an Error with its causes.
 */
export function safeJson(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, function (this: unknown, key: string, v: unknown) {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error && key !== '') return errorFields(v);
    if (v && typeof v === 'object') {
      if (seen.has(v)) return '[circular]';
      seen.add(v);
    }
    return v;
  });
}

/** LOG_FORMAT as loadConfig reads it, without failing: a process that cannot load its settings says so in its format. */
export function logFormatOf(env: NodeJS.ProcessEnv, isTTY: boolean | undefined): 'json' | 'pretty' {
  return env.LOG_FORMAT === 'pretty' || (env.LOG_FORMAT === undefined && isTTY) ? 'pretty' : 'json';
}

/** The ids a flow's name holds (`link-ml_…`, `postcard-pc_…`, `generate-rnd_…`), as fields an operator searches by. */
export function flowIds(id: string): Record<string, string> {
  const m = /^(link|postcard|generate)-(.+)$/.exec(id);
  if (!m) return { flow: id };
  return { flow: id, [m[1] === 'generate' ? 'render_id' : `${m[1]}_id`]: m[2] };
}
