/**
 * Configuration from environment variables (and command-line flags, which win). This is the one
 * module besides the clock that reads process.env; everything else is handed a Config.
 */
import os from 'node:os';
import path from 'node:path';
import { StartupError } from './errors';
import { redact } from './log';
import { isEmail } from './guards';
import { POLICIES } from './flows/policies';
import type { TracingConfig } from './tracing';

/** Bounds on one render (src/templates/limits.ts applies them), with their defaults. */
export interface RenderLimits {
  /** Decoded pixels of one image (width × height). RENDER_MAX_IMAGE_PIXELS. */
  imagePixels: number;
  /** Pages of one document. RENDER_MAX_PAGES. */
  pages: number;
  /** List items expanded in one document, all lists and nesting counted. RENDER_MAX_ITEMS. */
  items: number;
  /** Characters of all merge values of one document together. RENDER_MAX_TEXT. */
  text: number;
  /** Megabytes a browser or LibreOffice may hold, all its processes counted, while it prints one document. RENDER_PROCESS_MEMORY_MB. */
  processMemoryMb: number;
}

export const DEFAULT_LIMITS: RenderLimits = {
  imagePixels: 25_000_000,
  pages: 1_000,
  items: 100_000,
  text: 2_000_000,
  processMemoryMb: 1_024,
};

/** How long the access log and events are kept (src/history.ts deletes the rest). */
export interface HistoryRetention {
  /** Days a link's access-log entry is kept. */
  accessLogDays: number;
  /** Days an event, its deliveries and their attempts are kept once delivered (or given up). */
  eventDays: number;
}

export const DEFAULT_HISTORY: HistoryRetention = { accessLogDays: 90, eventDays: 90 };

/** An S3-compatible bucket for documents (STORAGE=s3; src/storage). */
export interface S3Settings {
  bucket: string;
  /** Put before every key, e.g. `paperlink/` (default none). */
  prefix: string;
  region: string;
  /** Another endpoint than AWS's, e.g. http://127.0.0.1:8333 (SeaweedFS, MinIO, s3proxy). */
  endpoint?: string;
  /** Bucket in the path (http://host/bucket/key) rather than the host name: what most servers other than AWS need. */
  forcePathStyle: boolean;
}

/** The per-address limits of the routes anyone may call (src/http/ratelimit.ts), by group. */
export type RateGroup = 'postcards' | 'pages' | 'codes' | 'previews';

/** Requests per minute per client address (previews: per API key), by group; 0: no limit. */
export type RateLimits = Record<RateGroup, number>;

/**
 * Postcards: 50 a second from one address, sustained (a bulk sender that needs more sets it, or
 * spreads its requests); pages: 10 a second (a recipient's view is two or three requests); codes:
 * 10 a minute (one link may have 5 an hour; this stops one client asking for many links' codes);
 * previews: 2 a second per API key (an editor renders one as its user stops typing).
 */
export const DEFAULT_RATE_LIMITS: RateLimits = { postcards: 3000, pages: 600, codes: 10, previews: 120 };

/** The settings that change each limit (docs/api.md lists them). */
export const RATE_LIMIT_SETTINGS: Record<RateGroup, string> = {
  postcards: 'RATE_LIMIT_POSTCARDS',
  pages: 'RATE_LIMIT_PAGES',
  codes: 'RATE_LIMIT_CODES',
  previews: 'RATE_LIMIT_PREVIEWS',
};

/**
 * Render threads unless RENDER_THREADS says otherwise: one per core but the one the HTTP thread
 * (requests, the database, storage) needs. Measured on 2 cores (BENCHMARKS.md): 1 render thread
 * generates more documents per second than 2, which only compete with the HTTP thread.
 */
/** Whether the service's cookies are marked Secure: it is served over https (PUBLIC_URL). */
export function secureCookies(config: Pick<Config, 'publicUrl'>): boolean {
  return config.publicUrl.startsWith('https://');
}

export function defaultRenderThreads(): number {
  return Math.max(1, os.availableParallelism() - 1);
}

/** Webhook subscriptions unless WEBHOOK_MAX_SUBSCRIPTIONS says otherwise (Stripe keeps 16 endpoints an account). */
export const DEFAULT_MAX_SUBSCRIPTIONS = 20;

