/**
 * Events: what happened to documents, Magic Links and postcards, for webhooks. An event is
 * written in the same transaction as the change it tells about (an outbox), with one delivery
 * row per webhook that wants it, so an event is never lost and never sent for a change that was
 * rolled back. The dispatcher (src/webhooks) sends the deliveries.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import { afterCommit, PreparedQuery, type Db } from '../db';
import { BLOCKED } from '../db/schema';
import { sequentialId } from '../ids';

import { EVENT_TYPES, type EventType } from './types';

export { EVENT_TYPES, type EventType };
/** Sent only by POST /v1/webhooks/:id/test, only to that webhook. */
export const TEST_EVENT = 'webhook.test';

export interface Event {
  id: string;
  object: 'event';
  type: EventType | typeof TEST_EVENT;
  created_at: string;
  /** `object` is the resource as the API returns it; some types add more (e.g. `reason`). */
  data: { object: unknown } & Record<string, unknown>;
}

/**
 * Which of `webhookIds` have a pending delivery for `resourceId`: a new one for them waits behind
 * it (BLOCKED), as deliveries go in order per resource. One index probe per webhook, however many
 * wait for the resource.
 */
export async function waitingFor(db: Db, resourceId: string, webhookIds: string[]): Promise<Set<string>> {
  if (webhookIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('webhooks as w')
    .select('w.id')
    .where('w.id', 'in', webhookIds)
    .where((e) =>
      e.exists(
        e
          .selectFrom('deliveries as p')
          .select('p.id')
          .where('p.resource_id', '=', resourceId)
          .whereRef('p.webhook_id', '=', 'w.id')
          .where('p.status', '=', 'pending'),
      ),
    )
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** Why a link ended, on `magic_link.expired`. */
/** Why a Magic Link ended: its `ended_reason`, and the `reason` of its `magic_link.expired` event. */
export const EXPIRY_REASONS = [
  'time',
  'views',
  'ten_day_cap',
  'not_opened',
  'revoked',
  'document_deleted',
  'document_expired',
] as const;
export type ExpiryReason = (typeof EXPIRY_REASONS)[number];

export class Events {
  /** Called once the transaction that wrote an event has committed (the dispatcher wakes up; it polls as well). */
  onEmitted: () => void = () => undefined;

  private subscriptions?: PreparedQuery<Record<string, never>, { id: string; events: string }>;
  /**
   * The subscriptions as one transaction sees them, read once per transaction: a group commit
   * (src/db) emits an event for each of its writes, and on SQLite no other connection can write
   * while it holds the lock, so every emit in it would read the same rows. Nothing writes webhooks
   * in a transaction that emits (src/webhooks writes them in transactions of their own).
   */
  private readonly subscribedIn = new WeakMap<Db, Promise<{ id: string; events: string[] }[]>>();

  constructor(private readonly clock: Clock) {}

  /**
   * Writes the event inside `trx` (the transaction of the change) when a webhook is subscribed to
   * its type; the dispatcher writes a pending delivery for each such webhook later, off the
   * request (src/webhooks Dispatcher.fanOut), so a change costs one row however many webhooks
   * there are. `only` names one webhook (the test event), whose delivery is written at once.
   * `data` is called only when some webhook wants the event (it may read more in `trx`); without
   * one nothing is written and no event is returned.
   */
  async emit(
    trx: Db,
    type: Event['type'],
    resourceId: string,
    data: () => Event['data'] | Promise<Event['data']>,
    only?: string,
  ): Promise<{ event?: Event; deliveries: string[] }> {
    if (!only) return { event: (await this.emitEach(trx, type, [{ resourceId, data }]))[0], deliveries: [] };
    const now = this.clock.now();
    const wanted = await trx.selectFrom('webhooks').select('id').where('id', '=', only).execute();
    if (wanted.length === 0) return { deliveries: [] };
    const [event] = await this.write(trx, type, [{ resourceId, data }], 1);
    const id = sequentialId('dlv', now);
    const waits = (await waitingFor(trx, resourceId, [only])).has(only);
    await trx
      .insertInto('deliveries')
      .values({
        id,
        webhook_id: only,
        event_id: event.id,
        resource_id: resourceId,
        status: 'pending',
        attempts: 0,
        next_attempt_at: waits ? BLOCKED : event.created_at,
        created_at: event.created_at,
        updated_at: event.created_at,
      })
      .execute();
    return { event, deliveries: [id] };
  }

  /**
   * emit() for several changes of one type in one transaction (a burst of links expiring at once):
   * the events, in the order given, written in one statement when some webhook wants the type.
   */
  async emitEach(
    trx: Db,
    type: Event['type'],
    items: readonly { resourceId: string; data: () => Event['data'] | Promise<Event['data']> }[],
  ): Promise<Event[]> {
    if (items.length === 0) return [];
    const wanted = (await this.subscribed(trx)).filter((h) => h.events.includes('*') || h.events.includes(type));
    if (wanted.length === 0) return [];
    return this.write(trx, type, items, 0);
  }

  /** Writes the events (sequential ids: deliveries are written in the order of their events' ids, src/webhooks fanOut). */
  private async write(
    trx: Db,
    type: Event['type'],
    items: readonly { resourceId: string; data: () => Event['data'] | Promise<Event['data']> }[],
    fannedOut: 0 | 1,
  ): Promise<Event[]> {
    const now = this.clock.now();
    const events: Event[] = [];
    for (const item of items)
      events.push({
        id: sequentialId('evt', now),
        object: 'event',
        type,
        created_at: iso(now),
        data: await item.data(),
      });
    // a thousand rows a statement: PostgreSQL takes at most 65,535 parameters
    for (let at = 0; at < events.length; at += 1000)
      await trx
        .insertInto('events')
        .values(
          events.slice(at, at + 1000).map((event, i) => ({
            id: event.id,
            type,
            resource_id: items[at + i].resourceId,
            data: JSON.stringify(event.data),
            created_at: event.created_at,
            fanned_out: fannedOut,
          })),
        )
        .execute();
    // after the commit: a dispatcher that looked before it would find nothing, and sleep
    afterCommit(trx, () => this.onEmitted());
    return events;
  }

  private subscribed(trx: Db): Promise<{ id: string; events: string[] }[]> {
    // every change asks this: compiled once, with the first transaction (they all share a dialect)
    const query = (this.subscriptions ??= new PreparedQuery(trx, (d) =>
      d.selectFrom('webhooks').select(['id', 'events']),
    ));
    let hooks = this.subscribedIn.get(trx);
    if (!hooks) {
      hooks = query
        .execute(trx, {})
        .then((r) => r.rows.map((h) => ({ id: h.id, events: JSON.parse(h.events) as string[] })));
      // only a transaction: the database itself sees webhooks come and go
      if (trx.isTransaction) this.subscribedIn.set(trx, hooks);
    }
    return hooks;
  }
}
