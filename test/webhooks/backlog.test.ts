/**
 * Webhook fan-out that cannot take the service down: subscriptions are capped; a change writes
 * its event only, and the dispatcher writes the deliveries later; an endpoint that fails rests
 * with every delivery waiting for it, so a dead one is tried once per back-off, not once per
 * delivery held for it. (bench/webhooks.js measures the API under 300 dead subscriptions.)
 */
import { FakeClock } from '../../src/clock';
import { Dispatcher } from '../../src/webhooks';
import { startReceiver, type Receiver } from '../support/receiver';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('a webhook backlog on %s', (backend) => {
  let t: TestService;
  let rx: Receiver;
  const clock = new FakeClock('2026-11-22T10:00:00Z');

  beforeAll(async () => {
    rx = await startReceiver();
    t = await testService({
      backend,
      clock,
      config: { webhookAllowPrivate: true, webhookTimeoutMs: 500, webhookMaxSubscriptions: 3 },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await rx?.stop();
  });

  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { 'x-service-api-token': t.key }, payload: payload as object });
  const subscribe = async (path: string) => api('POST', '/v1/webhooks', { url: `${rx.url}${path}`, events: '*' });
  const emit = (ids: string[]) =>
    Promise.all(
      ids.map((id) =>
        t.service.database.inTransaction((trx) =>
          t.service.events.emit(trx, 'postcard.received', id, () => ({ object: { id } })),
        ),
      ),
    );
  const count = async (table: 'deliveries' | 'events') =>
    Number(
      (
        await t.service.database.db
          .selectFrom(table)
          .select((e) => e.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('refuses a subscription past WEBHOOK_MAX_SUBSCRIPTIONS with 409 webhook_limit_reached', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await subscribe(`/cap/${i}`);
      expect(res.statusCode).toBe(201);
      made.push(res.json().id as string);
    }
    const over = await subscribe('/cap/3');
    expect(over.statusCode).toBe(409);
    expect(over.json().error.code).toBe('webhook_limit_reached');
    // one deleted, one more may be made
    await api('DELETE', `/v1/webhooks/${made[0]}`);
    const again = await subscribe('/cap/4');
    expect(again.statusCode).toBe(201);
    for (const id of [...made.slice(1), again.json().id as string]) await api('DELETE', `/v1/webhooks/${id}`);
  });

  it('writes one event for a change however many webhooks want it; the dispatcher writes their deliveries', async () => {
    const hooks: string[] = [];
    for (let i = 0; i < 3; i++) hooks.push((await subscribe(`/fan/${i}`)).json().id as string);
    // the background stands still: what is written is what the change wrote
    await t.service.dispatcher.pause();
    const [events, deliveries] = [await count('events'), await count('deliveries')];
    await emit(['pc_fan_1', 'pc_fan_2']);
    expect(await count('events')).toBe(events + 2);
    expect(await count('deliveries')).toBe(deliveries);
    t.service.dispatcher.resume();
    while ((await t.service.dispatcher.fanOut()) > 0);
    expect(await count('deliveries')).toBe(deliveries + 6);
    // each event's deliveries once, whoever fans out again
    expect(await t.service.dispatcher.fanOut()).toBe(0);
    expect(await count('deliveries')).toBe(deliveries + 6);
    await t.service.dispatcher.drain();
    expect(rx.received.filter((r) => r.event.data.object.id === 'pc_fan_1')).toHaveLength(3);
    for (const id of hooks) await api('DELETE', `/v1/webhooks/${id}`);
    rx.received.length = 0;
  });

  it('tries a dead endpoint once per back-off, not once per delivery waiting for it, then delivers them all', async () => {
    const hook = (await subscribe('/dead')).json().id as string;
    rx.respond = () => 500;
    const ids = Array.from({ length: 20 }, (_, i) => `pc_dead_${String(i).padStart(2, '0')}`);
    await emit(ids);
    await t.service.dispatcher.drain();
    // at most its two attempts in flight at once (perWebhook) before it rests
    const tried = rx.received.length;
    expect(tried).toBeGreaterThanOrEqual(1);
    expect(tried).toBeLessThanOrEqual(2);
    const page = (await api('GET', `/v1/webhooks/${hook}/deliveries?limit=100`)).json().data as {
      status: string;
      next_attempt_at: string | null;
    }[];
    expect(page).toHaveLength(20);
    expect(page.every((d) => d.status === 'pending')).toBe(true);
    // a drain while it rests tries nothing
    clock.advance(5_000);
    await t.service.dispatcher.drain();
    expect(rx.received).toHaveLength(tried);
    // it answers again: once its rest is over, every delivery goes, each once
    rx.respond = () => 200;
    clock.advance(60_000);
    for (let i = 0; i < 5 && rx.received.length < tried + 20; i++) await t.service.dispatcher.drain();
    const delivered = rx.received.slice(tried).map((r) => r.event.data.object.id as string);
    expect([...delivered].sort()).toEqual(ids);
    await api('DELETE', `/v1/webhooks/${hook}`);
  });

  it("records a late attempt's outcome only while it holds the delivery: a timeout after another dispatcher's 200 leaves it succeeded", async () => {
    const hook = (await subscribe('/fence')).json().id as string;
    await t.service.dispatcher.pause();
    // two dispatchers on one database, as two processes: A's POST hangs past its claim
    const options = { allowPrivate: true, retryForMs: 24 * 3600_000, lockRows: backend === 'postgres' };
    const a = new Dispatcher(t.service.database.db, clock, { ...options, timeoutMs: 60_000, owner: 1001 });
    const b = new Dispatcher(t.service.database.db, clock, { ...options, timeoutMs: 500, owner: 1002 });
    let answerA!: (status: number) => void;
    const tried = rx.received.length;
    rx.respond = (r) =>
      r.headers['paperlink-event-id'] && rx.received.length - tried === 1
        ? new Promise<number>((resolve) => (answerA = resolve))
        : 200;
    try {
      await emit(['pc_fence_1']);
      while ((await a.fanOut()) > 0);
      const aDone = a.drain();
      while (rx.received.length - tried < 1) await new Promise((r) => setImmediate(r));
      // A's claim runs out (twice its timeout and 30 s); B takes the delivery over, and the receiver takes it
      clock.advance(2 * 60_000 + 30_001);
      await b.drain();
      expect(rx.received.length - tried).toBe(2);
      // then A's POST ends in a 500: its outcome is history only
      answerA(500);
      await aDone;
      const row = await t.service.database.db
        .selectFrom('deliveries')
        .select(['status', 'attempts', 'claimed_by'])
        .where('webhook_id', '=', hook)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'succeeded', attempts: 1, claimed_by: null });
      const history = (await api('GET', `/v1/webhooks/${hook}/deliveries`)).json().data[0].attempts;
      expect(history.map((h: { status_code: number }) => h.status_code).sort()).toEqual([200, 500]);
      // nothing is due again, however long anyone waits: no third POST
      clock.advance(24 * 3600_000);
      await a.drain();
      await b.drain();
      expect(rx.received.length - tried).toBe(2);
    } finally {
      rx.respond = () => 200;
      t.service.dispatcher.resume();
      await api('DELETE', `/v1/webhooks/${hook}`);
    }
  });
});