/** How long one render may take unless RENDER_TIMEOUT_MS says otherwise. */
export const DEFAULT_RENDER_TIMEOUT_MS = 30_000;
/** Page images kept drawn in each process unless PAGE_IMAGE_CACHE_MB says otherwise (src/documents/images.ts): about 150 pages. */
export const DEFAULT_PAGE_IMAGE_CACHE_MB = 64;

/** How much heap one render thread may use unless RENDER_MEMORY_MB says otherwise. */
export const DEFAULT_RENDER_MEMORY_MB = 256;

export interface Config {
  /** TCP port of the HTTP API. */
  port: number;
  /** Interface to listen on. */
  host: string;
  /** Where the SQLite database, stored documents and outgoing e-mails live. */
  dataDir: string;
  /** postgres://… to use PostgreSQL; otherwise SQLite in the data dir. */
  databaseUrl?: string;
  /** Where document bytes go: files in the data dir, or the database or an S3-compatible bucket (so several machines share them). */
  storage: 'filesystem' | 'database' | 's3';
  /** The bucket, with STORAGE=s3 (S3_BUCKET, S3_PREFIX, S3_REGION, S3_ENDPOINT, S3_FORCE_PATH_STYLE). */
  s3?: S3Settings;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** The address people use to reach this service; links in e-mails and the printed examples use it. */
  publicUrl: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json`: a JSON line per message (for log collectors); `pretty`: short readable lines (a person at a terminal). */
  logFormat: 'json' | 'pretty';
  /** METRICS_ADDRESS: where `GET /metrics` answers (src/metrics.ts), apart from the API; unset: nowhere. */
  metrics?: { host: string; port: number };
  /** OpenTelemetry tracing (src/tracing.ts): on when OTEL_TRACES_EXPORTER or an OTLP endpoint says so; unset: off. */
  tracing?: TracingConfig;
  /** smtp(s)://user:pass@host:port to send e-mail; unset: messages are written to DATA_DIR/outbox as .eml files. */
  smtpUrl?: string;
  /** The sender of e-mails, e.g. `Acme Documents <docs@acme.example>`. */
  mailFrom: string;
  /** Where postcard requests are posted (no version prefix, spec §9). */
  postcardPath: string;
  /** Deliver webhooks to loopback, link-local and private addresses too (off by default). */
  webhookAllowPrivate: boolean;
  /** LINK_TOKEN_KEYS: the keys Magic Link URLs are derived with; unset: the file DATA_DIR/secrets/link-token-keys. */
  linkTokenKeys?: string;
  /** How long one webhook delivery attempt may take. */
  webhookTimeoutMs: number;
  /** How long a webhook delivery is retried before it is marked failed. */
  webhookRetryHours: number;
  /** How long the history that grows with use is kept: the access log, events and their deliveries (src/history.ts). */
  history: HistoryRetention;
  /** Webhook subscriptions there may be at once (WEBHOOK_MAX_SUBSCRIPTIONS). */
  webhookMaxSubscriptions: number;
  /** Render threads (RENDER_THREADS); 0 renders on the HTTP thread. Default: the cores less one. */
  renderThreads: number;
  /** Longest one render may take (RENDER_TIMEOUT_MS) before it is stopped. */
  renderTimeoutMs: number;
  /** How long a stopping server waits for the requests it has read before it closes their connections (SHUTDOWN_TIMEOUT_MS). */
  shutdownTimeoutMs: number;
  /** Whether `serve` tries a small document of each template format at start and says which work (STARTUP_CHECK, default true). */
  startupCheck: boolean;
  /** Heap one render thread may use (RENDER_MEMORY_MB); a render that needs more is stopped. */
  renderMemoryMb: number;
  /** Page images each process keeps drawn (PAGE_IMAGE_CACHE_MB; 0 keeps none), src/documents/images.ts. */
  pageImageCacheMb: number;
  /** Work limits of one render (RENDER_MAX_IMAGE_PIXELS, RENDER_MAX_PAGES, RENDER_MAX_ITEMS, RENDER_MAX_TEXT). */
  renderLimits: RenderLimits;
  /** What runs the flows: this process (`embedded`) or Temporal workers (`temporal`). */
  engine: 'embedded' | 'temporal';
  temporal: TemporalConfig;
  /** Sign in with OpenID Connect providers on loopback, link-local and private addresses too (off by default). */
  oidcAllowPrivate: boolean;
  /** How long one request to an OpenID Connect provider may take (OIDC_TIMEOUT_MS). */
  oidcTimeoutMs: number;
  /** How long a client may take to send a whole request, headers and body (REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /** Requests per minute per client address on the routes without an API key (RATE_LIMIT_*); 0: none. */
  rateLimits: RateLimits;
  /** Which proxies' X-Forwarded-For to believe for the client's address (TRUST_PROXY): false, true, a hop count, or addresses/CIDRs. */
  trustProxy: boolean | number | string;
}

export interface TemporalConfig {
  /** host:port of the Temporal frontend. */
  address: string;
  namespace: string;
  taskQueue: string;
  /** Temporal Cloud API key (sent as a bearer token; implies TLS). */
  apiKey?: string;
  /** TLS to the frontend: on with TEMPORAL_TLS=true, a client certificate, or an API key. */
  tls: boolean;
  /** Paths of a client certificate and key (mTLS), and of a CA bundle for a private CA. */
  tlsCertPath?: string;
  tlsKeyPath?: string;
  tlsCaPath?: string;
  /**
   * Worker Versioning (TEMPORAL_WORKER_VERSIONING=true, where the server has Worker Deployments;
   * default off, so that a worker of one's own beside ours gets its share of the task queue):
   * `paperlink worker` registers as build `buildId` (TEMPORAL_BUILD_ID, default the package
   * version) of deployment `deploymentName` (TEMPORAL_DEPLOYMENT_NAME, default paperlink).
   */
  versioning: boolean;
  deploymentName: string;
  buildId?: string;
  /**
   * TEMPORAL_PAYLOAD_KEYS (`k2:<base64>,k1:<base64>`): Paperlink's payloads are encrypted in
   * Temporal's history with the first, and read with any (workflows/codec.ts); unset: in clear.
   */
  payloadKeys?: string;
  /**
   * TEMPORAL_SEARCH_ATTRIBUTES=true: each render sets PaperlinkRenderId, PaperlinkTemplateId and
   * PaperlinkDocumentId (Keyword search attributes the namespace must have; checked at start).
   */
  searchAttributes: boolean;
}

/** `Acme Docs <docs@acme.example>` (or `docs@acme.example`) as a name and an address. */
export function senderOf(mailFrom: string): { name: string | undefined; address: string } {
  const m = /^(?:"?([^"<]*)"?\s*)?<([^<>]*)>$/.exec(mailFrom.trim());
  return m ? { name: m[1]?.trim() || undefined, address: m[2].trim() } : { name: undefined, address: mailFrom.trim() };
}

export class ConfigError extends StartupError {
  constructor(message: string) {
    super('invalid_configuration', message);
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Parses "10485760", "512kb", "10mb", "1gb". */
export function parseBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(m[2] ?? 'b').toLowerCase() as 'b'];
  return Math.floor(Number(m[1]) * unit);
}

export type Env = Record<string, string | undefined>;

/** METRICS_ADDRESS: "port", ":port" or "host:port" ("[::1]:port" for IPv6); the host is 127.0.0.1 when not given. */
function metricsAddress(address: string): { host: string; port: number } {
  const m = /^(?:(\[[^\]]+\]|[^:]*):)?(\d{1,5})$/.exec(address.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535)
    throw new ConfigError(
      `METRICS_ADDRESS must be a port or host:port (e.g. 9464, or 0.0.0.0:9464 to be scraped from other machines), not ${JSON.stringify(address)}.`,
    );
  return { host: m[1] ? m[1].replace(/^\[|\]$/g, '') : '127.0.0.1', port };
}

/**
 * The standard OpenTelemetry settings, read as the SDKs read them, but off unless asked for:
 * OTEL_TRACES_EXPORTER (`otlp`, `console`, `none`; a list of one, any case), or else an OTLP
 * endpoint set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
 * OTEL_SDK_DISABLED=true turns it off. The endpoint is checked here and given to the exporter as
 * checked, so the greeting names where the spans go.
 */
function tracingOf(env: Env): TracingConfig | undefined {
  const lower = (v: string | undefined) => v?.trim().toLowerCase() || undefined;
  if (lower(env.OTEL_SDK_DISABLED) === 'true') return undefined;
  const named = (lower(env.OTEL_TRACES_EXPORTER) ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const exporter = named.length ? named : base || traces ? ['otlp'] : ['none'];
  if (exporter.length === 1 && exporter[0] === 'none') return undefined;
  if (exporter.length !== 1 || (exporter[0] !== 'otlp' && exporter[0] !== 'console'))
    throw new ConfigError(
      `OTEL_TRACES_EXPORTER must be one of "otlp", "console" or "none" (Paperlink sends to one), not ${JSON.stringify(env.OTEL_TRACES_EXPORTER)}.`,
    );
  if (exporter[0] === 'console') return { exporter: 'console', destination: 'standard output' };
  const protocol = lower(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL);
  if (protocol && protocol !== 'http/json' && protocol !== 'http/protobuf')
    throw new ConfigError(
      `Paperlink sends traces over OTLP/HTTP, not ${JSON.stringify(protocol)}: set OTEL_EXPORTER_OTLP_PROTOCOL=http/json and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (4318 by default).`,
    );
  const endpoint = traces || `${(base || 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    // said below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new ConfigError(
      `${traces ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'} must be an http:// or https:// URL of the collector's OTLP/HTTP receiver (e.g. http://collector:4318), not ${JSON.stringify(traces || base)}.`,
    );
  return { exporter: 'otlp', endpoint, destination: redact(endpoint) };
}

/** A setting that is true or false (default false). */
function flagOf(env: Env, name: string): boolean {
  const v = env[name] ?? 'false';
  if (!['true', 'false'].includes(v)) throw new ConfigError(`${name} must be true or false, not ${JSON.stringify(v)}.`);
  return v === 'true';
}

/** A reader of whole number settings from min to max, in `unit`: the override given, or the variable `name`, or `fallback`. */
function wholeIn(env: Env) {
  return (
    name: string,
    given: number | undefined,
    fallback: number,
    min: number,
    max: number,
    unit = 'a whole number',
  ) => {
    const v = given ?? Number(env[name] ?? fallback);
    if (!Number.isInteger(v) || v < min || v > max)
      throw new ConfigError(`${name} must be ${unit} from ${min} to ${max}, not ${JSON.stringify(env[name])}.`);
    return v;
  };
}

/** What bounds delivering webhooks: private addresses, how many subscriptions, each attempt's time, how long to retry. */
function webhookSettings(
  env: Env,
  overrides: Partial<Config>,
): Pick<Config, 'webhookAllowPrivate' | 'webhookMaxSubscriptions' | 'webhookTimeoutMs' | 'webhookRetryHours'> {
  const whole = wholeIn(env);
  const webhookAllowPrivate = overrides.webhookAllowPrivate ?? flagOf(env, 'WEBHOOK_ALLOW_PRIVATE');
  const webhookMaxSubscriptions = whole(
    'WEBHOOK_MAX_SUBSCRIPTIONS',
    overrides.webhookMaxSubscriptions,
    DEFAULT_MAX_SUBSCRIPTIONS,
    1,
    10_000,
  );
  const webhookTimeoutMs = whole(
    'WEBHOOK_TIMEOUT_MS',
    overrides.webhookTimeoutMs,
    10_000,
    100,
    120_000,
    'milliseconds',
  );
  const webhookRetryHours =
    overrides.webhookRetryHours ?? Number(env.WEBHOOK_RETRY_HOURS ?? POLICIES.webhook_delivery.forMs / 3_600_000);
  if (!(webhookRetryHours > 0 && webhookRetryHours <= 24 * 30))
    throw new ConfigError(
      `WEBHOOK_RETRY_HOURS must be hours from more than 0 to 720, not ${JSON.stringify(env.WEBHOOK_RETRY_HOURS)}.`,
    );
  return { webhookAllowPrivate, webhookMaxSubscriptions, webhookTimeoutMs, webhookRetryHours };
}

/** What bounds rendering: threads, each render's time and memory, and what a template may make. */
function renderSettings(
  env: Env,
  overrides: Partial<Config>,
): Pick<Config, 'renderThreads' | 'renderTimeoutMs' | 'renderMemoryMb' | 'pageImageCacheMb' | 'renderLimits'> {
  const whole = wholeIn(env);
  const renderThreads = whole('RENDER_THREADS', overrides.renderThreads, defaultRenderThreads(), 0, 256);
  const renderTimeoutMs = whole(
    'RENDER_TIMEOUT_MS',
    overrides.renderTimeoutMs,
    DEFAULT_RENDER_TIMEOUT_MS,
    100,
    600_000,
    'milliseconds',
  );
  const renderMemoryMb = whole(
    'RENDER_MEMORY_MB',
    overrides.renderMemoryMb,
    DEFAULT_RENDER_MEMORY_MB,
    64,
    16_384,
    'megabytes',
  );
  const pageImageCacheMb = whole(
    'PAGE_IMAGE_CACHE_MB',
    overrides.pageImageCacheMb,
    DEFAULT_PAGE_IMAGE_CACHE_MB,
    0,
    65_536,
    'megabytes',
  );
  const limit = (name: string, fallback: number) => {
    const v = Number(env[name] ?? fallback);
    if (!Number.isInteger(v) || v < 1)
      throw new ConfigError(`${name} must be a whole number of at least 1, not ${JSON.stringify(env[name])}.`);
    return v;
  };
  const renderLimits: RenderLimits = overrides.renderLimits ?? {
    imagePixels: limit('RENDER_MAX_IMAGE_PIXELS', DEFAULT_LIMITS.imagePixels),
    pages: limit('RENDER_MAX_PAGES', DEFAULT_LIMITS.pages),
    items: limit('RENDER_MAX_ITEMS', DEFAULT_LIMITS.items),
    text: limit('RENDER_MAX_TEXT', DEFAULT_LIMITS.text),
    processMemoryMb: limit('RENDER_PROCESS_MEMORY_MB', DEFAULT_LIMITS.processMemoryMb),
  };
  return { renderThreads, renderTimeoutMs, renderMemoryMb, pageImageCacheMb, renderLimits };
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`PORT must be a port number from 0 to 65535, not ${JSON.stringify(env.PORT)}.`);
  const host = overrides.host ?? env.HOST ?? '127.0.0.1';
  const metrics = overrides.metrics ?? (env.METRICS_ADDRESS ? metricsAddress(env.METRICS_ADDRESS) : undefined);
  const tracing = 'tracing' in overrides ? overrides.tracing : tracingOf(env);
  const dataDir = path.resolve(overrides.dataDir ?? env.DATA_DIR ?? 'data');
  const databaseUrl = overrides.databaseUrl ?? (env.DATABASE_URL || undefined);
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(
      'DATABASE_URL must be a PostgreSQL URL like postgres://user:password@host:5432/paperlink. Leave it unset to use SQLite in the data dir.',
    );
  }
  const storage = overrides.storage ?? ((env.STORAGE ?? 'filesystem') as Config['storage']);
  if (storage !== 'filesystem' && storage !== 'database' && storage !== 's3')
    throw new ConfigError(`STORAGE must be "filesystem", "database" or "s3", not ${JSON.stringify(storage)}.`);
  const s3 = overrides.s3 ?? (storage === 's3' ? s3Config(env) : undefined);
  const bodyLimit = overrides.bodyLimit ?? parseBytes(env.BODY_LIMIT ?? '10mb');
  if (bodyLimit === undefined || bodyLimit < 1024)
    throw new ConfigError(
      `BODY_LIMIT must be a size like 10mb or 1048576 (at least 1kb), not ${JSON.stringify(env.BODY_LIMIT)}.`,
    );
  const logLevel = overrides.logLevel ?? ((env.LOG_LEVEL ?? 'info') as Config['logLevel']);
  if (!LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LEVELS.join(', ')}.`);
  // readable lines for a person at a terminal, JSON lines for everything else (a log collector, a file)
  const logFormat =
    overrides.logFormat ?? ((env.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json')) as Config['logFormat']);
  if (logFormat !== 'json' && logFormat !== 'pretty')
    throw new ConfigError(`LOG_FORMAT must be "json" or "pretty", not ${JSON.stringify(logFormat)}.`);
  const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  const publicUrl = (overrides.publicUrl ?? env.PUBLIC_URL ?? `http://${shownHost}:${port}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(publicUrl))
    throw new ConfigError(
      `PUBLIC_URL must be an http(s) URL like https://docs.example.com, not ${JSON.stringify(publicUrl)}.`,
    );
  const smtpUrl = overrides.smtpUrl ?? (env.SMTP_URL || undefined);
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl))
    throw new ConfigError(
      'SMTP_URL must look like smtp://user:password@mail.example.com:587 (or smtps:// for TLS on connect). Leave it unset to write e-mails to DATA_DIR/outbox.',
    );
  const mailFrom = overrides.mailFrom ?? env.MAIL_FROM ?? 'Paperlink <paperlink@localhost.localdomain>';
  // the default sender of the Magic Link app (GET /v1/apps/magic_link): an address the app itself would take
  if (!isEmail(senderOf(mailFrom).address))
    throw new ConfigError(
      `MAIL_FROM must be an address like "Acme Docs <docs@acme.example>" or docs@acme.example, not ${JSON.stringify(mailFrom)}.`,
    );
  const postcardPath = overrides.postcardPath ?? env.POSTCARD_PATH ?? '/postcards';
  if (
    !/^\/[A-Za-z0-9._~\-/]*$/.test(postcardPath) ||
    postcardPath.startsWith('/v1/') ||
    postcardPath.startsWith('/l/')
  ) {
    throw new ConfigError(
      `POSTCARD_PATH must be a path like /postcards (not under /v1/ or /l/), not ${JSON.stringify(postcardPath)}.`,
    );
  }
  const engine = overrides.engine ?? ((env.ENGINE ?? 'embedded') as Config['engine']);
  if (engine !== 'embedded' && engine !== 'temporal')
    throw new ConfigError(`ENGINE must be "embedded" or "temporal", not ${JSON.stringify(engine)}.`);
  const temporal = overrides.temporal ?? temporalConfig(env);
  const flag = (name: string) => flagOf(env, name);
  const whole = wholeIn(env);
  const oidcAllowPrivate = overrides.oidcAllowPrivate ?? flag('OIDC_ALLOW_PRIVATE');
  const startupCheck = overrides.startupCheck ?? (env.STARTUP_CHECK ? flag('STARTUP_CHECK') : true);
  const oidcTimeoutMs = whole('OIDC_TIMEOUT_MS', overrides.oidcTimeoutMs, 5_000, 100, 60_000, 'milliseconds');
  const requestTimeoutMs = whole(
    'REQUEST_TIMEOUT_MS',
    overrides.requestTimeoutMs,
    60_000,
    100,
    3_600_000,
    'milliseconds',
  );
  const rateLimit = (group: keyof RateLimits) =>
    whole(RATE_LIMIT_SETTINGS[group], overrides.rateLimits?.[group], DEFAULT_RATE_LIMITS[group], 0, 1_000_000);
  const rateLimits = {
    postcards: rateLimit('postcards'),
    pages: rateLimit('pages'),
    codes: rateLimit('codes'),
    previews: rateLimit('previews'),
  };
  const trustProxy = overrides.trustProxy ?? parseTrustProxy(env.TRUST_PROXY);
  const linkTokenKeys = overrides.linkTokenKeys ?? (env.LINK_TOKEN_KEYS?.trim() || undefined);
  const history: HistoryRetention = {
    accessLogDays: whole(
      'ACCESS_LOG_RETENTION_DAYS',
      overrides.history?.accessLogDays,
      DEFAULT_HISTORY.accessLogDays,
      1,
      36_500,
      'days',
    ),
    eventDays: whole(
      'EVENT_RETENTION_DAYS',
      overrides.history?.eventDays,
      DEFAULT_HISTORY.eventDays,
      1,
      36_500,
      'days',
    ),
  };
  const shutdownTimeoutMs = whole(
    'SHUTDOWN_TIMEOUT_MS',
    overrides.shutdownTimeoutMs,
    30_000,
    0,
    3_600_000,
    'milliseconds',
  );
  return {
    port,
    host,
    metrics,
    tracing,
    dataDir,
    databaseUrl,
    storage,
    s3,
    bodyLimit,
    publicUrl,
    logLevel,
    logFormat,
    smtpUrl,
    mailFrom,
    postcardPath,
    linkTokenKeys,
    history,
    ...webhookSettings(env, overrides),
    ...renderSettings(env, overrides),
    engine,
    temporal,
    shutdownTimeoutMs,
    startupCheck,
    oidcAllowPrivate,
    oidcTimeoutMs,
    requestTimeoutMs,
    rateLimits,
    trustProxy,
  };
}

