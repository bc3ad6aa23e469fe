/**
 * What a process counts for its operators, in Prometheus' text format (prom-client): served on
 * METRICS_ADDRESS (`GET /metrics`, apart from the API's port) by `serve` (the primary of `serve
 * --processes N` answers for all its processes) and by `paperlink worker`. Counters and histograms
 * are counted where the work happens; gauges are read when scraped from what this process runs
 * (its render pools and its job runner, watched here). docs/metrics.md lists every name and label.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dependencyFailures } from './outage';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
const registers = [registry];

export const httpRequests = new Counter({
  name: 'paperlink_http_requests_total',
  help: 'HTTP requests answered, by method, route (as declared, e.g. /v1/documents/:id; "unmatched" for none) and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers,
});
export const httpDuration = new Histogram({
  name: 'paperlink_http_request_duration_seconds',
  help: 'Time from a request read to its answer sent, by method and route.',
  labelNames: ['method', 'route'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});
export const renders = new Counter({
  name: 'paperlink_renders_total',
  help: 'Templates rendered, by format (xml, html, docx, pdf) and outcome ("ok", or the error code the API answers).',
  labelNames: ['format', 'outcome'] as const,
  registers,
});
export const renderDuration = new Histogram({
  name: 'paperlink_render_duration_seconds',
  help: 'Time one render took, waiting for a render thread included, by format.',
  labelNames: ['format'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers,
});
export const pageImages = new Counter({
  name: 'paperlink_page_images_total',
  help: 'Page images served (src/documents/images.ts), by how: "drawn" (the page drawn for this ask), "stamped" (a viewer\'s watermark laid over a page drawn before), "kept" (an image kept, or being made for another ask).',
  labelNames: ['how'] as const,
  registers,
});
export const rendererStarts = new Counter({
  name: 'paperlink_renderer_starts_total',
  help: 'Chromium and LibreOffice processes started (the first of each, then one after each that was stopped or failed), by renderer.',
  labelNames: ['renderer'] as const,
  registers,
});
export const emails = new Counter({
  name: 'paperlink_emails_total',
  help: 'E-mails handed to the mail server (or written to the outbox), by outcome (sent, failed).',
  labelNames: ['outcome'] as const,
  registers,
});
export const linkViews = new Counter({
  name: 'paperlink_link_views_total',
  help: "Magic Link views counted (each one counts toward the link's view limit).",
  registers,
});
export const linkRefusals = new Counter({
  name: 'paperlink_link_refusals_total',
  help: 'Magic Link accesses refused, by reason (the outcome in the link access log).',
  labelNames: ['reason'] as const,
  registers,
});
export const webhookAttempts = new Counter({
  name: 'paperlink_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome: delivered, retrying (failed, tried again later), gave_up (failed for the last time).',
  labelNames: ['outcome'] as const,
  registers,
});
export const dependencyErrors = new Counter({
  name: 'paperlink_dependency_errors_total',
  help: 'Statements and calls that failed in the database or the object storage, by dependency (database, storage).',
  labelNames: ['dependency'] as const,
  registers,
});

dependencyFailures.count = (dependency) => dependencyErrors.inc({ dependency });

/** A render pool as the gauges read it. */
export interface PoolState {
  /** Render threads. */
  size: number;
  /** Tasks on a thread now. */
  busy: number;
  /** Tasks waiting for a thread. */
  waiting: number;
}
/** A kind of background work as the gauges read it. */
export interface JobState {
  kind: string;
  running: number;
  /** Pieces due now that no process runs (undefined: the kind does not say). */
  due?: number;
  /** How long the oldest of them has been due, in seconds. */
  oldestDueSeconds?: number;
}

const pools = new Set<() => PoolState>();
const runners = new Set<() => Promise<JobState[]>>();

