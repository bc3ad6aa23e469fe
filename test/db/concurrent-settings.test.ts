/**
 * Settings and limits under two processes at once (issue 65, case 6): an app's settings change by
 * compare-and-set on what is stored, never from the copy a process keeps for reads, so two
 * processes changing different fields both keep their change; the webhook subscription limit is
 * counted in the transaction that inserts, so creates at once never pass it.
 */
import { FakeClock } from '../../src/clock';
import { StorageApps } from '../../src/documents/retention';
import { MagicLinkApps } from '../../src/links/app';
import { Events } from '../../src/events';
import { Webhooks } from '../../src/webhooks';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('two processes changing settings on %s', (backend) => {
  let t: TestService;
  const clock = new FakeClock('2026-11-22T10:00:00Z');
  beforeAll(async () => {
    t = await testService({ backend, clock, config: { webhookMaxSubscriptions: 5 } });
  });
  afterAll(() => t?.stop());

  /** The Magic Link app as another process on the same database sees it (its own kept copy). */
  const otherProcess = () =>
    new MagicLinkApps(t.service.database.db, clock, {
      public_url: 'http://127.0.0.1:1',
      public_url_follows_server: true,
      sender_name: 'Paperlink',
      sender_email: 'paperlink@localhost.localdomain',
      organization_name: 'Paperlink',
      logo_url: null,
      accent_color: '#1F6FEB',
      auth_types: ['email'],
      oidc_providers: [],
    });

  it('keeps both edits of the Magic Link app when two processes change different fields within seconds', async () => {
    const here = t.service.apps.magicLink;
    const there = otherProcess();
    await here.put({ organization_name: 'Acme', sender_email: 'docs@acme.example' });
    // both processes have read (and keep) the settings, as every recipient request does
    expect((await here.get())?.organization_name).toBe('Acme');
    expect((await there.get())?.organization_name).toBe('Acme');
    await there.put({ accent_color: '#AA3300' });
    await here.put({ sender_name: 'Ann' });
    here['stored'].forget();
    expect(await here.get()).toMatchObject({
      organization_name: 'Acme',
      accent_color: '#AA3300',
      sender_name: 'Ann',
      sender_email: 'docs@acme.example',
    });
  });

  it("keeps the storage app's retention when another process changes it while this one keeps a copy", async () => {
    const here = t.service.apps.storage;
    const there = new StorageApps(t.service.database.db, clock);
    await here.put({ retain_for: { days: 30 } });
    expect((await there.get()).retain_for).toEqual({ days: 30 });
    await here.put({ retain_for: { days: 7 } });
    // a PUT without retain_for keeps what is stored now, not what that process read before
    expect((await there.put({})).retain_for).toEqual({ days: 7 });
    await here.put({ retain_for: null });
  });

  it('never passes the webhook subscription limit, however many creates run at once', async () => {
    // as many processes as creates: each its own Webhooks over the one database
    const creates = Array.from({ length: 12 }, (_, i) =>
      new Webhooks(t.service.database.db, clock, new Events(clock), {
        allowPrivate: true,
        timeoutMs: 1000,
        retryForMs: 3600_000,
        maxSubscriptions: 5,
      })
        .create({ url: `https://hooks.example.com/${i}`, events: ['*'] })
        .then(
          () => 'created',
          (err: { code?: string }) => err.code,
        ),
    );
    const outcomes = await Promise.all(creates);
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(5);
    expect(outcomes.filter((o) => o === 'webhook_limit_reached')).toHaveLength(7);
    const held = await t.service.database.db
      .selectFrom('webhooks')
      .select((e) => e.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(held.n)).toBe(5);
  });
});
