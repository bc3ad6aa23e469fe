/**
 * The composition root: opens the database (running migrations), picks the document storage and
 * wires the core together. The HTTP app, the CLI and the tests all start from here.
 */
import { Handoffs } from './postcards/handoff';
import { MailPartnerApps } from './postcards/partners';
import cluster from 'node:cluster';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { Operators } from './admin';
import { startTracing, tracing } from './tracing';
import { systemClock, type Clock } from './clock';
import { senderOf, type Config } from './config';
import { openDatabase, sqliteFile, type Database } from './db';
import { clusterPresence, localPresence, postgresPresence, type Presence } from './db/presence';
import { Documents } from './documents';
import { purgeHistory } from './history';
import { Idempotency } from './idempotency';
import { Keys } from './keys';
import { activitiesOf, type Activities, type Engine } from './engine';
import { Claims } from './engine/claims';
import { Marks, markOnEngineChange } from './engine/marks';
import { EmbeddedEngine } from './engine/embedded';
import { batchForLinks } from './flows/link';
import { eventLoopLoad, type Load } from './jobs/load';
import { periodic, Runner } from './jobs/runner';
import { Events } from './events';
import { MagicLinks } from './links';
import { linkKeyring } from './links/keyring';
import { checkKeys, moveLegacyKey } from './links/tokens';
import { RETENTION_SWEEP_MS, type StorageApps } from './documents/retention';
import { MagicLinkApps, type MagicLinkApp } from './links/app';
import { createMailer, type Mailer } from './mail';
import { Postcards } from './postcards';
import { packageRoot } from './paths';
import { openStorage, probeWrites, type Storage } from './storage';
import { setRenderLimits } from './templates/limits';
import { createRenderer, type Renderer } from './templates/pool';
import { printer } from './templates/html';
import { converter } from './templates/docx';
import { TemplateStore } from './templates/store';
import { Dispatcher, Webhooks } from './webhooks';
import { WriteHealth } from './outage';
import type { Log } from './log';

export interface Service {
  config: Config;
  clock: Clock;
  database: Database;
  storage: Storage;
  keys: Keys;
  /** Sign-ins to the web app (API key or operator password). */
  operators: Operators;
  templates: TemplateStore;
  /** Renders on the render threads (RENDER_THREADS), off the HTTP thread. */
  renderer: Renderer;
  documents: Documents;
  idempotency: Idempotency;
  mailer: Mailer;
  links: MagicLinks;
  postcards: Postcards;
  webhooks: Webhooks;
  /** The outbox: what changed, for webhooks. */
  events: Events;
  /** Sends webhook deliveries (started in every process that runs flows, on either engine). */
  dispatcher: Dispatcher;
  apps: { magicLink: MagicLinkApps; storage: StorageApps; mailPartner: MailPartnerApps };
  /** Hands live postcards to the mail partner (a job on the runner of every process that runs flows). */
  handoffs: Handoffs;
  /** Whether this process can write (a full or read-only disk), for /readyz. */
  writes: WriteHealth;
  engine: Engine;
  /** The operations flows call (what a Temporal worker registers). */
  activities: Activities;
  version: string;
  ping(): Promise<void>;
  /** Deletes what has expired and would otherwise stay for ever: idempotency answers, recipients' sign-ins and codes. `serve` runs it at start and hourly. */
  housekeeping(): Promise<{
    idempotency: number;
    sessions: number;
    codes: number;
    unreferenced: number;
    /** Spooled renders deleted: their retries never came, or another run stored them (src/documents/spool.ts). */
    spooled: number;
    /** Entries of links' access logs, and events (with their deliveries), older than their retention. */
    access_log: number;
    events: number;
  }>;
  close(): Promise<void>;
}

/** What an engine of another kind (Temporal) is given of the service. */
export interface EngineParts {
  /** Where the rows the engine has not told its server of are marked (src/engine/marks.ts). */
  marks: Marks;
  /** A Magic Link's URL, derived again: it is kept out of the engine's history. */
  linkUrl: (linkId: string) => Promise<string>;
  /** Where the engine reports what failed in the background (ServiceOptions.onFlowError, after /readyz has heard of it). */
  onError: (id: string, err: unknown) => void;
}

