/**
 * Signed webhooks with durable retries, against a real receiver over HTTP, on SQLite and
 * PostgreSQL. The service's clock is fake, so a day of retries takes no time; the runner sleeps
 * on that clock, so only what pokes it (an event's transaction committing, an attempt ending, the
 * test moving the clock) gets a delivery out: one that waits on a poll shows as a timeout here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { guardedLookup, isPrivateAddress } from '../../src/net/guard';
import { verify } from '../../src/webhooks/signature';
import { eventually } from '../support/eventually';
import { root } from '../support/fixtures';
import { startReceiver, type Receiver } from '../support/receiver';
import { BACKENDS, testService, type TestService } from '../support/service';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;
const HOUR = 3_600_000;

describe.each(BACKENDS)('webhooks on %s', (backend) => {
  let t: TestService;
  let mail: Mailbox;
  let rx: Receiver;
  const clock = new FakeClock('2026-11-22T10:00:00Z');

  beforeAll(async () => {
    mail = await startSmtp();
    rx = await startReceiver();
    t = await testService({
      backend,
      clock,
      config: { smtpUrl: mail.url, webhookAllowPrivate: true, webhookTimeoutMs: 500, publicUrl: 'http://docs.example' },
    });
    await t.service.apps.magicLink.put({ public_url: 'http://docs.example' });
  });
  afterAll(async () => {
    await t?.stop();
    await rx?.stop();
    await mail?.close();
  });
  beforeEach(() => {
    rx.received.length = 0;
    rx.respond = () => 200;
  });

  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { 'x-service-api-token': t.key }, payload: payload as object });
  const subscribe = async (events: unknown = '*', url = rx.url) => {
    const res = await api('POST', '/v1/webhooks', { url, events, description: 'test receiver' });
    expect(res.statusCode).toBe(201);
    return res.json<{ id: string; secret: string }>();
  };
  const generate = (destinations: object = { inkit_storage: {} }) =>
    api('POST', '/v1/generate', { template_id: EXAMPLE_IDS.postcard, merge_parameters: postcard, destinations });
  const types = () => rx.received.map((r) => r.event.type);
  /** Moves the fake clock on in steps, waking the dispatcher, until `fn` holds (retries come due as time passes). */
  const advanceUntil = async (fn: () => boolean | Promise<boolean>, stepMs: number, what: string) => {
    const end = Date.now() + 30_000;
    while (!(await fn())) {
      if (Date.now() > end) throw new Error(`not within 30 s: ${what}`);
      clock.advance(stepMs);
      t.service.dispatcher.wake();
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const deliveries = async (hook: string) => (await api('GET', `/v1/webhooks/${hook}/deliveries`)).json().data;

  it('keeps subscriptions: the signing secret once, every broken field at once, delete', async () => {
    const made = await subscribe(['document.generated', 'postcard.failed']);
    expect(made).toMatchObject({
      object: 'webhook',
      url: rx.url,
      events: ['document.generated', 'postcard.failed'],
      description: 'test receiver',
    });
    expect(made.secret).toMatch(/^whsec_[0-9A-Za-z]{30,}$/);
    const got = await api('GET', `/v1/webhooks/${made.id}`);
    expect(got.json().secret).toBeUndefined();
    expect((await api('GET', '/v1/webhooks')).json().data.map((w: { id: string }) => w.id)).toContain(made.id);

    const codes = (res: { json(): { error: { details: { field: string; code: string }[] } } }) =>
      res
        .json()
        .error.details.map((d) => `${d.field}:${d.code}`)
        .sort();
    // first the shape, every field of it at once; then the rules, every one at once
    const shape = await api('POST', '/v1/webhooks', {
      url: 7,
      events: ['document.generated', 'nope'],
      description: 7,
    });
    expect(shape.statusCode).toBe(422);
    expect(codes(shape)).toEqual(['description:type', 'events[1]:unknown_event_type', 'url:type']);
    const bad = await api('POST', '/v1/webhooks', { url: 'ftp://x', events: ['document.generated'] });
    expect(bad.statusCode).toBe(422);
    expect(codes(bad)).toEqual(['url:invalid']);
    expect(
      (await api('POST', '/v1/webhooks', {}))
        .json()
        .error.details.map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['events', 'url']);

    expect((await api('DELETE', `/v1/webhooks/${made.id}`)).json()).toEqual({
      id: made.id,
      object: 'webhook',
      deleted: true,
    });
    expect((await api('GET', `/v1/webhooks/${made.id}`)).statusCode).toBe(404);
    expect((await api('DELETE', `/v1/webhooks/${made.id}`)).json().error.code).toBe('not_found');
  });

  it('signs every delivery so it verifies with the secret and fails with another', async () => {
    const hook = await subscribe(['document.generated']);
    const res = await generate();
    expect(res.statusCode).toBe(201);
    await eventually(async () => rx.received.length === 1, 'the event arrived');
    const [got] = rx.received;
    expect(got.event).toMatchObject({
      object: 'event',
      type: 'document.generated',
      data: { object: { id: res.json().document_id, object: 'document' } },
    });
    expect(got.event.id).toMatch(/^evt_/);
    expect(got.headers['paperlink-event-id']).toBe(got.event.id);
    const now = Math.floor(clock.now().getTime() / 1000);
    const header = got.headers['paperlink-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify(hook.secret, got.body, header, { nowSeconds: now })).toEqual({ ok: true });
    expect(verify('whsec_wrong', got.body, header, { nowSeconds: now })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verify(hook.secret, `${got.body} `, header, { nowSeconds: now })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verify(hook.secret, got.body, header, { nowSeconds: now + 3600 })).toEqual({ ok: false, reason: 'too_old' });
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('retries after 500s and timeouts with back-off until the receiver takes it, and shows each attempt', async () => {
    const hook = await subscribe(['document.generated']);
    let calls = 0;
    rx.respond = () => (++calls === 1 ? 500 : calls === 2 ? 'hang' : 204);
    await generate();
    await eventually(async () => calls === 1, 'first attempt');
    await advanceUntil(() => calls >= 3, 15_000, 'retried until success');
    await eventually(
      async () => (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().data[0].status === 'succeeded',
      'recorded as succeeded',
    );
    const [delivery] = (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().data;
    expect(delivery.event.type).toBe('document.generated');
    expect(delivery.attempts.map((a: { status_code: number | null }) => a.status_code)).toEqual([500, null, 204]);
    expect(delivery.attempts[0].error).toBe('HTTP 500');
    expect(delivery.attempts[1].error).toMatch(/no answer within 500 ms/);
    expect(delivery.attempts[1].duration_ms).toBeGreaterThanOrEqual(450);
    // the same event each time
    expect(new Set(rx.received.map((r) => r.event.id)).size).toBe(1);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('gives up after the retry window and marks the delivery failed', async () => {
    const hook = await subscribe(['document.generated']);
    rx.respond = () => 503;
    await generate();
    await eventually(async () => rx.received.length === 1, 'first attempt');
    await advanceUntil(
      async () => (await deliveries(hook.id))[0].status === 'failed',
      2 * HOUR,
      'a day of retries, then failed',
    );
    expect(clock.now().getTime() - Date.parse((await deliveries(hook.id))[0].created_at)).toBeGreaterThanOrEqual(
      24 * HOUR,
    );
    const [delivery] = (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().data;
    expect(delivery.next_attempt_at).toBeNull();
    expect(delivery.attempts.length).toBeGreaterThan(5);
    expect(delivery.attempts.every((a: { status_code: number }) => a.status_code === 503)).toBe(true);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  }, 60_000);

  it('keeps order per resource: a later event of a link waits for the earlier one, other resources do not', async () => {
    const hook = await subscribe(['magic_link.sent', 'magic_link.expired', 'document.generated']);
    let failedOnce = false;
    rx.respond = (r) => {
      if (r.event.type === 'magic_link.sent' && !failedOnce) {
        failedOnce = true;
        return 500;
      }
      return 200;
    };
    const res = await generate({ magic_link: { recipient_email: 'ordered@example.com', expire_after_n_views: 2 } });
    const linkId = res.json().magic_link_piece_id as string;
    await eventually(async () => failedOnce, 'the first send event failed');
    expect((await api('POST', `/v1/magic_links/${linkId}/expire`)).statusCode).toBe(200);
    // the document's event is not held up by the link's failed one
    await eventually(async () => types().includes('document.generated'), 'other resources flow');
    // everything that can go out at this moment has gone (no sleep: the dispatcher is drained);
    // the link's later event waits behind its failed one, whose retry is not due yet
    await t.service.dispatcher.drain();
    expect(types().filter((x) => x.startsWith('magic_link.'))).toEqual(['magic_link.sent']);
    await advanceUntil(() => types().includes('magic_link.expired'), 15_000, 'the link events after the retry');
    const linkEvents = rx.received.filter((r) => r.event.type.startsWith('magic_link.'));
    expect(linkEvents.map((r) => r.event.type)).toEqual(['magic_link.sent', 'magic_link.sent', 'magic_link.expired']);
    expect(linkEvents[2].event.data).toMatchObject({
      reason: 'revoked',
      object: { id: linkId, status: 'revoked', ended_reason: 'revoked' },
    });
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('tells every step of a Magic Link and a postcard, with the resource as the API returns it', async () => {
    const hook = await subscribe('*');
    const to = 'steps@example.com';
    const before = mail.messages.length;
    const res = await generate({ magic_link: { recipient_email: to, expire_after_n_views: 1 } });
    const linkPath = new URL(linkIn(await mail.next(to, before))).pathname;
    await t.app.inject({ method: 'GET', url: linkPath });
    const asked = mail.messages.length;
    await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    const code = codeIn(await mail.next(to, asked));
    const wrong = code === '000000' ? '111111' : '000000';
    await t.app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${wrong}`,
    });
    const ok = await t.app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${code}`,
    });
    const cookie = ok.cookies.find((c) => c.name === 'paperlink_link')!;
    expect(
      (await t.app.inject({ method: 'GET', url: linkPath, headers: { cookie: `paperlink_link=${cookie.value}` } }))
        .statusCode,
    ).toBe(200);

    const token = (await t.service.keys.create('postcard', 'webhook test')).secret;
    const good = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { api_token: token, template_id: EXAMPLE_IDS.postcard, ...postcard },
    });
    // accepted, then failed when drawn: a character no font of the template has
    const bad = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { api_token: token, template_id: EXAMPLE_IDS.postcard, ...postcard, city: 'Tokyo 東京' },
    });

    const expected = [
      'document.generated',
      'magic_link.sent',
      'magic_link.opened',
      'magic_link.access_denied',
      'magic_link.viewed',
      'magic_link.expired',
      'postcard.received',
      'postcard.rendered',
      'postcard.failed',
    ];
    await eventually(async () => expected.every((x) => types().includes(x)), `all of ${expected.join(', ')}`);
    const linkId = res.json().magic_link_piece_id as string;
    const of = (type: string, id: string) =>
      rx.received.find((r) => r.event.type === type && r.event.data.object.id === id)!.event;
    expect(of('magic_link.access_denied', linkId).data.access).toMatchObject({
      kind: 'code_checked',
      outcome: 'wrong',
    });
    expect(of('magic_link.viewed', linkId).data.object).toMatchObject({ views_used: 1, views_left: 0 });
    expect(of('magic_link.expired', linkId).data).toMatchObject({
      reason: 'views',
      object: { status: 'expired', ended_reason: 'views' },
    });
    expect(of('postcard.rendered', good.json().id).data.object).toMatchObject({
      status: 'rendered',
      object: 'postcard',
    });
    expect(of('postcard.failed', bad.json().id).data.object).toMatchObject({ status: 'failed' });
    // the link's events arrived in the order they happened
    const linkTypes = rx.received.filter((r) => r.event.data.object.id === linkId).map((r) => r.event.type);
    // (opened by the first view, not by the sign-in page: after the wrong code)
    expect(linkTypes).toEqual([
      'magic_link.sent',
      'magic_link.access_denied',
      'magic_link.opened',
      'magic_link.viewed',
      'magic_link.expired',
    ]);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('ends the links of a deleted document, tells both, and the link opens no more', async () => {
    const hook = await subscribe(['document.deleted', 'magic_link.expired']);
    const to = 'deleted@example.com';
    const before = mail.messages.length;
    const made = (
      await generate({ inkit_storage: {}, magic_link: { recipient_email: to, expire_after_n_views: 3 } })
    ).json();
    const linkPath = new URL(linkIn(await mail.next(to, before))).pathname;
    const other = (
      await generate({ inkit_storage: {}, magic_link: { recipient_email: to, expire_after_n_views: 3 } })
    ).json();
    expect((await api('DELETE', `/v1/documents/${made.document_id}`)).statusCode).toBe(200);

    expect((await api('GET', `/v1/magic_links/${made.magic_link_piece_id}`)).json()).toMatchObject({
      status: 'expired',
    });
    // the other document's link is untouched
    expect((await api('GET', `/v1/magic_links/${other.magic_link_piece_id}`)).json()).toMatchObject({
      status: 'active',
    });
    expect((await t.app.inject({ method: 'GET', url: linkPath })).statusCode).toBe(404);
    await eventually(
      async () => types().includes('document.deleted') && types().includes('magic_link.expired'),
      'document.deleted and magic_link.expired',
    );
    const deleted = rx.received.find((r) => r.event.type === 'document.deleted')!.event;
    expect(deleted.data.object).toMatchObject({ id: made.document_id, object: 'document' });
    const expired = rx.received.find((r) => r.event.type === 'magic_link.expired')!.event;
    expect(expired.data).toMatchObject({
      reason: 'document_deleted',
      object: { id: made.magic_link_piece_id, status: 'expired', ended_reason: 'document_deleted' },
    });
    expect(rx.received.filter((r) => r.event.type === 'magic_link.expired')).toHaveLength(1);
    // a second delete is a 404, and ends nothing twice
    expect((await api('DELETE', `/v1/documents/${made.document_id}`)).json().error.code).toBe('not_found');
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('sends a test event on request', async () => {
    const hook = await subscribe(['postcard.received']);
    const res = await api('POST', `/v1/webhooks/${hook.id}/test`);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ object: 'test_delivery', delivery_id: expect.stringMatching(/^dlv_/) });
    await eventually(async () => rx.received.some((r) => r.event.type === 'webhook.test'), 'the test event');
    const got = rx.received.find((r) => r.event.type === 'webhook.test')!;
    expect(got.event.data.object).toMatchObject({ id: hook.id, object: 'webhook' });
    expect(
      verify(hook.secret, got.body, got.headers['paperlink-signature'] as string, {
        nowSeconds: Math.floor(clock.now().getTime() / 1000),
      }).ok,
    ).toBe(true);
    expect((await api('POST', '/v1/webhooks/wh_nope/test')).statusCode).toBe(404);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('writes no event for a change that was rolled back', async () => {
    const hook = await subscribe('*');
    const db = t.service.database.db;
    // the change and its event in one transaction that fails after both were written
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.updateTable('magic_links').set({ status: 'revoked' }).where('id', '=', 'nothing').execute();
        await t.service.events.emit(trx, 'postcard.received', 'pc_rolled_back', () => ({
          object: { id: 'pc_rolled_back' },
        }));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await db.selectFrom('events').selectAll().where('resource_id', '=', 'pc_rolled_back').execute()).toEqual([]);
    expect(await db.selectFrom('deliveries').selectAll().where('resource_id', '=', 'pc_rolled_back').execute()).toEqual(
      [],
    );
    await t.service.dispatcher.drain();
    expect(rx.received.filter((r) => r.event.data.object.id === 'pc_rolled_back')).toEqual([]);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('gives every write of a grouped commit its delivery, to the webhooks there were when it was written', async () => {
    const db = t.service.database.db;
    // writes that arrive together share one transaction on SQLite (src/db groupCommit)
    const emitAll = (ids: string[]) =>
      Promise.all(
        ids.map((id) =>
          t.service.database.inTransaction((trx) =>
            t.service.events.emit(trx, 'postcard.received', id, () => ({ object: { id } })),
          ),
        ),
      );
    const hooksOf = async (ids: string[]) => {
      // the dispatcher writes the deliveries of what was emitted (src/webhooks fanOut)
      while ((await t.service.dispatcher.fanOut()) > 0);
      const rows = await db.selectFrom('deliveries').select(['resource_id', 'webhook_id']).execute();
      return ids.map((id) =>
        rows
          .filter((r) => r.resource_id === id)
          .map((r) => r.webhook_id)
          .sort(),
      );
    };
    const a = await subscribe(['postcard.received']);
    const first = ['pc_group_1', 'pc_group_2', 'pc_group_3', 'pc_group_4'];
    await emitAll(first);
    expect(await hooksOf(first)).toEqual(first.map(() => [a.id]));
    const b = await subscribe(['magic_link.viewed', 'postcard.received']);
    const second = ['pc_group_5', 'pc_group_6', 'pc_group_7'];
    await emitAll(second);
    expect(await hooksOf(second)).toEqual(second.map(() => [a.id, b.id].sort()));
    await api('DELETE', `/v1/webhooks/${a.id}`);
    await emitAll(['pc_group_8']);
    expect(await hooksOf(['pc_group_8'])).toEqual([[b.id]]);
    await api('DELETE', `/v1/webhooks/${b.id}`);
    await t.service.dispatcher.drain();
  });

  it('delivers every event to a receiver that was down across a restart of the service', async () => {
    const hook = await subscribe(['document.generated']);
    await rx.stop();
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await generate()).json().document_id as string);
    // the endpoint is tried, fails, and rests with all three deliveries waiting for it
    await eventually(
      async () =>
        (await api('GET', `/v1/webhooks/${hook.id}/deliveries`))
          .json()
          .data.some((d: { attempts: unknown[] }) => d.attempts.length >= 1),
      'the endpoint tried',
    );
    t = await t.restart();
    await rx.start();
    await advanceUntil(
      () => made.every((id) => rx.received.some((r) => r.event.data.object.id === id)),
      15_000,
      'all three after the restart',
    );
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });
});

describe('webhook targets', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(async () => t?.stop());

  it.each([
    'http://127.0.0.1:9/x',
    'http://localhost/x',
    'http://10.1.2.3/x',
    'http://192.168.1.1/x',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/x',
    'http://[fd00::1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://[::ffff:0:7f00:1]/x',
    'http://[64:ff9b::7f00:1]/x',
    'http://[2002:7f00:1::1]/x',
    'https://user:pw@example.com/x',
  ])('refuses %s by default', async (url) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { 'x-service-api-token': t.key },
      payload: { url, events: '*' },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0]).toMatchObject({ field: 'url', code: 'invalid' });
  });

  it('accepts a public https URL', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { 'x-service-api-token': t.key },
      payload: { url: 'https://hooks.example.com/paperlink', events: ['postcard.received'] },
    });
    expect(res.statusCode).toBe(201);
  });
});

