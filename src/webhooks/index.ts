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
import type { Insertable } from 'kysely';
import type { DeliveriesTable, DeliveryRow, WebhookRow } from '../db/schema';
import { ConflictError, NotFoundError, ValidationError, type ErrorDetail } from '../errors';
import { BLOCKED } from '../db/schema';
import { DEFAULT_MAX_SUBSCRIPTIONS } from '../config';
import { EVENT_TYPES, TEST_EVENT, waitingFor, type Event, type Events } from '../events';
import { newId, sequentialId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import { randomToken } from '../secrets';
import { guardedLookup, urlProblem } from '../net/guard';
import { sign } from './signature';
import { isObject } from '../guards';
import { POLICIES, waitMs } from '../flows/policies';
import { freeing, isFree, isHeld, LEASES, taking, type Held } from '../jobs/lease';
import type { Log } from '../log';
import { webhookAttempts } from '../metrics';
import { backlogOf, Runner, type Backlog } from '../jobs/runner';

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
  /** Subscriptions there may be at once (WEBHOOK_MAX_SUBSCRIPTIONS): each event is a delivery to each. */
  maxSubscriptions?: number;
}

const MAX_DESCRIPTION = 500;
/** The settings row a webhook create writes first, so that creates count and insert one at a time. */
const LIMIT_LOCK = 'webhook_subscriptions';
/** Deliveries one fan-out transaction writes at most (src/webhooks Dispatcher.fanOut). */
const FAN_OUT_ROWS = 500;

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
    for (const field of Object.keys(body))
      if (!['url', 'events', 'description'].includes(field))
        details.push({ field, message: 'is not a webhook field (url, events, description)', code: 'unknown_field' });
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
        code: typeof d === 'string' ? 'invalid' : 'type',
      });
    if (details.length)
      throw new ValidationError('The webhook is not valid; see details for each field to fix.', details);
    const most = this.options.maxSubscriptions ?? DEFAULT_MAX_SUBSCRIPTIONS;
    const now = this.clock.now();
    const row: WebhookRow = {
      id: newId('wh', now),
      url: body.url as string,
      events: JSON.stringify(events),
      description: typeof d === 'string' ? d : null,
      secret: `whsec_${randomToken(24)}`,
      created_at: iso(now),
      failures_in_a_row: 0,
      resting_until: null,
    };
    // counted in the transaction that inserts, one create at a time: the write to the limit's
    // settings row holds it until the commit (PostgreSQL's row lock; SQLite's one writer), so two
    // creates at once never both see room for one
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('settings')
        .values({ key: LIMIT_LOCK, value: '1' })
        .onConflict((c) => c.column('key').doUpdateSet({ value: '1' }))
        .execute();
      const held = await trx
        .selectFrom('webhooks')
        .select((e) => e.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      if (Number(held.n) >= most)
        throw new ConflictError(
          'webhook_limit_reached',
          `There are ${Number(held.n)} webhook subscriptions, the most this server keeps (WEBHOOK_MAX_SUBSCRIPTIONS=${most}). Delete one you no longer need, or subscribe one endpoint to more event types.`,
        );
      await trx.insertInto('webhooks').values(row).execute();
    });
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
      // null too for one waiting behind an earlier delivery for the same resource
      next_attempt_at: r.status === 'pending' && r.next_attempt_at !== BLOCKED ? r.next_attempt_at : null,
      created_at: r.created_at,
    }));
  }

  /** `POST /v1/webhooks/:id/test`: a `webhook.test` event to this webhook only, through the same outbox. */
  async test(id: string): Promise<{ event: Event; delivery_id: string }> {
    const hook = await this.get(id);
    // asked to try now: an endpoint resting after failures is woken for it
    await this.db.updateTable('webhooks').set({ resting_until: null }).where('id', '=', id).execute();
    const { event, deliveries } = await this.db
      .transaction()
      .execute((trx) => this.events.emit(trx, TEST_EVENT, hook.id, () => ({ object: hook }), hook.id));
    // `only` names the webhook, so the event is always written
    return { event: event!, delivery_id: deliveries[0] };
  }
}

/** Waits before attempt n+1 after n failures: the policy's wait (10 s doubling, at most 1 h), with a little jitter. */
export function backoffMs(failures: number): number {
  return Math.round(waitMs(POLICIES.webhook_delivery, failures) * (0.9 + Math.random() * 0.2));
}

