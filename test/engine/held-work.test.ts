/**
 * Cost flat in the work held (issue 45): a link waiting for its deadline is a row with a wake-up
 * time, not a flow in memory. A start on 20,000 waiting links runs a bounded number of queries and
 * holds nothing for them; the one that falls due is expired by the runner (fake clock) and its
 * `magic_link.expired` webhook delivered; on PostgreSQL two processes never both run one link's step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { FakeClock } from '../../src/clock';
import type { MagicLinkRow } from '../../src/db/schema';
import { noticesOf } from '../../src/links/model';
import { postgresPresence } from '../../src/db/presence';
import { Claims } from '../../src/engine/claims';
import { EmbeddedEngine } from '../../src/engine/embedded';
import { batchForLinks } from '../../src/flows/link';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { startReceiver, type Receiver } from '../support/receiver';
import { BACKENDS, testService, type TestService } from '../support/service';

const HELD = 20_000;
const HOUR = 3_600_000;

describe.each(BACKENDS)('links waiting on %s', (backend) => {
  let t: TestService;
  let rx: Receiver;
  const clock = new FakeClock('2026-11-26T10:00:00Z');
  const statements: string[] = [];

  beforeAll(async () => {
    rx = await startReceiver();
    t = await testService({
      backend,
      clock,
      config: { webhookAllowPrivate: true },
      service: { beforeStatement: (sql) => void statements.push(sql) },
    });
    await t.service.apps.magicLink.put({});
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await rx?.stop();
  });

  const engine = () => t.service.engine as EmbeddedEngine;
  const db = () => t.service.database.db;
  /** A link made as the API makes it, sent, and its first step run. */
  const seed = async (): Promise<MagicLinkRow> => {
    const variables = (await t.service.templates.load(EXAMPLE_IDS.letter)).variables;
    const made = await t.service.engine.generate({
      body: {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: 'seed@example.com', retain_from_created: { days: 30 } } },
      },
      caller: { keyId: null, name: 'test' },
    });
    await engine().drain();
    return db()
      .selectFrom('magic_links')
      .selectAll()
      .where('id', '=', made.magic_link_piece_id!)
      .executeTakeFirstOrThrow();
  };
  /** Copies of `row` written straight into the database, `patch` applied to each. */
  const copies = async (row: MagicLinkRow, n: number, prefix: string, patch: Partial<MagicLinkRow> = {}) => {
    for (let i = 0; i < n; i += 500) {
      const batch = Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
        ...row,
        id: `${prefix}${String(i + j).padStart(7, '0')}`,
        token_hash: `${prefix}-hash-${i + j}`,
        render_id: null,
        ...patch,
      }));
      await db().insertInto('magic_links').values(batch).execute();
    }
  };
  const status = async (id: string) =>
    (await db().selectFrom('magic_links').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

  it('starts on 20,000 waiting links with a bounded number of queries, holds none, and expires the one due', async () => {
    const row = await seed();
    expect(row.status).toBe('active');
    expect(row.sent_at).not.toBeNull();
    // its first step planned its deadline, and nobody holds it
    expect(row.wake_at).toBe(row.expires_at);
    expect(row.claimed_by).toBeNull();
    await copies(row, HELD, 'ml_held');
    const soon = new Date(clock.now().getTime() + HOUR).toISOString();
    await copies(row, 1, 'ml_soon', { expires_at: soon, wake_at: soon });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { 'x-service-api-token': t.key },
      payload: { url: `${rx.url}/expired`, events: ['magic_link.expired'] },
    });
    expect(res.statusCode).toBe(201);

    statements.length = 0;
    t = await t.restart();
    await engine().drain();
    // today's code claimed and read every active link at start: tens of thousands of statements
    const touchingLinks = statements.filter((s) => /"magic_links"/.test(s));
    expect(touchingLinks.length).toBeLessThan(50);
    expect(statements.length).toBeLessThan(1_000);
    expect(engine().size).toBe(0);
    expect(await status('ml_soon0000000')).toBe('active');

    statements.length = 0;
    clock.advance(HOUR);
    await engine().drain();
    expect(await status('ml_soon0000000')).toBe('expired');
    expect(await status('ml_held0000000')).toBe('active');
    // one step, for the one link that was due
    expect(statements.filter((s) => /^update "magic_links" set "wake_at" = (case|wake_at)/.test(s))).toHaveLength(1);
    await t.service.dispatcher.drain();
    const expired = rx.received.filter((r) => r.event.type === 'magic_link.expired');
    expect(expired.map((r) => r.event.data.object.id)).toEqual(['ml_soon0000000']);
    const active = await db()
      .selectFrom('magic_links')
      .select((e) => e.fn.countAll<number>().as('n'))
      .where('status', '=', 'active')
      .executeTakeFirstOrThrow();
    expect(Number(active.n)).toBe(HELD + 1);
  }, 180_000);

  it('expires a burst of links falling due at once a batch at a time: each once, for its reason, with its event, end notices sent once', async () => {
    const row = await seed();
    const hook = await t.service.webhooks.create({ url: `${rx.url}/burst`, events: ['magic_link.expired'] });
    const due = new Date(clock.now().getTime() + HOUR).toISOString();
    const notifying = JSON.stringify({
      ...(JSON.parse(row.settings) as object),
      notifySender: { email: 'owner@acme.example', firstView: false, ended: true },
    });
    await copies(row, 400, 'ml_burst_time', { expires_at: due, wake_at: due });
    // their last view was taken: due now, for the other reason
    await copies(row, 30, 'ml_burst_views', { max_views: 1, views_used: 1, wake_at: due });
    await copies(row, 20, 'ml_burst_notify', { expires_at: due, wake_at: due, settings: notifying });
    const outbox = path.join(t.config.dataDir, 'outbox');
    const mails = () => (fs.existsSync(outbox) ? fs.readdirSync(outbox).length : 0);
    const mailed = mails();
    statements.length = 0;
    try {
      clock.advance(HOUR);
      await engine().drain();
      const ended = await db()
        .selectFrom('magic_links')
        .select(['id', 'status', 'ended_reason', 'notices', 'wake_at', 'claimed_by'])
        .where('id', 'like', 'ml_burst%')
        .orderBy('id')
        .execute();
      expect(ended).toHaveLength(450);
      const reasonOf = (id: string) => (id.startsWith('ml_burst_views') ? 'views' : 'time');
      expect(ended.filter((r) => r.status !== 'expired' || r.ended_reason !== reasonOf(r.id))).toEqual([]);
      expect(ended.filter((r) => r.wake_at !== null || r.claimed_by !== null)).toEqual([]);
      // the end notice of each link that asks for one went, once, after its expiry
      const notified = ended.filter((r) => noticesOf(r).sent.ended !== undefined).map((r) => r.id);
      expect(notified).toEqual(ended.filter((r) => r.id.startsWith('ml_burst_notify')).map((r) => r.id));
      expect(mails() - mailed).toBe(20);
      // one event for each link, saying why it ended
      const events = await db()
        .selectFrom('events')
        .select(['resource_id', 'data'])
        .where('type', '=', 'magic_link.expired')
        .where('resource_id', 'like', 'ml_burst%')
        .orderBy('resource_id')
        .execute();
      expect(events.map((e) => [e.resource_id, (JSON.parse(e.data) as { reason: string }).reason])).toEqual(
        ended.map((r) => [r.id, reasonOf(r.id)]),
      );
      // statements for a batch of links, not for each: one by one it was six or more a link
      expect(statements.filter((s) => /"magic_links"/.test(s)).length).toBeLessThan(ended.length);
    } finally {
      await t.service.webhooks.remove(hook.id);
    }
  }, 120_000);

  if (backend === 'postgres')
    it('runs each due link step in one process only, with two processes claiming at once', async () => {
      const row = await seed();
      const due = new Date(clock.now().getTime() - 1).toISOString();
      // made to wait, the statistics taken, then due: PostgreSQL then expects few due rows, the
      // plan in which a claim written as `id in (select … limit n for update skip locked)` took
      // every due row, not n (the subquery ran again for each row updated)
      await copies(row, 600, 'ml_race');
      await sql`analyze magic_links`.execute(db());
      // the service's own engine stands aside before the links fall due: only the two under test claim
      await engine().fence();
      await db()
        .updateTable('magic_links')
        .set({ expires_at: due, wake_at: due })
        .where('id', 'like', 'ml_race%')
        .execute();
      const stepped: string[][] = [[], []];
      const presences = [await postgresPresence(t.config.databaseUrl!), await postgresPresence(t.config.databaseUrl!)];
      const engines = presences.map(
        (p, i) =>
          new EmbeddedEngine(
            clock,
            {
              ...t.service.activities,
              // each due link's step ends it: one expiry a step, or many in a batch run together
              expireLink: (id) => {
                stepped[i].push(id);
                return t.service.activities.expireLink(id);
              },
              ...batchForLinks(t.service.links),
              expireLinks: (ids) => {
                stepped[i].push(...ids);
                return t.service.links.finish(ids, 'expired');
              },
            },
            new Claims(t.service.database, p),
          ),
      );
      // a claim takes its batch and no more (each process runs at most LINK_STEPS at once)
      const batch = new Claims(t.service.database, presences[0]);
      expect(await batch.due('magic_links', clock.now(), 25)).toHaveLength(25);
      await batch.releaseAll(clock.now());
      try {
        await Promise.all(engines.map((e) => e.drain()));
      } finally {
        engine().unfence();
        await Promise.all(engines.map((e) => e.stop()));
        await Promise.all(presences.map((p) => p.close()));
      }
      const raced = stepped.map((ids) => ids.filter((id) => id.startsWith('ml_race')));
      // every link stepped exactly once, by one of the two
      expect([...raced[0], ...raced[1]].sort()).toEqual(
        Array.from({ length: 600 }, (_, i) => `ml_race${String(i).padStart(7, '0')}`),
      );
      const left = await db()
        .selectFrom('magic_links')
        .select((e) => e.fn.countAll<number>().as('n'))
        .where('id', 'like', 'ml_race%')
        .where('status', '!=', 'expired')
        .executeTakeFirstOrThrow();
      expect(Number(left.n)).toBe(0);
    }, 120_000);
});
