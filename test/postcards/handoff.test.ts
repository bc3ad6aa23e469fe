/**
 * A live postcard handed to the mail partner (Lob, played by a stand-in that checks every request
 * against Lob's published schema): submitted once through a lost answer, a crash at the worst
 * moment and a retry; moved on by the partner's signed events, each once; never for a test token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { root } from '../support/fixtures';
import { startLob, type LobStandIn } from '../support/lob';
import { BACKENDS, sendPostcard, testService, webSession, type TestService } from '../support/service';

const example = path.join(root, 'examples/postcard-4x6');
const sample = JSON.parse(fs.readFileSync(path.join(example, 'sample.json'), 'utf8')) as Record<string, string>;
const assets = async (p: string) => new Uint8Array(fs.readFileSync(path.join(example, p)));

describe.each(BACKENDS)('postcards handed to Lob on %s', (backend) => {
  let t: TestService;
  let lob: LobStandIn;
  let clock: FakeClock;
  let templateId: string;
  let live: string;
  /** The process dies between Lob's answer and our write: none of its hand-off writes land, its lease stays held. */
  let dying = false;

  beforeAll(async () => {
    clock = new FakeClock(new Date('2026-11-29T10:00:00Z'));
    lob = await startLob(() => clock.now());
    t = await testService({
      backend,
      clock,
      service: {
        // while the process is dying, what an attempt writes of its outcome never reaches the database
        // (the take before it does: the attempt runs, Lob makes the postcard, the lease stays held)
        beforeStatement: (statement) => {
          if (dying && statement.startsWith('update "postcard_handoffs" set "status"'))
            throw new Error('the process died here');
        },
      },
    });
    templateId = (
      await t.service.templates.create({ source: fs.readFileSync(path.join(example, 'postcard.xml'), 'utf8'), assets })
    ).id;
    live = (await t.service.keys.create('postcard', 'website')).secret;
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/apps/mail_partner',
      headers: { 'x-service-api-token': t.key },
      payload: {
        partner: 'lob',
        api_key: lob.key,
        webhook_secret: lob.secret,
        api_url: lob.url,
        use_type: 'operational',
      },
    });
    expect([put.statusCode, put.json().api_key_set, put.json().api_key]).toEqual([200, true, undefined]);
  });
  afterAll(async () => {
    await t?.stop();
    await lob?.close();
  });

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { 'x-service-api-token': t.key } });
  const send = (token: string, extra: Record<string, string> = {}) =>
    sendPostcard(t.app, token, { template_id: templateId, ...sample, ...extra });
  /** Renders what is received and hands on what is due, as the runner would. */
  const run = async () => {
    await (t.service.engine as { drain?: () => Promise<void> }).drain?.();
    await t.service.handoffs.drain();
  };
  const postcard = async (id: string) => (await get(`/v1/postcards/${id}`)).json();
  const eventsOf = async (id: string) =>
    (
      await t.service.database.db
        .selectFrom('events')
        .select('type')
        .where('resource_id', '=', id)
        .orderBy('id')
        .execute()
    ).map((e) => e.type);
  const deliver = (e: { headers: Record<string, string>; body: string }) =>
    t.app.inject({ method: 'POST', url: '/partners/lob/events', headers: e.headers, payload: e.body });

  beforeAll(async () => {
    // events are written for a subscriber: one that is never reached here
    await t.service.webhooks.create({ url: 'https://hooks.example.com/paperlink', events: ['*'] });
  });

  it('submits a live postcard as Lob takes it: the schema, the two one-page sides, the address as data, the id as the key', async () => {
    const before = lob.made.length;
    const id = await send(live);
    await run();
    const p = await postcard(id);
    expect(p).toMatchObject({ status: 'submitted', test: false, size: '4x6', partner: 'lob' });
    expect(lob.made.length).toBe(before + 1);
    const made = lob.made.at(-1)!;
    expect(p.partner_id).toBe(made.id);
    expect(lob.requests.at(-1)).toEqual({ idempotencyKey: id, problems: [] });
    // the address as the post reads it, in capitals; the postcard keeps it as it was given too
    expect(made.to).toMatchObject({
      name: 'Jordan Alvarez',
      address_line1: '742 EVERGREEN TERRACE',
      address_line2: 'APT 4B',
      address_city: 'SPRINGFIELD',
      address_state: 'OR',
      address_zip: '97477',
    });
    expect(p.address.address_line_1).toBe('742 Evergreen Terrace');
    expect(made.metadata).toEqual({ paperlink_postcard: id });
    expect(made.fields).toMatchObject({ size: '4x6', use_type: 'operational', front: 'front.pdf', back: 'back.pdf' });
    expect(await eventsOf(id)).toEqual(['postcard.received', 'postcard.rendered', 'postcard.submitted']);
  });

  it('ends mailed once through a lost answer, a crash before its record and retries; the events move it each once', async () => {
    const id = await send(live);
    // the first answer is lost on the way: Lob made the postcard, we do not know it
    lob.loseNextAnswer();
    await run();
    expect((await postcard(id)).status).toBe('rendered');
    expect(lob.made.filter((m) => m.metadata.paperlink_postcard === id)).toHaveLength(1);
    // the retry (30 s later) gets Lob's answer, and the process dies before it writes it down
    dying = true;
    clock.advance(30_000);
    await run();
    expect((await postcard(id)).status).toBe('rendered');
    // a new process takes it up once the dead one's lease has run out; the same key gets the same postcard
    dying = false;
    t = await t.restart();
    clock.advance(2 * 60_000);
    await run();
    const p = await postcard(id);
    expect(p.status).toBe('submitted');
    const made = lob.made.filter((m) => m.metadata.paperlink_postcard === id);
    expect(made).toHaveLength(1);
    expect(p.partner_id).toBe(made[0].id);
    expect(lob.requests.filter((r) => r.idempotencyKey === id).length).toBeGreaterThanOrEqual(3);

    // Lob's events: mailed (sent twice, as Lob does until it hears 2xx), then returned
    const mailed = lob.event('postcard.mailed', made[0]);
    expect((await deliver(mailed)).json()).toEqual({ received: true, moved: 'mailed' });
    expect((await deliver(mailed)).json()).toEqual({ received: true, moved: null });
    expect((await deliver(lob.event('postcard.in_transit', made[0]))).json()).toEqual({ received: true, moved: null });
    expect((await postcard(id)).status).toBe('mailed');
    expect((await deliver(lob.event('postcard.returned_to_sender', made[0]))).json().moved).toBe('returned');
    expect(await eventsOf(id)).toEqual([
      'postcard.received',
      'postcard.rendered',
      'postcard.submitted',
      'postcard.mailed',
      'postcard.returned',
    ]);
  });

  it('hands on a ZIP+4 in the shape Lob checks (12345-6789), however it was typed', async () => {
    const id = await send(live, { address_zip: ' 97477 1234 ' });
    await run();
    const p = await postcard(id);
    expect([p.status, p.address.address_zip, p.mailing_address.address_zip]).toEqual([
      'submitted',
      '97477 1234',
      '97477-1234',
    ]);
    expect(lob.requests.at(-1)).toEqual({ idempotencyKey: id, problems: [] });
    expect(lob.made.at(-1)!.to.address_zip).toBe('97477-1234');
  });

  it('keeps trying while Lob refuses its key (an operator mends it), and fails nothing for it', async () => {
    await t.service.apps.mailPartner.put({ api_key: 'test_rotated_key' });
    const id = await send(live);
    await run();
    expect((await postcard(id)).status).toBe('rendered');
    await t.service.apps.mailPartner.put({ api_key: lob.key });
    clock.advance(30_000);
    await run();
    expect((await postcard(id)).status).toBe('submitted');
  });

  it('takes an event that comes before its answer was recorded (found by our id in its metadata); the retry then changes nothing', async () => {
    const id = await send(live);
    lob.loseNextAnswer();
    await run();
    expect((await postcard(id)).status).toBe('rendered');
    const made = lob.made.find((m) => m.metadata.paperlink_postcard === id)!;
    expect((await deliver(lob.event('postcard.mailed', made))).json()).toEqual({ received: true, moved: 'mailed' });
    expect(await postcard(id)).toMatchObject({ status: 'mailed', partner_id: made.id });
    const asked = lob.requests.length;
    clock.advance(30_000);
    await run();
    expect(lob.requests.length).toBe(asked);
    expect(await eventsOf(id)).toEqual([
      'postcard.received',
      'postcard.rendered',
      'postcard.submitted',
      'postcard.mailed',
    ]);
  });

  it('refuses an event not signed with the webhook secret, or too old', async () => {
    const made = lob.made[0];
    expect((await deliver(lob.event('postcard.mailed', made, { secret: 'guessed' }))).statusCode).toBe(401);
    const old = lob.event('postcard.mailed', made, { at: new Date(clock.now().getTime() - 10 * 60_000) });
    expect((await deliver(old)).statusCode).toBe(401);
  });

  it("never hands on a test token's postcard", async () => {
    const test = (await t.service.keys.create('postcard', 'staging', undefined, { test: true })).secret;
    const before = lob.requests.length;
    const id = await send(test);
    await run();
    expect(await postcard(id)).toMatchObject({ status: 'rendered', test: true, partner: null, partner_id: null });
    expect(lob.requests.length).toBe(before);
  });

  it('fails a postcard the partner refuses, at once, with its reason', async () => {
    lob.refuseName('Nobody Here');
    const id = await send(live, { first_name: 'Nobody', last_name: 'Here' });
    await run();
    const p = await postcard(id);
    expect(p.status).toBe('failed');
    expect(p.failure_reason).toMatch(/^handoff_failed: Lob refused the postcard \(422\)/);
    expect(await eventsOf(id)).toEqual(['postcard.received', 'postcard.rendered', 'postcard.failed']);
  });

  it("is set up in the web app's settings: a secret left empty keeps the stored one, and is never shown", async () => {
    const cookie = await webSession(t.app, t.key);
    const settings = await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
    expect(settings.body).toContain('id="partner"');
    expect(settings.body).not.toContain(lob.key);
    expect(settings.body).not.toContain(lob.secret);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(settings.body)![1];
    const save = (fields: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url: '/app/settings/partner',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
      });
    expect((await save({ partner: 'lob', api_key: '', webhook_secret: '', use_type: 'marketing' })).statusCode).toBe(
      303,
    );
    const app = await t.service.apps.mailPartner.settings();
    expect([app.partner, app.api_key, app.webhook_secret, app.use_type]).toEqual([
      'lob',
      lob.key,
      lob.secret,
      'marketing',
    ]);
    // an unknown partner is refused on the page, nothing saved
    expect((await save({ partner: 'pigeon', use_type: 'marketing' })).statusCode).toBe(422);
    expect((await t.service.apps.mailPartner.settings()).partner).toBe('lob');
  });
});