/** STORAGE=s3: the bucket is required; path-style addressing is the default with an endpoint of one's own (what servers other than AWS need). */
function s3Config(env: NodeJS.ProcessEnv): S3Settings {
  const bucket = env.S3_BUCKET ?? '';
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new ConfigError(
      `STORAGE=s3 needs S3_BUCKET, the name of an existing bucket (3 to 63 lower-case letters, digits, dots and hyphens), not ${JSON.stringify(env.S3_BUCKET ?? '')}.`,
    );
  const endpoint = env.S3_ENDPOINT || undefined;
  if (endpoint && !/^https?:\/\/[^/\s]+\/?$/.test(endpoint))
    throw new ConfigError(
      `S3_ENDPOINT must be a URL like https://s3.example.com or http://127.0.0.1:8333, not ${JSON.stringify(endpoint)}.`,
    );
  const prefix = env.S3_PREFIX ?? '';
  if (!/^[A-Za-z0-9_./-]{0,200}$/.test(prefix))
    throw new ConfigError(
      `S3_PREFIX must be letters, digits and _ . / - (e.g. paperlink/), not ${JSON.stringify(prefix)}.`,
    );
  const pathStyle = env.S3_FORCE_PATH_STYLE ?? (endpoint ? 'true' : 'false');
  if (pathStyle !== 'true' && pathStyle !== 'false')
    throw new ConfigError(`S3_FORCE_PATH_STYLE must be true or false, not ${JSON.stringify(pathStyle)}.`);
  return {
    bucket,
    prefix,
    region: env.S3_REGION || env.AWS_REGION || 'us-east-1',
    endpoint,
    forcePathStyle: pathStyle === 'true',
  };
}