export interface ServiceOptions {
  clock?: Clock;
  /** Load the example templates on the first start (default true). */
  examples?: boolean;
  /** Run flows (link lifecycles) in this process and resume the unfinished ones: what `serve` does. CLI commands leave it off. */
  runFlows?: boolean;
  /** Where the service tells people what it did (e.g. e-mails written to the outbox). */
  log?: Log;
  /** Where flow errors are reported. */
  onFlowError?: (id: string, err: unknown) => void;
  /** Another engine than the embedded one (`ENGINE=temporal`), made from the activities and what it needs of the service. */
  engine?: (activities: Activities, parts: EngineParts) => Engine | Promise<Engine>;
  /** How busy requests keep this process; the embedded engine's postcard renders yield to them (default: the event loop's utilisation). */
  load?: Load;
  /**
   * Told when this process has lost its presence on PostgreSQL and stopped its background work
   * (awaited before it reconnects), and when it is back with a new presence id and has adopted what was free.
   */
  onPresence?: (state: 'lost' | 'back', id: number) => void | Promise<void>;
  /** Called with every database statement before it runs; a throw fails it as a fault would (the crash-point tests). */
  beforeStatement?: (sql: string) => void;
}

/** How often `serve` deletes what has expired (Service.housekeeping). */
export const HOUSEKEEPING_MS = 60 * 60 * 1000;

export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The Magic Link app's settings before an operator sets it up: the server's address and MAIL_FROM. */
function magicLinkDefaults(config: Config): Omit<MagicLinkApp, 'configured_at'> {
  const from = senderOf(config.mailFrom);
  return {
    public_url: config.publicUrl,
    public_url_follows_server: true,
    sender_name: from.name ?? 'Paperlink',
    sender_email: from.address,
    organization_name: 'Paperlink',
    logo_url: null,
    accent_color: '#1F6FEB',
    auth_types: ['email'],
    oidc_providers: [],
  };
}

/** Closes what a service opened, last opened first (its close, and a start that failed part way). */
async function closeParts(p: {
  mailer: Mailer;
  presence: Presence;
  renderer: Renderer;
  storage: Storage;
  database: Database;
}): Promise<void> {
  await p.presence.close();
  p.mailer.close();
  await p.renderer.close();
  await printer.close();
  await converter.close();
  p.storage.close?.();
  await p.database.close();
}

/**
 * One run of `work` at a time: a call during another (housekeeping at the start, then hourly) waits
 * for it, then runs whole, so what it answers is what it did; `settled` waits for the last.
 */
function oneAtATime<T>(work: () => Promise<T>): { run: () => Promise<T>; settled: () => Promise<unknown> } {
  let last: Promise<unknown> = Promise.resolve();
  return {
    run: () => {
      const run = last.then(work);
      last = run.catch(() => undefined);
      return run;
    },
    settled: () => last,
  };
}

/**
 * What a service is made of before any work of the process's own: the database, the storage, the
 * render threads, the mailer, and each resource's core, wired to one another.
 */
