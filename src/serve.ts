/**
 * `paperlink serve`: starts the service and, on the very first start, makes an API key and prints
 * it with a curl command that generates a letter from the bundled example, ready to paste.
 */
import cluster from 'node:cluster';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { requirePostgres, type Config } from './config';
import { lockDataDir } from './db/lock';
import { presenceDir } from './db/presence';
import { buildApp } from './app';
import { publicUrlMismatch } from './links/app';
import { createService, type EngineParts, type Service } from './service';
import type { Activities } from './engine';
import { EXAMPLE_IDS, exampleSample } from './templates/store';
import { chromiumPath, CHROMIUM_MISSING } from './templates/chromium';
import { LIBREOFFICE_MISSING, officePaths } from './templates/docx';
import { sandboxStatus } from './templates/sandbox';
import { checkFormats } from './doctor';
import type { Renderer } from './templates/pool';
import { flowIds, type Log } from './log';
import { reportToPrimary, serveMetrics, type MetricsServer } from './metrics';
import { tracing } from './tracing';

export interface Server {
  service: Service;
  app: FastifyInstance;
  /** The address it listens on, e.g. http://127.0.0.1:3000. */
  url: string;
  close(): Promise<void>;
}

/** Shell-quotes one argument for a POSIX shell. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:@%=+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The body of the first request a new user sends: the letter example with its sample values. */
export function firstRequest(): Record<string, unknown> {
  return {
    template_id: EXAMPLE_IDS.letter,
    merge_parameters: exampleSample('letter'),
    destinations: { inkit_storage: { name: 'Welcome letter' } },
  };
}

export interface StartOptions {
  logger?: boolean;
  /** A worker of `serve --processes N`: the primary holds the data dir's lock and greets the user. */
  worker?: boolean;
}

/**
 * How serve makes its service: its log, where a failure in the background is said (with its cause
 * chain and the ids it concerns), and the Temporal engine with ENGINE=temporal.
 */
export function serviceOptions(config: Config, log: Log) {
  const onFlowError = (id: string, err: unknown) =>
    log(`flow ${id} failed: ${err instanceof Error ? err.message : String(err)}`, { err, ...flowIds(id) });
  return {
    log,
    onFlowError,
    // loaded only in this mode: the Temporal SDK is an optional dependency
    engine:
      config.engine === 'temporal'
        ? async (_activities: Activities, parts: EngineParts) =>
            (await import('../workflows/client')).TemporalEngine.connect(config.temporal, parts)
        : undefined,
  };
}

export async function startServer(config: Config, log: Log, options: StartOptions = {}): Promise<Server> {
  if (config.engine === 'temporal') requirePostgres(config, 'ENGINE=temporal');
  // one SQLite data dir, one server: taken before the database is opened (a server's start takes
  // over what a dead one left half-done, which must never happen beside a live one)
  const unlock = config.databaseUrl || options.worker ? () => undefined : lockDataDir(config.dataDir);
  // a process of a cluster answers its primary's requests for metrics from its start: the primary
  // waits for every process it has, and one still starting would fail the scrape
  if (config.metrics && options.worker) reportToPrimary();
  let service: Service;
  try {
    service = await createService(config, { ...serviceOptions(config, log), runFlows: true });
  } catch (err) {
    unlock();
    throw err;
  }
  let app: FastifyInstance;
  let stopping = false;
  /** The start's check of the template formats, while it runs. */
  let trying: Promise<void> | undefined;
  try {
    app = await buildApp(service, { logger: options.logger, stopping: () => stopping });
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await service.close();
    unlock();
    throw err;
  }
  // requests being answered: a stopping server closes its idle connections once there are none
  let answering = 0;
  app.server.on('request', (_req, res: import('node:http').ServerResponse) => {
    answering++;
    res.on('close', () => {
      answering--;
      if (stopping && answering === 0) app.server.closeIdleConnections();
    });
  });
  // GET /metrics apart from the API (src/metrics.ts): a process of a cluster reports to its primary, which answers
  let metrics: MetricsServer | undefined;
  if (config.metrics && !options.worker)
    metrics = await serveMetrics(config.metrics).catch(async (err: unknown) => {
      await app.close();
      await service.close();
      unlock();
      throw err;
    });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  // with --port 0 the system picks the port; show the real one
  const url = config.publicUrl.endsWith(':0') ? `${config.publicUrl.slice(0, -2)}:${port}` : config.publicUrl;
  service.apps.magicLink.serverUrl = url;
  const server: Server = {
    service,
    app,
    url,
    close: async () => {
      // /readyz answers 503 from now on; no new connection is taken; every request already read is
      // answered (a request arriving on an open connection meanwhile gets 503 stopping); idle
      // connections close once nothing is being answered; after SHUTDOWN_TIMEOUT_MS every
      // connection closes, answered or not
      stopping = true;
      const deadline = setTimeout(() => app.server.closeAllConnections(), config.shutdownTimeoutMs);
      const closed = app.close();
      if (answering === 0) app.server.closeIdleConnections();
      await closed;
      clearTimeout(deadline);
      await trying;
      // then the background work: flows stop, deliveries in flight finish, claims go to the others
      await service.close();
      await metrics?.close();
      unlock();
    },
  };

  if (!options.worker) {
    await greet(service, config, url, log, 1, metrics);
    if (config.startupCheck) trying = tryFormats(service.renderer, log, () => stopping).catch(() => undefined);
  }
  return server;
}