describe('the address check at delivery', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.0.0.1', true],
    ['172.16.5.4', true],
    ['172.32.0.1', false],
    ['192.168.0.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['fe80::1', true],
    ['fd12:3456::1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:7f00:1', true],
    // IPv4-translated (RFC 6145)
    ['::ffff:0:7f00:1', true],
    ['::ffff:0:808:808', false],
    ['2001:4860:4860::8888', false],
    // documentation, benchmarking and reserved ranges
    ['192.0.2.1', true],
    ['198.18.0.1', true],
    ['2001:db8::1', true],
    ['100::1', true],
    // IPv6 that embeds an IPv4 address reaches that address: NAT64 (well-known prefix) and 6to4
    ['64:ff9b::a00:1', true],
    ['64:ff9b::7f00:1', true],
    ['64:ff9b::808:808', false],
    ['64:ff9b:1::a00:1', true],
    ['2002:a00:1::1', true],
    ['2002:c0a8:101::1', true],
    ['2002:808:808::1', false],
    // Teredo hides its IPv4 address; not a webhook target
    ['2001::1', true],
    ['not an address', true],
  ])('%s is private: %s', (ip, expected) => {
    expect(isPrivateAddress(ip)).toBe(expected);
  });

  it('refuses a host name that resolves to a private address (checked on the address connected to)', async () => {
    const lookup = guardedLookup(false);
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      lookup('localhost', { family: 0 }, (e) => resolve(e)),
    );
    expect(err?.code).toBe('EPRIVATE');
    const allowed = await new Promise<string>((resolve, reject) =>
      guardedLookup(true)('localhost', { family: 4 }, (e, address) => (e ? reject(e) : resolve(address as string))),
    );
    expect(allowed).toBe('127.0.0.1');
  });
});

