/**
 * Housekeeping at scale: what expired is deleted a batch at a time (PURGE_BATCH rows a statement,
 * found by an index), so it never holds the write lock for long however much there is, and what
 * has not expired stays.
 */
import { FakeClock } from '../../src/clock';
import { PURGE_BATCH } from '../../src/db';
import { DEFAULT_HISTORY } from '../../src/config';
import { newId } from '../../src/ids';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('housekeeping on %s', (backend) => {
  let t: TestService;
  const clock = new FakeClock('2026-11-26T10:00:00Z');
  const statements: string[] = [];

  beforeAll(async () => {
    t = await testService({ backend, clock, service: { beforeStatement: (sql) => void statements.push(sql) } });
  });
  afterAll(() => t?.stop());

  it('deletes expired idempotency keys in batches of PURGE_BATCH, keeping the live ones', async () => {
    const expired = 2 * PURGE_BATCH + 500;
    const rows = (n: number, prefix: string, expires: string) =>
      Array.from({ length: n }, (_, i) => ({
        scope: 'key_test:POST /v1/generate',
        key: `${prefix}-${i}`,
        request_hash: 'h',
        state: 'done',
        status: 201,
        body: '{}',
        created_at: '2026-11-25T10:00:00.000Z',
        expires_at: expires,
      }));
    const db = t.service.database.db;
    // the housekeeping the service ran at its start is over (a call waits for the one under way):
    // on a busy machine it was still deleting when the rows below went in, and took a batch of them
    await t.service.housekeeping();
    for (let i = 0; i < expired; i += 500)
      await db
        .insertInto('idempotency')
        .values(rows(Math.min(500, expired - i), `old${i}`, '2026-11-26T09:00:00.000Z'))
        .execute();
    await db
      .insertInto('idempotency')
      .values(rows(10, 'live', '2026-11-27T10:00:00.000Z'))
      .execute();
    statements.length = 0;
    const purged = await t.service.housekeeping();
    expect(purged.idempotency).toBe(expired);
    // three batches: two full, one with the rest (it deletes fewer, so it is the last)
    expect(statements.filter((s) => /^\s*delete from "idempotency"/i.test(s))).toHaveLength(3);
    const left = await db.selectFrom('idempotency').select('key').execute();
    expect(left.map((r) => r.key).sort()).toEqual(
      rows(10, 'live', '')
        .map((r) => r.key)
        .sort(),
    );
  });

  it('deletes access-log entries and delivered events older than their retention, keeping what is newer or still pending', async () => {
    const db = t.service.database.db;
    await t.service.housekeeping();
    const DAY = 86_400_000;
    const ago = (days: number) => new Date(clock.now().getTime() - days * DAY);
    const old = ago(DEFAULT_HISTORY.eventDays + 1);
    const recent = ago(DEFAULT_HISTORY.eventDays - 1);
    // an access log of PURGE_BATCH + 5 old entries and 3 recent ones
    const entry = (at: Date) => ({
      id: newId('ev', at),
      link_id: 'ml_history',
      at: at.toISOString(),
      kind: 'opened',
      outcome: 'denied',
      ip: null,
      user_agent: null,
      email: null,
    });
    const oldEntries = Array.from({ length: PURGE_BATCH + 5 }, () => entry(ago(DEFAULT_HISTORY.accessLogDays + 1)));
    for (let i = 0; i < oldEntries.length; i += 500)
      await db
        .insertInto('link_events')
        .values(oldEntries.slice(i, i + 500))
        .execute();
    const kept = [entry(recent), entry(recent), entry(recent)];
    await db.insertInto('link_events').values(kept).execute();
    // events: old and delivered (gone, with its delivery and attempts), old and still pending (kept),
    // old and not yet written out to its subscribers (kept), recent and delivered (kept)
    const event = (at: Date, fanned = 1) => ({
      id: newId('evt', at),
      type: 'document.generated',
      resource_id: 'doc_history',
      data: '{}',
      created_at: at.toISOString(),
      fanned_out: fanned,
    });
    const delivered = event(old);
    const pending = event(old);
    const unwritten = event(old, 0);
    const fresh = event(recent);
    await db.insertInto('events').values([delivered, pending, unwritten, fresh]).execute();
    const delivery = (e: { id: string; created_at: string }, status: string) => ({
      id: newId('dlv', new Date(e.created_at)),
      webhook_id: 'wh_history',
      event_id: e.id,
      resource_id: 'doc_history',
      status,
      attempts: 1,
      next_attempt_at: e.created_at,
      last_status_code: null,
      last_error: null,
      last_duration_ms: null,
      created_at: e.created_at,
      updated_at: e.created_at,
      claimed_by: null,
      claimed_until: null,
    });
    const deliveries = [delivery(delivered, 'succeeded'), delivery(pending, 'pending'), delivery(fresh, 'failed')];
    await db.insertInto('deliveries').values(deliveries).execute();
    await db
      .insertInto('delivery_attempts')
      .values(
        deliveries.map((d) => ({
          id: newId('dla', new Date(d.created_at)),
          delivery_id: d.id,
          webhook_id: d.webhook_id,
          at: d.created_at,
          status_code: 500,
          duration_ms: 5,
          error: null,
        })),
      )
      .execute();

    const purged = await t.service.housekeeping();
    expect(purged).toMatchObject({ access_log: oldEntries.length, events: 1 });
    const ids = async (table: 'link_events' | 'events' | 'deliveries') =>
      (
        await db
          .selectFrom(table)
          .select('id')
          .where(
            'id',
            'in',
            [...kept, ...oldEntries, delivered, pending, unwritten, fresh, ...deliveries].map((r) => r.id),
          )
          .execute()
      )
        .map((r) => r.id)
        .sort();
    expect(await ids('link_events')).toEqual(kept.map((r) => r.id).sort());
    expect(await ids('events')).toEqual([pending.id, unwritten.id, fresh.id].sort());
    expect(await ids('deliveries')).toEqual([deliveries[1].id, deliveries[2].id].sort());
    const attempts = await db
      .selectFrom('delivery_attempts')
      .select('delivery_id')
      .where('webhook_id', '=', 'wh_history')
      .execute();
    expect(attempts.map((a) => a.delivery_id).sort()).toEqual([deliveries[1].id, deliveries[2].id].sort());
  });
});