/** What a new user needs after the start: where things are, and on the first start a key and a first request. */
async function greet(
  service: Service,
  config: Config,
  url: string,
  log: Log,
  processes = 1,
  metrics?: MetricsServer,
): Promise<void> {
  const where =
    service.database.dialect === 'sqlite'
      ? `SQLite at ${service.database.location}`
      : `PostgreSQL at ${service.database.location}`;
  const docs = service.storage.location;
  const chromium = await chromiumPath();
  const office = officePaths();
  // a format is said to work only once it has rendered something (tryFormats, below)
  const formats = [
    'XML, PDF forms',
    chromium ? `HTML with Chromium at ${chromium}` : `not HTML: ${CHROMIUM_MISSING}`,
    office ? `Word with LibreOffice at ${office.soffice}` : `not Word: ${LIBREOFFICE_MISSING}`,
  ].join('; ');
  // where this process's spans go (none named when a provider of the process's own took them)
  const traces = tracing() && config.tracing?.destination;
  const engine =
    config.engine === 'temporal'
      ? `Temporal at ${config.temporal.address} (namespace ${config.temporal.namespace}, task queue ${config.temporal.taskQueue})`
      : 'embedded (flows run in these processes)';
  log(
    `Paperlink ${service.version} is listening on ${url}${processes > 1 ? ` (${processes} processes)` : ''}\n  data: ${where}; documents: ${docs}; engine: ${engine}\n  templates: ${formats}${config.startupCheck ? ' (each being tried with a small document)' : ''}${chromium && office ? '' : '; `npx paperlink doctor` checks every format'}\n  ${sandboxStatus()}\n  web app: ${url}/app (sign in with an API key)\n  API reference: ${url}/openapi.json\n${metrics ? `  metrics: ${metrics.url}\n` : ''}${traces ? `  traces: ${traces}\n` : ''}`,
    // what a log collector reads of it without parsing the text
    {
      version: service.version,
      url,
      processes,
      database: service.database.dialect,
      engine: config.engine,
      ...(metrics ? { metrics: metrics.url } : {}),
      ...(traces ? { traces } : {}),
      ...(config.engine === 'temporal'
        ? {
            temporal: {
              address: config.temporal.address,
              namespace: config.temporal.namespace,
              task_queue: config.temporal.taskQueue,
            },
          }
        : {}),
    },
  );

  const app = await service.apps.magicLink.get();
  if (!app) {
    // the embedded default: links point here (and follow PUBLIC_URL), e-mails go to the outbox (or SMTP_URL)
    await service.apps.magicLink.put({});
    log(
      `  Magic Link app set up for ${url}; e-mails go to ${service.mailer.destination} (change: PUT /v1/apps/magic_link or npx paperlink apps magic-link setup)\n`,
    );
  } else {
    const warning = publicUrlMismatch(app, url);
    if (warning) log(`  ${warning}\n`, { level: 'warn' });
  }
  if ((await service.keys.count('api')) === 0) {
    const { secret } = await service.keys.create('api', 'first key');
    const requestFile = path.join(config.dataDir, 'first-request.json');
    fs.mkdirSync(config.dataDir, { recursive: true });
    fs.writeFileSync(requestFile, `${JSON.stringify(firstRequest(), null, 2)}\n`);
    const header = shellQuote(`X-Service-API-Token: ${secret}`);
    log(
      [
        '',
        'This is the first start, so an API key was made for you. It is shown only now; keep it secret:',
        `  ${secret}`,
        '',
        'Generate a letter from the bundled example template:',
        `  curl -sS ${url}/v1/generate -H 'Content-Type: application/json' -H ${header} --data @${shellQuote(requestFile)}`,
        '',
        'Then download it, with the document_id from the answer:',
        `  curl -sS -OJ -H ${header} ${url}/v1/documents/DOCUMENT_ID/pdf`,
        '',
        'More keys: npx paperlink keys create --name NAME   (npx paperlink --help lists every command)',
        '',
      ].join('\n'),
    );
  }
}

/**
 * Renders a small document of each template format on the service's render threads, as
 * `paperlink doctor` does, and says which
 * work: one line when all do, a line for each that does not with `npx paperlink doctor` to learn
 * more. Nothing is said once `stopped()` (a stop cut the check short: its failures mean nothing).
 */