describe("the README's verification snippet", () => {
  it('accepts a real delivery and refuses it with another secret or a changed body', async () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const code = /```js\n([\s\S]*?function verifyPaperlink[\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBeDefined();
    // the docs' own snippet, run as a reader would paste it
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const verifyPaperlink = new Function('require', `${code}\nreturn verifyPaperlink;`)(require) as (
      secret: string,
      raw: Buffer | string,
      header: string | undefined,
      tolerance?: number,
    ) => boolean;

    const rx = await startReceiver();
    const t = await testService({ config: { webhookAllowPrivate: true } });
    try {
      const hook = (
        await t.app.inject({
          method: 'POST',
          url: '/v1/webhooks',
          headers: { 'x-service-api-token': t.key },
          payload: { url: rx.url, events: '*' },
        })
      ).json<{ id: string; secret: string }>();
      await t.app.inject({
        method: 'POST',
        url: `/v1/webhooks/${hook.id}/test`,
        headers: { 'x-service-api-token': t.key },
      });
      await eventually(async () => rx.received.length === 1, 'the test event');
      const [got] = rx.received;
      const header = got.headers['paperlink-signature'] as string;
      expect(verifyPaperlink(hook.secret, Buffer.from(got.body), header)).toBe(true);
      expect(verifyPaperlink('whsec_other', Buffer.from(got.body), header)).toBe(false);
      expect(verifyPaperlink(hook.secret, Buffer.from(got.body.replace('webhook.test', 'webhook.tost')), header)).toBe(
        false,
      );
      expect(verifyPaperlink(hook.secret, Buffer.from(got.body), undefined)).toBe(false);
    } finally {
      await t.stop();
      await rx.stop();
    }
  });
});
