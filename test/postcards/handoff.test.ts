/**
 * A live postcard handed to each mail partner (Lob, PostGrid; each played by a stand-in that checks
 * every request against the partner's published schema): submitted once through a lost answer, a
 * crash at the worst moment and a retry; moved on by the partner's signed events, each once; never
 * for a test token.
 */
import { createHmac } from 'node:crypto';
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
    let partnerApi: PartnerStandIn;
    let clock: FakeClock;
    let templateId: string;
    let live: string;
    /** The process dies between Lob's answer and our write: none of its hand-off writes land, its lease stays held. */
    let dying = false;

    beforeAll(async () => {
      clock = new FakeClock(new Date('2026-11-29T10:00:00Z'));
      partnerApi = await startPartner(partner, () => clock.now());
      t = await testService({
        backend,
        clock,
        service: {
          // while the process is dying, what an attempt writes of its outcome never reaches the database
          // (the take before it does: the attempt runs, the partner makes the postcard, the lease stays held)
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
          api_key: partnerApi.key,
          webhook_secret: partnerApi.secret,
          api_url: partnerApi.url,
          use_type: 'operational',
        },
      });
      expect([put.statusCode, put.json().api_key_set, put.json().api_key]).toEqual([200, true, undefined]);
    });
    afterAll(async () => {
      await t?.stop();
      await partnerApi?.close();
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
      const before = partnerApi.made.length;
      const id = await send(live);
      await run();
      const p = await postcard(id);
      expect(p).toMatchObject({ status: 'submitted', test: false, size: '4x6', partner });
      expect(partnerApi.made.length).toBe(before + 1);
      const made = partnerApi.made.at(-1)!;
      expect(p.partner_id).toBe(made.id);
      expect(partnerApi.requests.filter((r) => r.key === id)).not.toHaveLength(0);
      expect(partnerApi.requests.filter((r) => r.key === id && r.problems.length)).toEqual([]);
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
      partnerApi.loseNextAnswer();
      await run();
      expect((await postcard(id)).status).toBe('rendered');
      expect(partnerApi.made.filter((m) => m.ours === id)).toHaveLength(1);
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
      const made = partnerApi.made.filter((m) => m.ours === id);
      expect(made).toHaveLength(1);
      expect(p.partner_id).toBe(made[0].id);
      expect(partnerApi.requests.filter((r) => r.key === id).length).toBeGreaterThanOrEqual(3);

      // the partner's events: mailed (sent twice, as a partner does until it hears 2xx), then returned
      const mailed = partnerApi.event('mailed', made[0]);
      expect((await deliver(mailed)).json()).toEqual({ received: true, moved: 'mailed' });
      expect((await deliver(mailed)).json()).toEqual({ received: true, moved: null });
      expect((await deliver(partnerApi.event('in_transit', made[0]))).json()).toEqual({ received: true, moved: null });
      expect((await postcard(id)).status).toBe('mailed');
      expect((await deliver(partnerApi.event('returned', made[0]))).json().moved).toBe('returned');
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
      expect(partnerApi.requests.at(-1)).toEqual({ key: id, problems: [] });
      expect(partnerApi.made.at(-1)!.to.zip).toBe('97477-1234');
    });

    it('keeps trying while the partner refuses its key (an operator mends it), and fails nothing for it', async () => {
      await t.service.apps.mailPartner.put({ api_key: 'rotated_key' });
      const id = await send(live);
      await run();
      expect((await postcard(id)).status).toBe('rendered');
      await t.service.apps.mailPartner.put({ api_key: partnerApi.key });
      clock.advance(30_000);
      await run();
      expect((await postcard(id)).status).toBe('submitted');
    });

    it('takes an event that comes before its answer was recorded (found by our id in its metadata); the retry then changes nothing', async () => {
      const id = await send(live);
      partnerApi.loseNextAnswer();
      await run();
      expect((await postcard(id)).status).toBe('rendered');
      const made = partnerApi.made.find((m) => m.ours === id)!;
      expect((await deliver(partnerApi.event('mailed', made))).json()).toEqual({ received: true, moved: 'mailed' });
      expect(await postcard(id)).toMatchObject({ status: 'mailed', partner_id: made.id });
      const asked = partnerApi.requests.length;
      clock.advance(30_000);
      await run();
      expect(partnerApi.requests.length).toBe(asked);
      expect(await eventsOf(id)).toEqual([
        'postcard.received',
        'postcard.rendered',
        'postcard.submitted',
        'postcard.mailed',
      ]);
    });

    it('refuses an event not signed with the webhook secret, or too old', async () => {
      const id = await send(live);
      await run();
      const made = partnerApi.made.find((m) => m.ours === id)!;
      expect((await deliver(partnerApi.event('mailed', made, { secret: 'guessed' }))).statusCode).toBe(401);
      const old = partnerApi.event('mailed', made, { at: new Date(clock.now().getTime() - 10 * 60_000) });
      expect((await deliver(old)).statusCode).toBe(401);
      // more than any event could be, refused before anything reads it
      const huge = await deliver({
        headers: { 'content-type': 'application/json' },
        body: `{"pad":"${'x'.repeat(300_000)}"}`,
      });
      expect([huge.statusCode, huge.json().error.code]).toEqual([413, 'body_too_large']);
      // a body changed after it was signed
      const signed = partnerApi.event('mailed', made);
      expect((await deliver({ ...signed, body: signed.body.replace(made.id, 'x') })).statusCode).toBe(401);
    });

    it('prints the return address of the settings, checked as a postcard address is and sent as the partner takes it', async () => {
      const put = (return_address: unknown) =>
        t.app.inject({
          method: 'PUT',
          url: '/v1/apps/mail_partner',
          headers: { 'x-service-api-token': t.key },
          payload: { return_address },
        });
      const at = { company: 'Acme', address_line_1: '1 Main St', address_city: 'Portland', address_state: 'OR' };
      const fault = async (r: unknown) =>
        (await put(r)).json().error.details.map((d: { field: string; code: string }) => [d.field, d.code]);
      expect(await fault({ ...at, address_zip: '9720', address_country: 'US' })).toEqual([
        ['return_address.address_zip', 'invalid'],
      ]);
      expect(await fault({ ...at, address_zip: '97201', address_country: 'US', phone: '1' })).toEqual([
        ['return_address.phone', 'unknown_field'],
      ]);
      // a name or a company, once trimmed
      expect(await fault({ ...at, company: '  ', address_zip: '97201', address_country: 'US' })).toEqual([
        ['return_address.company', 'required'],
      ]);
      expect((await put({ ...at, first_name: ' ', address_zip: '97201', address_country: 'US' })).statusCode).toBe(200);

      const saved = await put({
        company: 'Acme Print Co',
        address_line_1: '1 Main St',
        address_city: 'Portland',
        address_state: 'or',
        address_zip: '97201',
        address_country: 'us',
      });
      expect(saved.json().return_address).toEqual({
        company: 'Acme Print Co',
        address_line_1: '1 MAIN ST',
        address_line_2: '',
        address_city: 'PORTLAND',
        address_state: 'OR',
        address_zip: '97201',
        address_country: 'US',
      });
      const id = await send(live);
      await run();
      expect((await postcard(id)).status).toBe('submitted');
      expect(partnerApi.requests.filter((r) => r.key === id && r.problems.length)).toEqual([]);
      expect(partnerApi.made.find((m) => m.ours === id)!.from).toMatchObject({
        company: 'Acme Print Co',
        line1: '1 MAIN ST',
        city: 'PORTLAND',
        state: 'OR',
        zip: '97201',
        country: 'US',
      });
      expect((await put(null)).json().return_address).toBeNull();
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
      expect((await put(partnerApi.url)).statusCode).toBe(200);
    });

    it("never hands on a test token's postcard", async () => {
      const test = (await t.service.keys.create('postcard', 'staging', undefined, { test: true })).secret;
      const before = partnerApi.requests.length;
      const id = await send(test);
      await run();
      expect(await postcard(id)).toMatchObject({ status: 'rendered', test: true, partner: null, partner_id: null });
      expect(partnerApi.requests.length).toBe(before);
    });

    it('fails a postcard the partner refuses, at once, with its reason', async () => {
      partnerApi.refuseName('Nobody');
      const id = await send(live, { first_name: 'Nobody', last_name: 'Here' });
      await run();
      const p = await postcard(id);
      expect(p.status).toBe('failed');
      expect(p.failure_reason).toMatch(/^handoff_failed: (Lob|PostGrid) refused the postcard \(422\)/);
      expect(await eventsOf(id)).toEqual(['postcard.received', 'postcard.rendered', 'postcard.failed']);
    });

    it("starts a change of partner with no key, secret or api_url: another partner never gets this one's", async () => {
      const other = partner === 'lob' ? 'postgrid' : 'lob';
      const put = (payload: object) =>
        t.app.inject({
          method: 'PUT',
          url: '/v1/apps/mail_partner',
          headers: { 'x-service-api-token': t.key },
          payload,
        });
      const refused = await put({ partner: other });
      expect([refused.statusCode, refused.json().error.details[0]]).toMatchObject([
        422,
        { field: 'api_key', code: 'required' },
      ]);
      expect((await t.service.apps.mailPartner.settings()).partner).toBe(partner);
      const changed = (await put({ partner: other, api_key: 'other_key' })).json();
      expect(changed).toMatchObject({ partner: other, api_key_set: true, webhook_secret_set: false, api_url: null });
      const back = await put({
        partner,
        api_key: partnerApi.key,
        webhook_secret: partnerApi.secret,
        api_url: partnerApi.url,
      });
      expect(back.statusCode).toBe(200);
    });

    it("is set up in the web app's settings: a secret left empty keeps the stored one, and is never shown", async () => {
      const cookie = await webSession(t.app, t.key);
      const settings = await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
      expect(settings.body).toContain('id="partner"');
      expect(settings.body).toContain(`/partners/${partner}/events</code>`);
      expect(settings.body).not.toContain(partnerApi.key);
      expect(settings.body).not.toContain(partnerApi.secret);
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
        partnerApi.key,
        partnerApi.secret,
        'marketing',
      ]);
      // the return address, in the form's fields; a fault is shown beside its field
      const address = {
        'return_address.company': 'Acme',
        'return_address.address_line_1': '1 Main St',
        'return_address.address_city': 'Portland',
        'return_address.address_state': 'OR',
        'return_address.address_country': 'US',
      };
      const bad = await save({ partner, use_type: 'marketing', ...address, 'return_address.address_zip': 'nope' });
      expect(bad.statusCode).toBe(422);
      expect(bad.body).toContain('id="f-return_address_address_zip-err"');
      expect(
        (await save({ partner, use_type: 'marketing', ...address, 'return_address.address_zip': '97201' })).statusCode,
      ).toBe(303);
      expect((await t.service.apps.mailPartner.settings()).return_address).toMatchObject({
        company: 'Acme',
        address_zip: '97201',
      });
      // no address line: no return address
      expect((await save({ partner, use_type: 'marketing' })).statusCode).toBe(303);
      expect((await t.service.apps.mailPartner.settings()).return_address).toBeNull();
      // an unknown partner is refused on the page, nothing saved
      expect((await save({ partner: 'pigeon', use_type: 'marketing' })).statusCode).toBe(422);
      expect((await t.service.apps.mailPartner.settings()).partner).toBe(partner);
    });
  },
);