async function openParts(config: Config, options: ServiceOptions, clock: Clock) {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    sqlitePath: sqliteFile(config.dataDir),
    log: options.log,
    beforeStatement: options.beforeStatement,
  });
  const { db } = database;
  // a write the disk refused, in a request or in the background, makes /readyz try writes of its own
  const writes = new WriteHealth(() => probeWrites(db, storage));
  const storage = openStorage(config, db);
  // a bucket that cannot be used fails the start, saying why, rather than the first request
  await storage.check?.().catch(async (err: unknown) => {
    storage.close?.();
    await database.close();
    throw err;
  });
  // the render threads (which compile uploads and render) and this thread (which counts) apply the same limits
  setRenderLimits(config.renderLimits);
  const renderer = createRenderer({
    threads: config.renderThreads,
    timeoutMs: config.renderTimeoutMs,
    memoryMb: config.renderMemoryMb,
  });
  const templates = new TemplateStore(db, clock, renderer);
  if (options.examples !== false) await templates.loadExamples();
  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    outbox: path.join(config.dataDir, 'outbox'),
    log: options.log,
  });
  const magicLink = new MagicLinkApps(db, clock, magicLinkDefaults(config), config.oidcAllowPrivate);
  const events = new Events(clock);
  // the keys of Magic Link URLs live outside the database; older versions kept one in it
  const keyring = linkKeyring(config);
  await moveLegacyKey(db, keyring);
  await checkKeys(db, keyring);
  const links = new MagicLinks(
    db,
    clock,
    mailer,
    magicLink,
    events,
    keyring,
    database.inTransaction,
    database.dialect === 'postgres',
  );
  const keys = new Keys(db, clock);
  const documents = new Documents(
    db,
    storage,
    templates,
    clock,
    links,
    events,
    renderer,
    database.inTransaction,
    config.pageImageCacheMb * 1024 * 1024,
  );
  const postcards = new Postcards(db, clock, keys, templates, documents, events, database.inTransaction, renderer);
  // live postcards to the mail partner: a job on the runner of every process that runs background work
  const mailPartner = new MailPartnerApps(db, clock);
  const handoffs = new Handoffs(db, clock, database.inTransaction, documents, mailPartner, (trx, id, from, set) =>
    postcards.move(trx, id, from, set),
  );
  postcards.handoffs = handoffs;
  const webhookOptions = {
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    retryForMs: config.webhookRetryHours * 3_600_000,
    maxSubscriptions: config.webhookMaxSubscriptions,
  };
  const webhooks = new Webhooks(db, clock, events, webhookOptions);
  return {
    database,
    db,
    writes,
    storage,
    renderer,
    templates,
    mailer,
    magicLink,
    events,
    links,
    keys,
    documents,
    postcards,
    webhooks,
    webhookOptions,
    mailPartner,
    handoffs,
  };
}

