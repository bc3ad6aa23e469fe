/**
 * A live postcard handed to each mail partner (Lob, PostGrid; each played by a stand-in that checks
 * every request against the partner's published schema): submitted once through a lost answer, a
 * crash at the worst moment and a retry; moved on by the partner's signed events, each once; never
 * for a test token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { PartnerRefused } from '../../src/postcards/driver';
import { postgrid } from '../../src/postcards/postgrid';
import { root } from '../support/fixtures';
import { startPartner, type PartnerName, type PartnerStandIn } from '../support/partners';
import { BACKENDS, sendPostcard, testService, webSession, type TestService } from '../support/service';

const example = path.join(root, 'examples/postcard-4x6');
const sample = JSON.parse(fs.readFileSync(path.join(example, 'sample.json'), 'utf8')) as Record<string, string>;
const assets = async (p: string) => new Uint8Array(fs.readFileSync(path.join(example, p)));

const PARTNERS: PartnerName[] = ['lob', 'postgrid'];

describe.each(BACKENDS.flatMap((backend) => PARTNERS.map((partner) => [partner, backend] as const)))(
  'postcards handed to %s on %s',
  (partner, backend) => {
    let t: TestService;
    let lob: PartnerStandIn;
    let clock: FakeClock;
    let templateId: string;
    let live: string;
    /** The process dies between Lob's answer and our write: none of its hand-off writes land, its lease stays held. */
    let dying = false;

    beforeAll(async () => {
      clock = new FakeClock(new Date('2026-11-29T10:00:00Z'));
      lob = await startPartner(partner, () => clock.now());
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
        await t.service.templates.create({
          source: fs.readFileSync(path.join(example, 'postcard.xml'), 'utf8'),
          assets,
        })
      ).id;
      live = (await t.service.keys.create('postcard', 'website')).secret;
      const put = await t.app.inject({
        method: 'PUT',
        url: '/v1/apps/mail_partner',
        headers: { 'x-service-api-token': t.key },
        payload: {
          partner,
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
      t.app.inject({ method: 'POST', url: `/partners/${partner}/events`, headers: e.headers, payload: e.body });

    beforeAll(async () => {
      // events are written for a subscriber: one that is never reached here
      await t.service.webhooks.create({ url: 'https://hooks.example.com/paperlink', events: ['*'] });
    });

    it('submits a live postcard as the partner takes it: its schema, the PDF pages, the address as data, our id', async () => {
      const before = lob.made.length;
      const id = await send(live);
      await run();
      const p = await postcard(id);
      expect(p).toMatchObject({ status: 'submitted', test: false, size: '4x6', partner });
      expect(lob.made.length).toBe(before + 1);
      const made = lob.made.at(-1)!;
      expect(p.partner_id).toBe(made.id);
      expect(lob.requests.filter((r) => r.key === id)).not.toHaveLength(0);
      expect(lob.requests.filter((r) => r.key === id && r.problems.length)).toEqual([]);
      // the address as the post reads it, in capitals; the postcard keeps it as it was given too
      expect(made.to).toMatchObject({
        name: 'Jordan Alvarez',
        line1: '742 EVERGREEN TERRACE',
        line2: 'APT 4B',
        city: 'SPRINGFIELD',
        state: 'OR',
        zip: '97477',
        country: 'US',
      });
      expect(p.address.address_line_1).toBe('742 Evergreen Terrace');
      expect([made.ours, made.size]).toEqual([id, '4x6']);
      expect(await eventsOf(id)).toEqual(['postcard.received', 'postcard.rendered', 'postcard.submitted']);
    });

    it('ends mailed once through a lost answer, a crash before its record and retries; the events move it each once', async () => {
      const id = await send(live);
      // the first answer is lost on the way: the partner made the postcard, we do not know it
      lob.loseNextAnswer();
      await run();
      expect((await postcard(id)).status).toBe('rendered');
      expect(lob.made.filter((m) => m.ours === id)).toHaveLength(1);
      // the retry (30 s later) gets the partner's answer, and the process dies before it writes it down
      dying = true;
      clock.advance(30_000);
      await run();
      expect((await postcard(id)).status).toBe('rendered');
      // a new process takes it up once the dead one's lease has run out, and gets the same postcard
      dying = false;
      t = await t.restart();
      clock.advance(2 * 60_000);
      await run();
      const p = await postcard(id);
      expect(p.status).toBe('submitted');
      const made = lob.made.filter((m) => m.ours === id);
      expect(made).toHaveLength(1);
      expect(p.partner_id).toBe(made[0].id);
      expect(lob.requests.filter((r) => r.key === id).length).toBeGreaterThanOrEqual(3);

      // the partner's events: mailed (sent twice, as a partner does until it hears 2xx), then returned
      const mailed = lob.event('mailed', made[0]);
      expect((await deliver(mailed)).json()).toEqual({ received: true, moved: 'mailed' });
      expect((await deliver(mailed)).json()).toEqual({ received: true, moved: null });
      expect((await deliver(lob.event('in_transit', made[0]))).json()).toEqual({ received: true, moved: null });
      expect((await postcard(id)).status).toBe('mailed');
      expect((await deliver(lob.event('returned', made[0]))).json().moved).toBe('returned');
      expect(await eventsOf(id)).toEqual([
        'postcard.received',
        'postcard.rendered',
        'postcard.submitted',
        'postcard.mailed',
        'postcard.returned',
      ]);
    });

    it('hands on a ZIP+4 in the shape partners check (12345-6789), however it was typed', async () => {
      const id = await send(live, { address_zip: ' 97477 1234 ' });
      await run();
      const p = await postcard(id);
      expect([p.status, p.address.address_zip, p.mailing_address.address_zip]).toEqual([
        'submitted',
        '97477 1234',
        '97477-1234',
      ]);
      expect(lob.requests.at(-1)).toEqual({ key: id, problems: [] });
      expect(lob.made.at(-1)!.to.zip).toBe('97477-1234');
    });

    it('keeps trying while the partner refuses its key (an operator mends it), and fails nothing for it', async () => {
      await t.service.apps.mailPartner.put({ api_key: 'rotated_key' });
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
      const made = lob.made.find((m) => m.ours === id)!;
      expect((await deliver(lob.event('mailed', made))).json()).toEqual({ received: true, moved: 'mailed' });
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
      expect((await deliver(lob.event('mailed', made, { secret: 'guessed' }))).statusCode).toBe(401);
      const old = lob.event('mailed', made, { at: new Date(clock.now().getTime() - 10 * 60_000) });
      expect((await deliver(old)).statusCode).toBe(401);
      // a body changed after it was signed
      const signed = lob.event('mailed', made);
      expect((await deliver({ ...signed, body: signed.body.replace(made.id, 'x') })).statusCode).toBe(401);
    });

    it('takes api_url only as https, or as http to this machine (the API key travels to it)', async () => {
      const put = (api_url: string) =>
        t.app.inject({
          method: 'PUT',
          url: '/v1/apps/mail_partner',
          headers: { 'x-service-api-token': t.key },
          payload: { api_url },
        });
      for (const wrong of ['http://partner.example.com', 'https://user:pw@partner.example.com', 'ftp://127.0.0.1']) {
        const r = await put(wrong);
        expect([r.statusCode, r.json().error.details[0]]).toMatchObject([422, { field: 'api_url', code: 'invalid' }]);
      }
      expect((await put('https://partner.example.com/')).json().api_url).toBe('https://partner.example.com');
      expect((await put(lob.url)).statusCode).toBe(200);
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
      lob.refuseName('Nobody');
      const id = await send(live, { first_name: 'Nobody', last_name: 'Here' });
      await run();
      const p = await postcard(id);
      expect(p.status).toBe('failed');
      expect(p.failure_reason).toMatch(/^handoff_failed: (Lob|PostGrid) refused the postcard \(422\)/);
      expect(await eventsOf(id)).toEqual(['postcard.received', 'postcard.rendered', 'postcard.failed']);
    });

    it("is set up in the web app's settings: a secret left empty keeps the stored one, and is never shown", async () => {
      const cookie = await webSession(t.app, t.key);
      const settings = await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
      expect(settings.body).toContain('id="partner"');
      expect(settings.body).toContain(`/partners/${partner}/events</code>`);
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
      expect((await save({ partner, api_key: '', webhook_secret: '', use_type: 'marketing' })).statusCode).toBe(303);
      const app = await t.service.apps.mailPartner.settings();
      expect([app.partner, app.api_key, app.webhook_secret, app.use_type]).toEqual([
        partner,
        lob.key,
        lob.secret,
        'marketing',
      ]);
      // an unknown partner is refused on the page, nothing saved
      expect((await save({ partner: 'pigeon', use_type: 'marketing' })).statusCode).toBe(422);
      expect((await t.service.apps.mailPartner.settings()).partner).toBe(partner);
    });
  },
);

describe('the PostGrid driver', () => {
  it('refuses a size PostGrid does not print (A6, A5) before it asks PostGrid anything', async () => {
    const calls: string[] = [];
    const fetchBefore = globalThis.fetch;
    globalThis.fetch = (async (url: string) => {
      calls.push(url);
      throw new Error('not reached');
    }) as typeof fetch;
    try {
      const driver = postgrid({ api_key: 'live_sk_x', api_url: 'http://127.0.0.1:9' });
      const piece = {
        id: 'pc_1',
        size: 'A6' as const,
        pdf: new Uint8Array(),
        to: { address_line_1: '1 A ST', address_city: 'X', address_state: '', address_zip: '1', address_country: 'GB' },
      };
      await expect(driver.submit(piece)).rejects.toBeInstanceOf(PartnerRefused);
      expect(calls).toEqual([]);
    } finally {
      globalThis.fetch = fetchBefore;
    }
  });
});