describe('the PostGrid driver', () => {
  const secret = 'whsec';
  const driver = postgrid({
    api_key: 'live_sk_x',
    webhook_secret: secret,
    api_url: 'http://127.0.0.1:9',
    return_address: null,
  });
  const now = new Date('2026-11-29T10:00:00Z');
  const signed = (event: object, header?: (t: string, v1: string) => string) => {
    const body = JSON.stringify(event);
    const t = String(now.getTime());
    const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    return { headers: { 'postgrid-signature': header ? header(t, v1) : `t=${t},v1=${v1}` }, body: Buffer.from(body) };
  };
  const postcard = (fields: object) => ({
    id: 'event_1',
    object: 'event',
    type: 'postcard.updated',
    live: true,
    data: { id: 'postcard_1', metadata: { paperlink_postcard: 'pc_1' }, ...fields },
  });
  const read = (e: { headers: Record<string, string>; body: Buffer }) => driver.event(e.headers, e.body, now)?.status;

  it("reads PostGrid's statuses as ours: created, in the post, returned; its own steps and a cancellation move nothing", () => {
    expect(read(signed({ ...postcard({ status: 'ready' }), type: 'postcard.created' }))).toBe('submitted');
    expect(read(signed(postcard({ status: 'ready' })))).toBeUndefined();
    expect(read(signed(postcard({ status: 'printing' })))).toBeUndefined();
    expect(read(signed(postcard({ status: 'cancelled' })))).toBeUndefined();
    expect(read(signed(postcard({ status: 'processed_for_delivery' })))).toBe('mailed');
    expect(read(signed(postcard({ status: 'completed' })))).toBe('mailed');
    expect(read(signed(postcard({ status: 'printing', imbStatus: 'entered_mail_stream' })))).toBe('mailed');
    expect(read(signed(postcard({ status: 'completed', imbStatus: 'returned_to_sender' })))).toBe('returned');
    // a letter's event is not a postcard's
    expect(read(signed({ ...postcard({ status: 'completed' }), type: 'letter.updated' }))).toBeUndefined();
  });

  it('takes the signature header as PostGrid writes it, spaces and a second v1 too; refuses anything else with 401', () => {
    const event = postcard({ status: 'completed' });
    expect(read(signed(event, (t, v1) => `v1=${v1}, t=${t}`))).toBe('mailed');
    expect(read(signed(event, (t, v1) => `t=${t},v1=${'0'.repeat(64)},v1=${v1}`))).toBe('mailed');
    const refused = (header: (t: string, v1: string) => string) => {
      try {
        read(signed(event, header));
        return 'taken';
      } catch (err) {
        return (err as { code?: string }).code;
      }
    };
    expect(refused((t) => `t=${t}`)).toBe('unauthorized');
    expect(refused((t, v1) => `t=${t},v1x${v1}`)).toBe('unauthorized');
    // the right signature with junk after it (hex decoding alone would stop at the junk and match)
    expect(refused((t, v1) => `t=${t},v1=${v1}zz`)).toBe('unauthorized');
    // a timestamp written other than in digits, signed as it is written
    expect(
      refused(() => {
        const t = `0x${now.getTime().toString(16)}`;
        return `t=${t},v1=${createHmac('sha256', secret)
          .update(`${t}.${JSON.stringify(event)}`)
          .digest('hex')}`;
      }),
    ).toBe('unauthorized');
    // a timestamp 10 minutes away, signed as it is
    expect(
      refused((_t, _v1) => {
        const t = String(now.getTime() + 10 * 60_000);
        return `t=${t},v1=${createHmac('sha256', secret)
          .update(`${t}.${JSON.stringify(event)}`)
          .digest('hex')}`;
      }),
    ).toBe('unauthorized');
  });

  it('refuses a size PostGrid does not print (A6, A5) before it asks PostGrid anything', async () => {
    const calls: string[] = [];
    const fetchBefore = globalThis.fetch;
    globalThis.fetch = (async (url: string) => {
      calls.push(url);
      throw new Error('not reached');
    }) as typeof fetch;
    try {
      const piece = {
        id: 'pc_1',
        size: 'A6' as const,
        pdf: new Uint8Array(),
        to: { address_line_1: '1 A ST', address_city: 'X', address_state: '', address_zip: '1', address_country: 'GB' },
      };
      await expect(driver.submit(piece, new AbortController().signal)).rejects.toBeInstanceOf(PartnerRefused);
      expect(calls).toEqual([]);
    } finally {
      globalThis.fetch = fetchBefore;
    }
  });
});
