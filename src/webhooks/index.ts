/**
 * Webhook subscriptions and the dispatcher that delivers their events: signed POSTs, at least
 * once, in order per resource, retried with exponential back-off for about a day (then `failed`
 * and visible), each with a timeout, several at once so a receiver that hangs holds up nobody else.
 */
import http from 'node:http';
import https from 'node:https';
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import type { DeliveryRow, WebhookRow } from '../db/schema';
import { NotFoundError, ValidationError, type ErrorDetail } from '../errors';
import { EVENT_TYPES, TEST_EVENT, type Event, type Events } from '../events';
import { newId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import { randomToken } from '../secrets';
import { guardedLookup, urlProblem } from './guard';
import { sign } from './signature';
import { isObject } from '../guards';

export interface WebhookInfo {
  id: string;
  object: 'webhook';
  url: string;
  events: string[];
  description: string | null;
  created_at: string;
  /** Only in the answer to POST /v1/webhooks: shown once. */
  secret?: string;
}

export interface DeliveryInfo {
  id: string;
  object: 'delivery';
  event: { id: string; type: string; created_at: string };
  status: 'pending' | 'succeeded' | 'failed';
  attempts: { at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  next_attempt_at: string | null;
  created_at: string;
}

export interface WebhookOptions {
  /** Deliver to loopback and private addresses too (tests, private deployments). */
  allowPrivate: boolean;
  /** How long one attempt may take. */
  timeoutMs: number;
  /** How long a delivery is retried before it is marked failed. */
  retryForMs: number;
}

const MAX_DESCRIPTION = 500;

function info(row: WebhookRow): WebhookInfo {
  return {
    id: row.id,
    object: 'webhook',
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    created_at: row.created_at,
  };
}

export class Webhooks {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly events: Events,
    private readonly options: WebhookOptions,
  ) {}

  /** `POST /v1/webhooks`: every broken field at once; the signing secret is in this answer only. */
  async create(body: unknown): Promise<WebhookInfo> {
    if (!isObject(body))
      throw new ValidationError('The body must be a JSON object with url and events.', [
        { field: 'body', message: 'must be an object', code: 'type' },
      ]);
    const details: ErrorDetail[] = [];
    const problem = urlProblem(body.url, this.options.allowPrivate);
    if (body.url === undefined)
      details.push({
        field: 'url',
        message: 'is required: where to POST events, e.g. https://example.com/hooks/paperlink',
        code: 'required',
      });
    else if (problem) details.push({ field: 'url', message: problem, code: 'invalid' });
    let events: string[] = [];
    const given = body.events === '*' ? ['*'] : body.events;
    if (given === undefined)
      details.push({
        field: 'events',
        message: `is required: a list of event types (${EVENT_TYPES.join(', ')}) or "*" for all`,
        code: 'required',
      });
    else if (!Array.isArray(given) || given.length === 0 || given.some((t) => typeof t !== 'string'))
      details.push({ field: 'events', message: 'must be a non-empty list of event types, or "*"', code: 'type' });
    else {
      events = [...new Set(given as string[])];
      events.forEach((t, i) => {
        if (t !== '*' && !(EVENT_TYPES as readonly string[]).includes(t))
          details.push({
            field: `events[${i}]`,
            message: `is not an event type; use one of ${EVENT_TYPES.join(', ')} or "*"`,
            code: 'unknown_event_type',
          });
      });
      if (events.includes('*')) events = ['*'];
    }
    const d = body.description;
    if (d !== undefined && d !== null && (typeof d !== 'string' || d.length > MAX_DESCRIPTION))
      details.push({
        field: 'description',
        message: `must be text of at most ${MAX_DESCRIPTION} characters`,
        code: 'invalid',
      });
    if (details.length)
      throw new ValidationError('The webhook is not valid; see details for each field to fix.', details);
    const now = this.clock.now();
    const row: WebhookRow = {
      id: newId('wh', now),
      url: body.url as string,
      events: JSON.stringify(events),
      description: typeof d === 'string' ? d : null,
      secret: `whsec_${randomToken(24)}`,
      created_at: iso(now),
    };
    await this.db.insertInto('webhooks').values(row).execute();
    return { ...info(row), secret: row.secret };
  }

  private async row(id: string): Promise<WebhookRow> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('webhook', id);
    return row;
  }

  async get(id: string): Promise<WebhookInfo> {
    return info(await this.row(id));
  }

  async list(page: PageQuery): Promise<Page<WebhookInfo>> {
    let q = this.db
      .selectFrom('webhooks')
      .selectAll()
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('id', '<', page.startingAfter);
    return toPage(await q.execute(), page.limit, info);
  }

  /** Deletes the subscription; its pending deliveries are dropped with it. */
  async remove(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const r = await trx.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
      if (!Number(r.numDeletedRows)) throw new NotFoundError('webhook', id);
      await trx.deleteFrom('delivery_attempts').where('webhook_id', '=', id).execute();
      await trx.deleteFrom('deliveries').where('webhook_id', '=', id).execute();
    });
  }

  /** The webhook's deliveries, newest first, each with its attempts. */
  async deliveries(id: string, page: PageQuery): Promise<Page<DeliveryInfo>> {
    await this.row(id);
    let q = this.db
      .selectFrom('deliveries')
      .innerJoin('events', 'events.id', 'deliveries.event_id')
      .select([
        'deliveries.id',
        'deliveries.status',
        'deliveries.next_attempt_at',
        'deliveries.created_at',
        'events.id as event_id',
        'events.type',
        'events.created_at as event_created_at',
      ])
      .where('deliveries.webhook_id', '=', id)
      .orderBy('deliveries.id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('deliveries.id', '<', page.startingAfter);
    const rows = await q.execute();
    const ids = rows.map((r) => r.id);
    const attempts = ids.length
      ? await this.db
          .selectFrom('delivery_attempts')
          .selectAll()
          .where('delivery_id', 'in', ids)
          .orderBy('id', 'asc')
          .execute()
      : [];
    return toPage(rows, page.limit, (r) => ({
      id: r.id,
      object: 'delivery' as const,
      event: { id: r.event_id, type: r.type, created_at: r.event_created_at },
      status: r.status as DeliveryInfo['status'],
      attempts: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({ at: a.at, status_code: a.status_code, duration_ms: a.duration_ms, error: a.error })),
      next_attempt_at: r.status === 'pending' ? r.next_attempt_at : null,
      created_at: r.created_at,
    }));
  }

  /** `POST /v1/webhooks/:id/test`: a `webhook.test` event to this webhook only, through the same outbox. */
  async test(id: string): Promise<{ event: Event; delivery_id: string }> {
    const hook = await this.get(id);
    const { event, deliveries } = await this.db
      .transaction()
      .execute((trx) => this.events.emit(trx, TEST_EVENT, hook.id, () => ({ object: hook }), hook.id));
    // `only` names the webhook, so the event is always written
    return { event: event!, delivery_id: deliveries[0] };
  }
}