export async function tryFormats(renderer: Renderer, log: Log, stopped: () => boolean = () => false): Promise<void> {
  const checks = await checkFormats(renderer);
  if (stopped()) return;
  const working = checks.filter((c) => c.outcome === 'ok').map((c) => c.name);
  const broken = checks.filter((c) => c.outcome === 'fail');
  // one write: a reader of the output sees the verdict whole, never the first line alone
  log(
    `  templates tried: ${working.length ? `${working.join(', ')} work${working.length === 1 ? 's' : ''}` : 'none works'}${broken.length ? '' : '.'}\n` +
      broken.map((c) => `  ${c.name} does NOT work: ${c.says}. \`npx paperlink doctor\` says what to fix.\n`).join(''),
    { level: broken.length ? 'warn' : 'info', formats_working: working, formats_failing: broken.map((c) => c.name) },
  );
}

/**
 * `paperlink serve --processes N`: N processes (node:cluster) answer on one port, each a whole
 * server; background work is claimed, so each job is done once (src/engine/claims.ts). This
 * process (the primary) holds the SQLite data dir's lock, greets the user, starts a new worker
 * when one dies, and on stop() stops every worker gracefully. Resolves once all listen.
 */
export async function startCluster(
  config: Config,
  processes: number,
  log: Log,
): Promise<{ url: string; stop(): Promise<void> }> {
  if (config.engine === 'temporal') requirePostgres(config, 'ENGINE=temporal');
  const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
  // every worker of before is gone (this process holds the lock): none of their presence files is true
  fs.rmSync(presenceDir(config.dataDir), { recursive: true, force: true });
  // the database migrated and the engine reachable before any worker starts: a problem is said once, here
  let service: Service;
  // the primary answers GET /metrics for every process (it asks each over the cluster's channel):
  // bound before any process starts, so a port in use fails the start with nothing left running
  let metrics: MetricsServer | undefined;
  try {
    service = await createService(config, serviceOptions(config, log));
    if (config.metrics)
      metrics = await serveMetrics(config.metrics, { cluster: true }).catch(async (err: unknown) => {
        await service.close();
        throw err;
      });
  } catch (err) {
    unlock();
    throw err;
  }
  let stopping = false;
  // every worker listens as asked (port 0 too): the cluster shares one socket among them
  const fork = () => {
    // render threads shared out: one HTTP thread per process, the other cores render
    const renderThreads =
      process.env.RENDER_THREADS || String(Math.max(1, Math.floor(os.availableParallelism() / processes) - 1));
    // at most two glibc malloc arenas (the default is eight a core): a process with render threads
    // kept ~10 MB more in fragmented arenas, with no measurable gain in speed (BENCHMARKS.md)
    const worker = cluster.fork({
      RENDER_THREADS: renderThreads,
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
    });
    return worker;
  };
  // a worker that ends while the cluster starts fails the start (below); one that ends after is replaced
  let started = false;
  cluster.on('exit', (worker, code, signal) => {
    if (stopping || !started) return;
    log(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`, {
      level: 'warn',
      worker_pid: worker.process.pid,
    });
    // its presence file says nothing true any more
    for (const f of fs.existsSync(presenceDir(config.dataDir)) ? fs.readdirSync(presenceDir(config.dataDir)) : []) {
      const file = path.join(presenceDir(config.dataDir), f);
      if (fs.readFileSync(file, 'utf8') === String(worker.process.pid)) fs.rmSync(file, { force: true });
    }
    fork();
  });
  const listening = (w: ReturnType<typeof cluster.fork>) =>
    new Promise<number>((resolve, reject) => {
      w.once('listening', (address) => resolve(address.port));
      w.once('exit', (code) =>
        reject(new Error(`a server process exited while starting (${code}); its error is above`)),
      );
    });
  let port: number;
  try {
    port = await listening(fork());
    await Promise.all(Array.from({ length: processes - 1 }, () => listening(fork())));
    started = true;
  } catch (err) {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    await service.close();
    await metrics?.close();
    unlock();
    throw err;
  }
  const url = config.publicUrl.endsWith(':0') ? `${config.publicUrl.slice(0, -2)}:${port}` : config.publicUrl;
  service.apps.magicLink.serverUrl = url;
  try {
    await greet(service, config, url, log, processes, metrics);
    // here, before this process's service (and its browser and LibreOffice) is closed
    if (config.startupCheck) await tryFormats(service.renderer, log);
  } finally {
    await service.close();
  }
  return {
    url,
    stop: async () => {
      stopping = true;
      const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
      await Promise.all(
        workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              w.once('exit', () => resolve());
              w.process.kill('SIGTERM');
            }),
        ),
      );
      await metrics?.close();
      unlock();
    },
  };
}