type Due = DeliveryRow & {
  url: string;
  secret: string;
  failures_in_a_row: number;
  type: string;
  data: string;
  event_created_at: string;
};

/** The lease on each attempt of a delivery (src/jobs/lease.ts). */
const ATTEMPT = LEASES.webhook_delivery;

export interface DispatcherOptions extends WebhookOptions {
  /** Attempts in flight at once, in all. */
  concurrency?: number;
  /** Attempts in flight at once to one webhook, counted over every process on the database. */
  perWebhook?: number;
  log?: Log;
  /** This process's presence id (src/db/presence.ts): a delivery is claimed by one process at a time. */
  owner?: number;
  /** PostgreSQL: claims lock the webhook's row so that processes count its attempts in flight one at a time. */
  lockRows?: boolean;
  /** The process's runner (src/jobs/runner.ts), which runs the attempts as its kind `webhook_delivery`; one of its own when not given. */
  runner?: Runner;
}

/** A delivery as taken: its lease, and what the attempt sends. */
type Taken = Held & { delivery: Due };

/** The runner's name of webhook delivery. */
const KIND = 'webhook_delivery';

export class Dispatcher {
  /** Attempts in flight in this process, per webhook. */
  private readonly perHook = new Map<string, number>();
  private readonly perWebhook: number;
  private readonly runner: Runner;
  /** This process's presence id, written into each claim (a new one after the presence was lost). */
  owner: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly options: DispatcherOptions,
  ) {
    this.perWebhook = options.perWebhook ?? 2;
    this.owner = options.owner ?? 0;
    this.runner =
      options.runner ??
      new Runner(clock, (where, err) =>
        options.log?.(`webhooks: ${where}: ${err instanceof Error ? err.message : String(err)}`, { err }),
      );
    this.runner.add<Taken>({
      name: KIND,
      concurrency: options.concurrency ?? 16,
      // the receiver waits on the network, not on this process: while requests keep it busy, a batch after each pause
      whileBusy: options.concurrency ?? 16,
      prepare: async () => (await this.fanOut()) > 0,
      take: (_now, n, running) => this.take(n, running),
      run: (taken) => this.attempt(taken),
      next: () => this.nextDue(),
      backlog: (now) => this.backlog(now),
    });
  }

  /** Deliveries due at `now` that no process is attempting, to endpoints not resting, and since when the oldest is due (for the metrics). */
  private async backlog(now: Date): Promise<Backlog> {
    const at = iso(now);
    // as due() finds them: an endpoint that rests is not due (its deliveries wait by design)
    const row = await this.db
      .selectFrom('deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .select((e) => [e.fn.countAll<number | string>().as('n'), e.fn.min('d.next_attempt_at').as('oldest')])
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', at)
      .where(isFree(ATTEMPT, now))
      .where((e) => e.or([e('w.resting_until', 'is', null), e('w.resting_until', '<=', at)]))
      .executeTakeFirst();
    return backlogOf(row);
  }

  /**
   * When to look again: when the first pending delivery is due, but not sooner than a second from
   * now (what is due now may be held by another process, or wait for a resting endpoint).
   */
  private async nextDue(): Promise<Date | undefined> {
    const next = await this.firstPending();
    return next === null ? undefined : new Date(Math.max(Date.parse(next), this.clock.now().getTime() + 1000));
  }

  /** When the first pending delivery is due (ISO), or null when none is pending. */
  private async firstPending(): Promise<string | null> {
    const next = await this.db
      .selectFrom('deliveries')
      .select('next_attempt_at')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<', BLOCKED)
      .orderBy('next_attempt_at', 'asc')
      .limit(1)
      .executeTakeFirst();
    return next?.next_attempt_at ?? null;
  }

  /**
   * Writes the deliveries of events emitted since, oldest first: one for each webhook subscribed
   * to the event's type when it was written, due now, or waiting (BLOCKED) behind a pending one
   * for the same webhook and resource. At most FAN_OUT_ROWS rows a transaction, which takes its
   * events over (another process skips them); returns how many events it took (0: none left).
   * On PostgreSQL it holds the webhooks' rows, as recording an attempt holds its webhook's, so a
   * delivery is never written waiting behind one that is being finished unseen.
   */
  async fanOut(): Promise<number> {
    // every pass asks: a read by the partial index, before any write transaction (SQLite's lock)
    const waiting = await this.db
      .selectFrom('events')
      .select('id')
      .where('fanned_out', '=', 0)
      .limit(1)
      .executeTakeFirst();
    if (!waiting) return 0;
    return this.db.transaction().execute(async (trx) => {
      const hooks = (
        await trx
          .selectFrom('webhooks')
          .select(['id', 'events', 'created_at'])
          // in one order everywhere: two processes fanning out lock the rows in turn, never crosswise
          .orderBy('id', 'asc')
          .$if(this.options.lockRows === true, (q) => q.forUpdate())
          .execute()
      ).map((h) => ({ ...h, events: JSON.parse(h.events) as string[] }));
      const batch = await trx
        .selectFrom('events')
        .select(['id', 'type', 'resource_id', 'created_at'])
        .where('fanned_out', '=', 0)
        .orderBy('id', 'asc')
        .limit(Math.max(1, Math.floor(FAN_OUT_ROWS / Math.max(1, hooks.length))))
        .execute();
      if (batch.length === 0) return 0;
      const taken = new Set(
        (
          await trx
            .updateTable('events')
            .set({ fanned_out: 1 })
            .where(
              'id',
              'in',
              batch.map((e) => e.id),
            )
            .where('fanned_out', '=', 0)
            .returning('id')
            .execute()
        ).map((r) => r.id),
      );
      const now = this.clock.now();
      // webhook and resource pairs given a pending delivery in this batch
      const given = new Set<string>();
      const rows: Insertable<DeliveriesTable>[] = [];
      for (const e of batch) {
        if (!taken.has(e.id)) continue;
        const wanted = hooks.filter(
          (h) => h.created_at <= e.created_at && (h.events.includes('*') || h.events.includes(e.type)),
        );
        const waiting = await waitingFor(
          trx,
          e.resource_id,
          wanted.filter((h) => !given.has(`${h.id} ${e.resource_id}`)).map((h) => h.id),
        );
        for (const h of wanted) {
          const pair = `${h.id} ${e.resource_id}`;
          rows.push({
            id: sequentialId('dlv', now),
            webhook_id: h.id,
            event_id: e.id,
            resource_id: e.resource_id,
            status: 'pending',
            attempts: 0,
            next_attempt_at: given.has(pair) || waiting.has(h.id) ? BLOCKED : iso(now),
            // the retry window counts from the event
            created_at: e.created_at,
            updated_at: iso(now),
          });
          given.add(pair);
        }
      }
      for (let i = 0; i < rows.length; i += 500)
        await trx
          .insertInto('deliveries')
          .values(rows.slice(i, i + 500))
          .execute();
      return batch.length;
    });
  }

  /** An event was written here: its deliveries go now. */
  wake(): void {
    this.runner.poke(KIND);
  }

  /**
   * Up to `limit` due deliveries, each claimed for this process: not one in flight here, and not
   * past its webhook's attempts in flight (`perWebhook`).
   */
  private async take(limit: number, running: ReadonlySet<string>): Promise<Taken[]> {
    const taken: Taken[] = [];
    for (const d of await this.due()) {
      if (taken.length >= limit) break;
      if (running.has(d.id) || (this.perHook.get(d.webhook_id) ?? 0) >= this.perWebhook) continue;
      let claim;
      try {
        claim = await this.claim(d);
      } catch (err) {
        // what it claimed before the failure is attempted (and counted back when it ends)
        if (taken.length === 0) throw err;
        this.options.log?.(`webhooks: claiming delivery ${d.id}: ${err instanceof Error ? err.message : String(err)}`, {
          err,
          delivery_id: d.id,
          webhook_id: d.webhook_id,
        });
        break;
      }
      if (!claim) continue;
      this.perHook.set(d.webhook_id, (this.perHook.get(d.webhook_id) ?? 0) + 1);
      taken.push({ ...claim, delivery: d });
    }
    return taken;
  }

  /**
   * Takes the delivery for this process until its claim runs out (twice the POST timeout, and a
   * little): not when another process holds it, and not when the webhook has `perWebhook` attempts
   * in flight already, wherever they are. Returns the lease, whose epoch is also its fence: the
   * attempt's outcome is written only while the row still holds the lease it took.
   */
  private async claim(d: Due): Promise<Held | undefined> {
    const at = this.clock.now();
    const now = iso(at);
    const until = new Date(at.getTime() + 2 * this.options.timeoutMs + 30_000);
    // one statement: on SQLite it runs under the write lock, so processes count one at a time
    const take = (db: Db) =>
      db
        .updateTable('deliveries')
        .set(taking(ATTEMPT, this.owner, until))
        .where('id', '=', d.id)
        .where('status', '=', 'pending')
        .where(isFree(ATTEMPT, at))
        .where(
          (e) =>
            e
              .selectFrom('deliveries as c')
              .select((c) => c.fn.countAll<number>().as('n'))
              // only a pending delivery is ever claimed (an attempt's end clears it): found by the claim's time
              .where('c.claimed_until', '>', now)
              .where('c.webhook_id', '=', d.webhook_id),
          '<',
          this.perWebhook,
        )
        .returning('claimed_epoch')
        .executeTakeFirst();
    // PostgreSQL counts in each transaction's own snapshot: the webhook's row lock puts them in turn
    const r = this.options.lockRows
      ? await this.db.transaction().execute(async (trx) => {
          await trx.selectFrom('webhooks').select('id').where('id', '=', d.webhook_id).forUpdate().execute();
          return take(trx);
        })
      : await take(this.db);
    return r && { id: d.id, epoch: r.claimed_epoch };
  }

  /**
   * What may be attempted now, oldest due first: for each webhook whose endpoint is not resting,
   * the first due delivery no process holds that no earlier pending delivery for the same
   * resource waits before. Found per webhook through the (webhook, status, due) index, so the cost
   * is the number of webhooks, not the backlog behind them: a resting endpoint's is never read.
   */
  private async due(): Promise<Due[]> {
    const at = this.clock.now();
    const now = iso(at);
    const heads = await this.db
      .selectFrom('webhooks as w')
      .select((eb) => [
        eb
          .selectFrom('deliveries as q')
          .select('q.id')
          .whereRef('q.webhook_id', '=', 'w.id')
          .where('q.status', '=', 'pending')
          .where('q.next_attempt_at', '<=', now)
          .where(isFree(ATTEMPT, at))
          .where((e) =>
            e.not(
              e.exists(
                e
                  .selectFrom('deliveries as p')
                  .select('p.id')
                  .whereRef('p.resource_id', '=', 'q.resource_id')
                  .whereRef('p.webhook_id', '=', 'q.webhook_id')
                  .where('p.status', '=', 'pending')
                  .whereRef('p.id', '<', 'q.id'),
              ),
            ),
          )
          .orderBy('q.next_attempt_at', 'asc')
          .limit(1)
          .as('head'),
      ])
      .where((e) => e.or([e('w.resting_until', 'is', null), e('w.resting_until', '<=', now)]))
      .execute();
    const ids = heads.map((h) => h.head).filter((id): id is string => id !== null);
    if (ids.length === 0) return [];
    return await this.db
      .selectFrom('deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .innerJoin('events as e', 'e.id', 'd.event_id')
      .selectAll('d')
      .select(['w.url', 'w.secret', 'w.failures_in_a_row', 'e.type', 'e.data', 'e.created_at as event_created_at'])
      .where('d.id', 'in', ids)
      .orderBy('d.next_attempt_at', 'asc')
      .execute();
  }

  /**
   * One POST: the result is recorded before the next delivery for the same resource may go. The
   * record is fenced by the lease's epoch: when the lease
   * ran out and another dispatcher took the delivery over (or a sweep freed it from a process
   * presumed dead), this attempt is kept in the delivery's history and changes nothing else, so a
   * late timeout never turns the other's `succeeded` back into `pending`.
   */
  private async attempt(taken: Taken): Promise<void> {
    const d = taken.delivery;
    try {
      await this.post(d, taken);
    } catch (err) {
      // its lease runs out and it is tried again; the error is logged with what it concerns
      this.options.log?.(`webhooks: delivery ${d.id}: ${err instanceof Error ? err.message : String(err)}`, {
        err,
        delivery_id: d.id,
        webhook_id: d.webhook_id,
      });
    } finally {
      this.perHook.set(taken.delivery.webhook_id, (this.perHook.get(taken.delivery.webhook_id) ?? 1) - 1);
    }
  }

  private async post(d: Due, claim: Held): Promise<void> {
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
    const held = await this.db.transaction().execute(async (trx) => {
      // PostgreSQL: in turn with fanOut, which writes what waits behind this delivery
      if (this.options.lockRows)
        await trx.selectFrom('webhooks').select('id').where('id', '=', d.webhook_id).forUpdate().execute();
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
      const recorded = await trx
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
          ...freeing(ATTEMPT),
        }))
        .where('id', '=', d.id)
        .where(isHeld(ATTEMPT, claim.epoch))
        .executeTakeFirst();
      // the claim was lost: whoever holds the delivery now records its own outcome
      if (Number(recorded.numUpdatedRows) === 0) return false;
      // done: the next delivery for the same webhook and resource may go
      if (status !== 'pending') await unblockNext(trx, d.webhook_id, d.resource_id, iso(now));
      // an endpoint that answers after failing is awake again; one that fails rests
      if (!ok || d.failures_in_a_row > 0) await rest(trx, d.webhook_id, ok, now);
      return true;
    });
    if (!held) {
      this.options.log?.(
        `webhooks: delivery ${d.id}: its claim ran out during the attempt and another took it over; this attempt's outcome (${result.error ?? `HTTP ${result.status}`}) is in its history only`,
        { level: 'warn', delivery_id: d.id, webhook_id: d.webhook_id },
      );
      return;
    }
    webhookAttempts.inc({ outcome: ok ? 'delivered' : status === 'failed' ? 'gave_up' : 'retrying' });
    if (status === 'failed')
      this.options.log?.(
        `webhooks: gave up on delivery ${d.id} of ${event.type} to ${redact(d.url)} after ${failures} attempts: ${result.error ?? `HTTP ${result.status}`}`,
        { level: 'error', delivery_id: d.id, webhook_id: d.webhook_id, event_id: event.id, event_type: event.type },
      );
  }

  /**
   * Delivers everything due now and waits for it (the Temporal activity, and tests). Returns when
   * the next pending delivery is due, or null when none is pending.
   */
  async drain(): Promise<string | null> {
    await this.runner.drain([KIND]);
    return this.firstPending();
  }

  /**
   * Claims no delivery until resume() (this process lost its presence: the others take its
   * deliveries over; the runner takes no work of any kind meanwhile); resolves when the attempts in
   * flight have ended and been recorded.
   */
  pause(): Promise<void> {
    return this.runner.fence();
  }

  resume(): void {
    this.runner.unfence();
  }
}