export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const clock = options.clock ?? systemClock;
  // OTEL_*: this process's spans go where they say, from its first request (src/tracing.ts)
  startTracing(config.tracing, options.log);
  const core = await openParts(config, options, clock);
  const { database, db, writes, storage, renderer, templates, mailer, magicLink } = core;
  const { events, links, keys, documents, postcards, webhooks, webhookOptions, mailPartner, handoffs } = core;
  const onFlowError = (id: string, err: unknown) => {
    writes.noticed(err);
    options.onFlowError?.(id, err);
  };
  let presence: Presence = localPresence();
  /** Closes what is open so far when a later step of the start fails. */
  const abandon = async (err: unknown): Promise<never> => {
    await closeParts({ mailer, presence, renderer, storage, database });
    throw err;
  };
  // several processes may share the database: the ones that run background work say so
  const openPresence = async (): Promise<Presence> => {
    if (options.runFlows && database.dialect === 'postgres') return postgresPresence(config.databaseUrl!, options.log);
    // several processes of one `serve --processes N` on one SQLite data dir
    if (options.runFlows && cluster.isWorker) return clusterPresence(config.dataDir);
    return presence;
  };
  presence = await openPresence().catch(abandon);
  const claims = new Claims(database, presence);
  links.owner = presence.id;
  links.live = () => presence.live();
  // every kind of background work this process runs, on either engine (src/jobs/runner.ts)
  const runner = new Runner(clock, onFlowError, (now, running) => claims.sweep(now, running));
  const dispatcher = new Dispatcher(db, clock, {
    ...webhookOptions,
    log: options.log,
    owner: presence.id,
    lockRows: database.dialect === 'postgres',
    runner,
  });
  handoffs.owner = presence.id;
  const parts = { documents, links, postcards, dispatcher };
  const activities = activitiesOf(parts);
  const engine: Engine = options.engine
    ? await (async () =>
        options.engine!(activities, {
          marks: new Marks(db),
          linkUrl: (id) => links.url(id),
          onError: onFlowError,
        }))().catch(abandon)
    : new EmbeddedEngine(clock, { ...activities, ...batchForLinks(links) }, claims, onFlowError, runner);
  // every generate started here (the API, the web app) renders the template versions current when it
  // was asked for, however late or often the engine runs it: the versions go into its input
  const start = engine.generate.bind(engine);
  engine.generate = async (input) => start({ ...input, body: await templates.pin(input.body) });
  const idempotency = new Idempotency(db, clock);
  idempotency.owner = () => presence.id;
  const house = oneAtATime(async () => {
    const { sessions, codes } = await links.purgeExpired();
    return {
      idempotency: await idempotency.purge(),
      sessions,
      codes,
      unreferenced: await documents.purgeUnreferenced(),
      spooled: await documents.spool.purge(),
      ...(await purgeHistory(db, database.inTransaction, clock.now(), config.history)),
    };
  });
  const keepHouse = house.run;
  /**
   * Fencing: a process whose presence connection is lost is seen as dead by the others, which free
   * its claims at their next sweep; so it stops claiming at once (link and postcard steps, webhook
   * deliveries), opens a new presence (a new id) with backoff, and claims again.
   */
  let closing = false;
  let retry: NodeJS.Timeout | undefined;
  const comeBack = async (): Promise<void> => {
    await runner.fence();
    await options.onPresence?.('lost', presence.id);
    for (let wait = 250; ; wait = Math.min(wait * 2, 30_000)) {
      if (closing) return;
      try {
        const next = await openPresence();
        if (closing) return void (await next.close());
        wire(next);
        break;
      } catch (err) {
        options.log?.(
          `presence: could not reconnect (${err instanceof Error ? err.message : String(err)}); trying again in ${wait} ms`,
          { err },
        );
        await new Promise((resolve) => (retry = setTimeout(resolve, wait)));
      }
    }
    runner.unfence();
    options.log?.(`presence: back (presence id ${presence.id}); running what this process holds again`, {
      presence_id: presence.id,
    });
    await options.onPresence?.('back', presence.id);
  };
  /** Makes `p` this process's presence: its id in what this process claims from now on. */
  const wire = (p: Presence) => {
    presence = p;
    claims.presence = p;
    links.owner = p.id;
    dispatcher.owner = p.id;
    handoffs.owner = p.id;
    p.onLost = () => void comeBack().catch((err: unknown) => onFlowError('presence', err));
  };
  if (options.runFlows) {
    wire(presence);
    // upkeep on timetables of the process's own: what has expired (at the start, then every hour),
    // and documents whose retention ran out (deleted within a minute of their time)
    void keepHouse().catch((err: unknown) => onFlowError('housekeeping', err));
    runner.add(periodic('housekeeping', HOUSEKEEPING_MS, keepHouse));
    runner.add(periodic('retention', RETENTION_SWEEP_MS, () => documents.expireDue()));
    // live postcards to the mail partner, on either engine: due rows, whichever process wrote them
    runner.add(handoffs.kind());
    handoffs.runner = runner;
    handoffs.onDue = () => runner.poke('postcard_handoff');
    // every process that runs background work delivers webhooks, on either engine: it claims what
    // is due (written here or by any other process) and wakes at once for what it wrote itself
    events.onEmitted = () => dispatcher.wake();
    postcards.onReceived = (id) => engine.postcardReceived(id);
    links.onChange = (id, change) => engine.linkChanged(id, change);
    // what another engine left is due once for this one (a statement per kind, once per change)
    await markOnEngineChange(db, engine.kind, clock.now()).catch(abandon);
    runner.load = options.load ?? eventLoopLoad();
    // nothing per link or postcard: what is due or marked is found through an index
    engine.start();
    runner.start();
  }
  return {
    config,
    clock,
    database,
    storage,
    keys,
    operators: new Operators(db, clock, keys),
    templates,
    renderer,
    documents,
    idempotency,
    mailer,
    links,
    postcards,
    webhooks,
    events,
    dispatcher,
    apps: { magicLink, storage: documents.apps, mailPartner },
    handoffs,
    writes,
    engine,
    activities,
    version: packageVersion(),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    housekeeping: keepHouse,
    close: async () => {
      closing = true;
      clearTimeout(retry);
      // what runs ends first (a housekeeping too); then no more is taken
      await runner.stop();
      await house.settled();
      await engine.stop();
      // what this process still had goes to the others now, not when they notice it is gone
      if (options.runFlows) await claims.releaseAll(clock.now()).catch(() => undefined);
      await closeParts({ mailer, presence, renderer, storage, database });
      // the last spans leave before the process does
      await tracing()
        ?.flush()
        .catch(() => undefined);
    },
  };
}