/** Reads `state` at each scrape until the returned function is called (a pool closed). */
export function watchPool(state: () => PoolState): () => void {
  pools.add(state);
  return () => void pools.delete(state);
}
/** Reads `state` at each scrape until the returned function is called (a runner stopped). */
export function watchJobs(state: () => Promise<JobState[]>): () => void {
  runners.add(state);
  return () => void runners.delete(state);
}

/** A gauge of every watched pool's `key`, added up. */
const poolGauge = (name: string, help: string, key: keyof PoolState) =>
  new Gauge({
    name,
    help,
    registers,
    collect() {
      this.set([...pools].reduce((n, s) => n + s()[key], 0));
    },
  });
poolGauge('paperlink_render_threads', 'Render threads of this process (RENDER_THREADS).', 'size');
poolGauge('paperlink_render_threads_busy', 'Render threads running a task now.', 'busy');
poolGauge('paperlink_render_queue', 'Render tasks waiting for a thread.', 'waiting');

/** The longest a scrape waits for the database's answer on the jobs due. */
const READ_MS = 1_000;
/** The job gauges share one read per scrape. */
let reading: Promise<JobState[]> | undefined;
function jobStates(): Promise<JobState[]> {
  // a database that hangs must not hang the scrape: what has not answered within a second is left out
  const within = (r: () => Promise<JobState[]>) =>
    Promise.race([
      r().catch(() => [] as JobState[]),
      new Promise<JobState[]>((resolve) => setTimeout(() => resolve([]), READ_MS).unref()),
    ]);
  reading ??= Promise.all([...runners].map(within))
    .then((all) => all.flat())
    .finally(() => setImmediate(() => (reading = undefined)));
  return reading;
}
const jobGauge = (name: string, help: string, value: (s: JobState) => number | undefined, aggregator: 'sum' | 'max') =>
  new Gauge({
    name,
    help,
    labelNames: ['kind'] as const,
    registers,
    aggregator,
    async collect() {
      this.reset();
      for (const s of await jobStates()) {
        const v = value(s);
        if (v !== undefined) this.inc({ kind: s.kind }, v);
      }
    },
  });
jobGauge(
  'paperlink_jobs_running',
  'Background work running in this process now, by kind (link_step, postcard_render, webhook_delivery, housekeeping, retention).',
  (s) => s.running,
  'sum',
);
// read from the database, which every process shares: the same number from each, so the highest
jobGauge(
  'paperlink_jobs_due',
  'Background work due now that no process runs yet, by kind (the same in every process: it is read from the database).',
  (s) => s.due,
  'max',
);
jobGauge(
  'paperlink_jobs_oldest_due_seconds',
  'How long the oldest piece of background work due now has waited, by kind (0 when none is due).',
  (s) => s.oldestDueSeconds,
  'max',
);

/** Node's own metrics (memory, CPU, event loop), from the first listener or report on: they sample as they go. */
let defaults = false;
function withDefaults(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: registry });
}

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464/metrics */
  url: string;
  close(): Promise<void>;
}

/**
 * Answers `GET /metrics` on `host` and `port` (0 picks one): this process's
 * metrics, or with `cluster` those of every process of `serve --processes N` (asked for over the
 * cluster's channel and added up).
 */
export async function serveMetrics(
  { host, port }: { host: string; port: number },
  options: { cluster?: boolean } = {},
): Promise<MetricsServer> {
  withDefaults();
  const aggregator = options.cluster ? new AggregatorRegistry() : undefined;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at GET /metrics\n');
      return;
    }
    (aggregator ? aggregator.clusterMetrics() : registry.metrics()).then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? '' : text),
      (err: unknown) =>
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`The metrics could not be read: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new Error(
          `The metrics cannot be served on ${host}:${port} (${(err as { code?: string }).code ?? err.message}). Set METRICS_ADDRESS to a free port, or leave it unset.`,
          { cause: err },
        ),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${shown}:${bound.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A process of `serve --processes N`: answers its primary's requests for this registry's metrics. */
export function reportToPrimary(): void {
  // made once for its side effect: a process of a cluster answers its primary's requests from then on
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  withDefaults();
}