/**
 * An endpoint that answered is tried as soon as its deliveries are due. One that failed rests, with
 * every delivery waiting for it, for the back-off of its failures in a row (the least the jitter
 * allows, so a delivery that failed as often is never held past its own time): a dead endpoint is
 * tried once per back-off, not once per delivery waiting for it, and a backlog costs its
 * deliveries time, not the server's CPU (Dispatcher.due never reads a resting endpoint's).
 */
async function rest(db: Db, webhookId: string, answered: boolean, now: Date): Promise<void> {
  if (answered) {
    await db
      .updateTable('webhooks')
      .set({ failures_in_a_row: 0, resting_until: null })
      .where('id', '=', webhookId)
      .where('failures_in_a_row', '>', 0)
      .execute();
    return;
  }
  const hook = await db
    .updateTable('webhooks')
    .set((e) => ({ failures_in_a_row: e('failures_in_a_row', '+', 1) }))
    .where('id', '=', webhookId)
    .returning('failures_in_a_row')
    .executeTakeFirst();
  if (!hook) return;
  const until = iso(
    new Date(now.getTime() + Math.round(0.9 * waitMs(POLICIES.webhook_delivery, hook.failures_in_a_row))),
  );
  await db.updateTable('webhooks').set({ resting_until: until }).where('id', '=', webhookId).execute();
}

/** Sets due the first pending delivery for this webhook and resource, if it waits (BLOCKED). */
async function unblockNext(db: Db, webhookId: string, resourceId: string, now: string): Promise<void> {
  const next = await db
    .selectFrom('deliveries')
    .select(['id', 'next_attempt_at'])
    .where('webhook_id', '=', webhookId)
    .where('resource_id', '=', resourceId)
    .where('status', '=', 'pending')
    .orderBy('id', 'asc')
    .limit(1)
    .executeTakeFirst();
  if (next?.next_attempt_at === BLOCKED)
    await db.updateTable('deliveries').set({ next_attempt_at: now }).where('id', '=', next.id).execute();
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