/** Waits before attempt n+1 after n failures: 10 s doubling, at most 1 h, with a little jitter. */
export function backoffMs(failures: number): number {
  const base = Math.min(10_000 * 2 ** (failures - 1), 3_600_000);
  return Math.round(base * (0.9 + Math.random() * 0.2));
}

type Due = DeliveryRow & { url: string; secret: string; type: string; data: string; event_created_at: string };

export interface DispatcherOptions extends WebhookOptions {
  /** Attempts in flight at once, in all. */
  concurrency?: number;
  /** Attempts in flight at once to one webhook, counted over every process on the database. */
  perWebhook?: number;
  log?: (line: string) => void;
  /** This process's presence id (src/db/presence.ts): a delivery is claimed by one process at a time. */
  owner?: number;
  /** PostgreSQL: claims lock the webhook's row so that processes count its attempts in flight one at a time. */
  lockRows?: boolean;
}

export class Dispatcher {
  private readonly inFlight = new Set<string>();
  private readonly perHook = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private pumping = false;
  private launches = 0;
  private again = false;
  private stopped = false;
  private paused = false;
  private timer?: NodeJS.Timeout;
  private readonly concurrency: number;
  private readonly perWebhook: number;
  /** This process's presence id, written into each claim (a new one after the presence was lost). */
  owner: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly options: DispatcherOptions,
  ) {
    this.concurrency = options.concurrency ?? 16;
    this.perWebhook = options.perWebhook ?? 2;
    this.owner = options.owner ?? 0;
  }

  /** Delivers in the background: on every wake() and every `pollMs` for retries that came due. */
  start(pollMs = 1000): void {
    this.timer = setInterval(() => this.wake(), pollMs);
    this.timer.unref();
    this.wake();
  }

  private get halted(): boolean {
    return this.stopped || this.paused;
  }

  wake(): void {
    if (!this.halted)
      void this.pump().catch((err: unknown) =>
        this.options.log?.(`webhooks: ${err instanceof Error ? err.message : String(err)}`),
      );
  }

  /** Starts every due delivery there is room for; the first pending one per webhook and resource only. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        if (this.inFlight.size >= this.concurrency) break;
        for (const d of await this.due()) {
          if (this.halted || this.inFlight.size >= this.concurrency) break;
          if (this.inFlight.has(d.id) || (this.perHook.get(d.webhook_id) ?? 0) >= this.perWebhook) continue;
          if (await this.claim(d)) this.launch(d);
        }
      } while (this.again && !this.halted);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Takes the delivery for this process until its claim runs out (twice the POST timeout, and a
   * little): not when another process holds it, and not when the webhook has `perWebhook` attempts
   * in flight already, wherever they are.
   */
  private async claim(d: Due): Promise<boolean> {
    const at = this.clock.now();
    const now = iso(at);
    const until = iso(new Date(at.getTime() + 2 * this.options.timeoutMs + 30_000));
    // one statement: on SQLite it runs under the write lock, so processes count one at a time
    const take = (db: Db) =>
      db
        .updateTable('deliveries')
        .set({ claimed_by: this.owner, claimed_until: until })
        .where('id', '=', d.id)
        .where('status', '=', 'pending')
        .where((e) => e.or([e('claimed_until', 'is', null), e('claimed_until', '<=', now)]))
        .where(
          (e) =>
            e
              .selectFrom('deliveries as c')
              .select((c) => c.fn.countAll<number>().as('n'))
              .where('c.webhook_id', '=', d.webhook_id)
              .where('c.status', '=', 'pending')
              .where('c.claimed_until', '>', now),
          '<',
          this.perWebhook,
        )
        .executeTakeFirst();
    // PostgreSQL counts in each transaction's own snapshot: the webhook's row lock puts them in turn
    const r = this.options.lockRows
      ? await this.db.transaction().execute(async (trx) => {
          await trx.selectFrom('webhooks').select('id').where('id', '=', d.webhook_id).forUpdate().execute();
          return take(trx);
        })
      : await take(this.db);
    return Number(r.numUpdatedRows) > 0;
  }

  private async due(): Promise<Due[]> {
    const now = iso(this.clock.now());
    return await this.db
      .selectFrom('deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .innerJoin('events as e', 'e.id', 'd.event_id')
      .selectAll('d')
      .select(['w.url', 'w.secret', 'e.type', 'e.data', 'e.created_at as event_created_at'])
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .where((e) => e.or([e('d.claimed_until', 'is', null), e('d.claimed_until', '<=', now)]))
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('deliveries as p')
              .select('p.id')
              .whereRef('p.webhook_id', '=', 'd.webhook_id')
              .whereRef('p.resource_id', '=', 'd.resource_id')
              .where('p.status', '=', 'pending')
              .whereRef('p.id', '<', 'd.id'),
          ),
        ),
      )
      .orderBy('d.id', 'asc')
      .limit(this.concurrency * 4)
      .execute();
  }

  private launch(d: Due): void {
    this.launches++;
    this.inFlight.add(d.id);
    this.perHook.set(d.webhook_id, (this.perHook.get(d.webhook_id) ?? 0) + 1);
    const p = this.attempt(d)
      .catch((err: unknown) =>
        this.options.log?.(`webhooks: delivery ${d.id}: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        this.inFlight.delete(d.id);
        this.perHook.set(d.webhook_id, (this.perHook.get(d.webhook_id) ?? 1) - 1);
        this.running.delete(p);
        this.wake();
      });
    this.running.add(p);
  }

  /** One POST: the result is recorded before the next delivery for the same resource may go. */
  private async attempt(d: Due): Promise<void> {
    const event: Event = {
      id: d.event_id,
      object: 'event',
      type: d.type as Event['type'],
      created_at: d.event_created_at,
      data: JSON.parse(d.data) as Event['data'],
    };
    const body = JSON.stringify(event);
    const started = this.clock.now();
    const wall = Date.now();
    const result = await post(
      d.url,
      body,
      {
        'content-type': 'application/json',
        'user-agent': 'Paperlink-Webhooks/1',
        'paperlink-signature': sign(d.secret, body, Math.floor(started.getTime() / 1000)),
        'paperlink-event-id': event.id,
        'paperlink-event-type': event.type,
        'paperlink-delivery-id': d.id,
      },
      this.options,
    );
    const durationMs = Date.now() - wall;
    const now = this.clock.now();
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const failures = d.attempts + 1;
    const expired = now.getTime() - Date.parse(d.created_at) >= this.options.retryForMs;
    const status = ok ? 'succeeded' : expired ? 'failed' : 'pending';
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('delivery_attempts')
        .values({
          id: newId('dla', now),
          delivery_id: d.id,
          webhook_id: d.webhook_id,
          at: iso(started),
          status_code: result.status,
          duration_ms: durationMs,
          error: result.error,
        })
        .execute();
      await trx
        .updateTable('deliveries')
        .set((e) => ({
          status,
          // counted in the database: an attempt of a process presumed dead counts too, as its row does
          attempts: e('attempts', '+', 1),
          next_attempt_at:
            status === 'pending' ? iso(new Date(now.getTime() + backoffMs(failures))) : d.next_attempt_at,
          last_status_code: result.status,
          last_error: result.error,
          last_duration_ms: durationMs,
          updated_at: iso(now),
          claimed_by: null,
          claimed_until: null,
        }))
        .where('id', '=', d.id)
        .execute();
    });
    if (status === 'failed')
      this.options.log?.(
        `webhooks: gave up on delivery ${d.id} of ${event.type} to ${redact(d.url)} after ${failures} attempts: ${result.error ?? `HTTP ${result.status}`}`,
      );
  }

  /**
   * Delivers everything due now and waits for it (the Temporal activity, and tests). Returns when
   * the next pending delivery is due, or null when none is pending.
   */
  async drain(): Promise<string | null> {
    for (;;) {
      const launched = this.launches;
      await this.pump();
      await Promise.all([...this.running]);
      // nothing more could be started (what is due is another process's, or at its webhook's limit)
      if (this.launches === launched || !(await this.due()).some((d) => !this.inFlight.has(d.id))) break;
    }
    const next = await this.db
      .selectFrom('deliveries')
      .select('next_attempt_at')
      .where('status', '=', 'pending')
      .orderBy('next_attempt_at', 'asc')
      .limit(1)
      .executeTakeFirst();
    return next?.next_attempt_at ?? null;
  }

  /**
   * Claims no delivery until resume() (this process lost its presence: the others take its
   * deliveries over); resolves when the attempts in flight have ended and been recorded.
   */
  async pause(): Promise<void> {
    this.paused = true;
    await Promise.all([...this.running]);
  }

  resume(): void {
    this.paused = false;
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.running]);
  }
}

/** A URL as it may appear in logs: no query string (it may hold a token of the receiver's). */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid url)';
  }
}

/** POSTs the body; never throws: the outcome is a status code or an error text. */
function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: WebhookOptions,
): Promise<{ status: number | null; error: string | null }> {
  const problem = urlProblem(url, options.allowPrivate);
  if (problem) return Promise.resolve({ status: null, error: `the URL ${problem}` });
  return new Promise((resolve) => {
    const u = new URL(url);
    const lib = u.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (r: { status: number | null; error: string | null }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = lib.request(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: guardedLookup(options.allowPrivate),
      },
      (res) => {
        // the answer's body is not needed: read a little and let it go
        res.on('data', () => undefined);
        res.on('end', () =>
          finish({
            status: res.statusCode ?? null,
            error: res.statusCode && res.statusCode >= 200 && res.statusCode < 300 ? null : `HTTP ${res.statusCode}`,
          }),
        );
        res.on('error', (err) => finish({ status: res.statusCode ?? null, error: err.message }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: null, error: `no answer within ${options.timeoutMs} ms` });
    }, options.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ status: null, error: err.code === 'EPRIVATE' ? err.message : `${err.code ?? 'error'}: ${err.message}` }),
    );
    req.end(body);
  });
}