/** TRUST_PROXY: unset or false; true (every proxy); a number of proxy hops; or proxy addresses/CIDRs, comma-separated. */
function parseTrustProxy(v: string | undefined): boolean | number | string {
  const text = (v ?? '').trim();
  if (text === '' || text === 'false') return false;
  if (text === 'true') return true;
  if (/^\d+$/.test(text)) return Number(text);
  if (text.split(',').every((a) => /^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(a.trim()))) return text;
  throw new ConfigError(
    `TRUST_PROXY must be true, false, a number of proxy hops, or proxy addresses like 10.0.0.0/8,192.168.1.5, not ${JSON.stringify(v)}.`,
  );
}

function temporalConfig(env: Env): TemporalConfig {
  const tlsCertPath = env.TEMPORAL_TLS_CERT || undefined;
  const tlsKeyPath = env.TEMPORAL_TLS_KEY || undefined;
  if (Boolean(tlsCertPath) !== Boolean(tlsKeyPath))
    throw new ConfigError(
      'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both paths (a client certificate and its key) or neither.',
    );
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const tlsFlag = env.TEMPORAL_TLS;
  if (tlsFlag !== undefined && tlsFlag !== '' && !['true', 'false'].includes(tlsFlag))
    throw new ConfigError(`TEMPORAL_TLS must be true or false, not ${JSON.stringify(tlsFlag)}.`);
  const taskQueue = env.TEMPORAL_TASK_QUEUE || 'paperlink';
  const versioning = env.TEMPORAL_WORKER_VERSIONING || 'false';
  if (!['true', 'false'].includes(versioning))
    throw new ConfigError(`TEMPORAL_WORKER_VERSIONING must be true or false, not ${JSON.stringify(versioning)}.`);
  const searchAttributes = env.TEMPORAL_SEARCH_ATTRIBUTES || 'false';
  if (!['true', 'false'].includes(searchAttributes))
    throw new ConfigError(`TEMPORAL_SEARCH_ATTRIBUTES must be true or false, not ${JSON.stringify(searchAttributes)}.`);
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue,
    apiKey,
    tls: tlsFlag === 'true' || Boolean(tlsCertPath) || (Boolean(apiKey) && tlsFlag !== 'false'),
    tlsCertPath,
    tlsKeyPath,
    tlsCaPath: env.TEMPORAL_TLS_CA || undefined,
    versioning: versioning === 'true',
    deploymentName: env.TEMPORAL_DEPLOYMENT_NAME || 'paperlink',
    buildId: env.TEMPORAL_BUILD_ID || undefined,
    payloadKeys: env.TEMPORAL_PAYLOAD_KEYS?.trim() || undefined,
    searchAttributes: searchAttributes === 'true',
  };
}

/** Under Temporal the API and every worker share one database: it must be PostgreSQL. */
export function requirePostgres(config: Config, what: string): void {
  if (!config.databaseUrl) {
    throw new ConfigError(
      `${what} needs PostgreSQL: the API and every Temporal worker share one database, and SQLite is a file on one machine. Set DATABASE_URL=postgres://user:password@host:5432/paperlink (and STORAGE=s3 or STORAGE=database, unless every machine mounts the same DATA_DIR).`,
    );
  }
}
