import { createHash } from 'node:crypto';
import type { EmbeddedEngine } from '../../src/engine/embedded';
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { MAX_MESSAGE, SETTING_KEYS } from '../../src/links/policy';
import { ACCESS_LOG_SHOWN, VIEW_MS } from '../../src/links';
import { POLICIES, waitMs } from '../../src/flows/policies';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { eventually } from '../support/eventually';
import { BACKENDS, testService, type TestService } from '../support/service';
import { readPdf } from '../support/pdf';
import { PAGE_IMAGE_WIDTH } from '../../src/templates/viewcopy';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;
const HOUR = 60 * 60 * 1000;

describe.each(BACKENDS)('Magic Links on %s', (backend) => {
  let t: TestService;
  let mail: Mailbox;
  const clock = new FakeClock('2026-11-22T10:00:00Z');
  let recipient = 0;

  beforeAll(async () => {
    mail = await startSmtp();
    t = await testService({
      backend,
      clock,
      config: {
        smtpUrl: mail.url,
        mailFrom: 'Acme Docs <docs@acme.example>',
        publicUrl: 'http://docs.acme.example',
        // every request here comes from one address; the per-address limits have test/http/limits.test.ts
        rateLimits: { postcards: 0, pages: 0, codes: 0, previews: 0 },
      },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await mail?.close();
  });

  const auth = () => ({ 'x-service-api-token': t.key });
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: auth(), payload: payload as object });
  /** POST /v1/generate of the example postcard with these destinations (and any other fields of the request). */
  const generatePostcard = (destinations: Record<string, unknown>, more: Record<string, unknown> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: auth(),
      payload: { template_id: EXAMPLE_IDS.postcard, merge_parameters: postcard, destinations, ...more },
    });
  const setUp = () =>
    api('PUT', '/v1/apps/magic_link', {
      public_url: 'http://docs.acme.example',
      organization_name: 'Acme',
      sender_name: 'Ann',
      sender_email: 'ann@acme.example',
      accent_color: '#AA3300',
    });
  /** Generates the postcard with a Magic Link to a fresh address; returns the answer, the address and the e-mailed URL path. */
  async function share(
    settings: Record<string, unknown>,
    destinations: Record<string, unknown> = { inkit_storage: {} },
  ) {
    const to = `r${++recipient}@example.com`;
    const before = mail.messages.length;
    const res = await generatePostcard({ ...destinations, magic_link: { recipient_email: to, ...settings } });
    if (res.statusCode !== 201) throw new Error(`generate: ${res.statusCode} ${res.body}`);
    const message = await mail.next(to, before);
    const url = new URL(linkIn(message));
    return { res: res.json(), to, path: url.pathname, message };
  }
  /** The recipient proves their address with the e-mailed code; returns the session cookie. */
  async function signIn(linkPath: string, to: string): Promise<string> {
    const before = mail.messages.length;
    const asked = await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    expect(asked.statusCode).toBe(303);
    const code = codeIn(await mail.next(to, before));
    const ok = await t.app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${code}`,
    });
    expect(ok.statusCode).toBe(303);
    const cookie = ok.cookies.find((c) => c.name === 'paperlink_link');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: linkPath });
    return `paperlink_link=${cookie!.value}`;
  }
  /** A stored document of the postcard example, to share afterwards. */
  const storedDocument = async () => (await generatePostcard({ inkit_storage: {} })).json<{ document_id: string }>();
  const view = (linkPath: string, cookie?: string) =>
    t.app.inject({ method: 'GET', url: linkPath, headers: cookie ? { cookie } : {} });

  it('refuses links until the Magic Link app is set up, then keeps and shows its settings', async () => {
    expect((await api('GET', '/v1/apps/magic_link')).json().error.code).toBe('app_not_configured');
    const bad = await api('PUT', '/v1/apps/magic_link', {
      accent_color: 'red',
      sender_email: 'x',
      auth_types: ['social'],
    });
    expect(bad.statusCode).toBe(422);
    const fields = (res: { json(): { error: { details: { field: string }[] } } }) =>
      res
        .json()
        .error.details.map((d) => d.field)
        .sort();
    // what the schema states, every field at once; then the rules between fields (social needs a provider)
    expect(fields(bad)).toEqual(['accent_color', 'sender_email']);
    const social = await api('PUT', '/v1/apps/magic_link', { auth_types: ['social'] });
    expect(social.statusCode).toBe(422);
    expect(fields(social)).toEqual(['oidc_providers']);
    const res = await setUp();
    expect(res.statusCode).toBe(200);
    expect((await api('GET', '/v1/apps/magic_link')).json()).toMatchObject({
      organization_name: 'Acme',
      accent_color: '#AA3300',
      auth_types: ['email'],
    });
  });

  it("makes a link with the spec's settings, e-mails it, and answers with its details", async () => {
    const {
      res,
      to,
      message,
      path: linkPath,
    } = await share({ retain_from_created: { hours: 24 }, expire_after_n_views: 3 });
    expect(res.magic_link_piece_id).toMatch(/^ml_/);
    expect(res.destinations.magic_link).toMatchObject({
      id: res.magic_link_piece_id,
      recipient_email: to,
      views_left: 3,
      status: 'active',
      expires_at: '2026-11-23T10:00:00.000Z',
    });
    expect(res.destinations.magic_link.url).toBe(`http://docs.acme.example${linkPath}`);
    expect(res.destinations.inkit_storage).toBeDefined();
    // the document was given no name: titled by its template, not by a made-up "Postcard 6x4 2026-11-22"
    expect(message.subject).toBe('Ann at Acme shared "Postcard 6x4" with you');
    // the earliest of its rules, as a date with its zone (24 hours come before the 10-day cap)
    expect(message.text).toContain('The link works for 3 views, until Mon 23 Nov 2026, 10:00 UTC at the latest.');
    expect(message.html).toContain(linkPath);
    // the token is stored only as its hash
    const token = linkPath.split('/').pop()!;
    expect(token.length).toBeGreaterThanOrEqual(43);
    const row = await t.service.database.db
      .selectFrom('magic_links')
      .selectAll()
      .where('id', '=', res.magic_link_piece_id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(token);
  });

  it("e-mails from the organisation's sender (not MAIL_FROM), with the logo inline by cid and a footer", async () => {
    const png = fs.readFileSync(path.join(root, 'examples/letter/logo.png'));
    expect(
      (await api('PUT', '/v1/apps/magic_link', { logo_url: `data:image/png;base64,${png.toString('base64')}` }))
        .statusCode,
    ).toBe(200);
    try {
      const { message, to } = await share({ retain_from_opened: { minutes: 45 } });
      expect(message.from?.value).toEqual([{ address: 'ann@acme.example', name: 'Acme' }]);
      expect(message.replyTo?.value).toEqual([{ address: 'ann@acme.example', name: '' }]);
      // a timer from opening and no view limit: open within 10 days
      expect(message.text).toContain(
        'Open it by Wed 2 Dec 2026, 10:00 UTC; from your first view it works for 45 minutes.',
      );
      expect(message.html).toContain('src="cid:logo@paperlink"');
      expect(message.html).not.toContain('data:image');
      expect(message.attachments).toHaveLength(1);
      expect(message.attachments[0]).toMatchObject({
        cid: 'logo@paperlink',
        contentType: 'image/png',
        contentDisposition: 'inline',
      });
      expect(Buffer.compare(message.attachments[0].content, png)).toBe(0);
      expect(message.text).toContain(
        `Sent by Ann at Acme through Paperlink, to ${to}, because Acme shared a document with this address.`,
      );
      expect(message.text).toContain('Questions? Reply to this e-mail or write to ann@acme.example.');
    } finally {
      await api('PUT', '/v1/apps/magic_link', { logo_url: null });
    }
  });

  it("carries the sender's message into the e-mail and the link; refuses one that is blank or too long", async () => {
    const words = 'Here is the signed lease.\nCall me with any questions.';
    // as a browser's form sends it: CRLF line breaks, spaces around
    const { res, message } = await share({ expire_after_n_views: 1, message: `  ${words.replace('\n', '\r\n')}  ` });
    expect(message.text).toContain('Ann at Acme wrote:\n> Here is the signed lease.\n> Call me with any questions.');
    expect(message.html).toContain('<blockquote');
    expect((await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json().message).toBe(words);
    // left out: null, and the e-mail has no quote
    const plain = await share({ expire_after_n_views: 1 });
    expect((await api('GET', `/v1/magic_links/${plain.res.magic_link_piece_id}`)).json().message).toBeNull();
    expect(plain.message.text).not.toContain('wrote:');
    for (const bad of [' \n ', 'x'.repeat(MAX_MESSAGE + 1), 42]) {
      const refused = await generatePostcard({
        magic_link: { recipient_email: 'x@example.com', expire_after_n_views: 1, message: bad },
      });
      expect(refused.statusCode).toBe(422);
      expect(refused.json().error.details).toEqual([
        expect.objectContaining({
          field: 'destinations.magic_link.message',
          code: typeof bad === 'string' ? 'invalid' : 'type',
        }),
      ]);
    }
  });

  it.each([
    [{ retain_from_created: { hours: 3 } }, 'The link works until Sun 22 Nov 2026, 13:00 UTC.'],
    // a view limit alone: the 10-day cap is the date said
    [{ expire_after_n_views: 2 }, 'The link works for 2 views, until Wed 2 Dec 2026, 10:00 UTC at the latest.'],
    // 30 days asked, 10 days given: the e-mail says the cap, not the 30 days
    [
      { expire_after_n_views: 2, retain_from_created: { days: 30 } },
      'The link works for 2 views, until Wed 2 Dec 2026, 10:00 UTC at the latest.',
    ],
    [
      { retain_from_opened: { hours: 2 } },
      'Open it by Wed 2 Dec 2026, 10:00 UTC; from your first view it works for 2 hours.',
    ],
    [
      { retain_from_opened: { days: 2 }, expire_after_n_views: 1 },
      'The link works for 1 view and for 2 days after your first view, and ends Wed 2 Dec 2026, 10:00 UTC at the latest.',
    ],
  ])('says exactly what limits a link in its e-mail: %j', async (settings, sentence) => {
    const { message } = await share(settings);
    expect(message.text).toContain(sentence);
    expect(message.text).not.toMatch(/30 days/);
  });

  it('refuses an auth type the app does not allow', async () => {
    const res = await generatePostcard({
      magic_link: { recipient_email: 'x@example.com', auth_type: 'social', expire_after_n_views: 1 },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details).toEqual([
      expect.objectContaining({ field: 'destinations.magic_link.auth_type', code: 'not_allowed' }),
    ]);
  });

  it('reports every broken link setting at once: what the schema states, then the rules between settings', async () => {
    const fields = (res: { statusCode: number; json(): { error: { details: { field: string }[] } } }) => {
      expect(res.statusCode).toBe(422);
      return res
        .json()
        .error.details.map((d) => d.field)
        .sort();
    };
    expect(
      fields(
        await generatePostcard({
          magic_link: { recipient_email: 'nope', retain_from_created: { hours: 0 }, retain_from_opened: { days: 1 } },
        }),
      ),
    ).toEqual(['destinations.magic_link.recipient_email', 'destinations.magic_link.retain_from_created.hours']);
    expect(
      fields(
        await generatePostcard({
          magic_link: { recipient_email: 'nope', retain_from_created: { hours: 1 }, retain_from_opened: { days: 1 } },
        }),
      ),
    ).toEqual(['destinations.magic_link.recipient_email']);
    expect(
      fields(
        await generatePostcard({
          magic_link: {
            recipient_email: 'a@example.com',
            retain_from_created: { hours: 1 },
            retain_from_opened: { days: 1 },
          },
        }),
      ),
    ).toEqual(['destinations.magic_link.retain_from_opened']);
  });

  it('walks the recipient through code, view and the end of the views; a reload is the same view', async () => {
    const { res, to, path: linkPath } = await share({ expire_after_n_views: 2 }, {});
    expect(res.destinations.inkit_storage).toBeUndefined();
    const page = await view(linkPath);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('E-mail me a code');
    expect(page.body).toContain('r*****@example.com'.slice(0, 1));
    // said before a view is used
    expect(page.body).toMatch(/uses 1 of the 2 views left/);
    const cookie = await signIn(linkPath, to);

    const first = await view(linkPath, cookie);
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('View 1 of 2');
    const pdf = await t.app.inject({ method: 'GET', url: `${linkPath}/document.pdf`, headers: { cookie } });
    expect(pdf.statusCode).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    // reloads within the view cost nothing
    clock.advance(VIEW_MS - 1000);
    for (let i = 0; i < 3; i++) expect((await view(linkPath, cookie)).body).toContain('View 1 of 2');
    expect((await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json()).toMatchObject({
      status: 'active',
      views_used: 1,
      views_left: 1,
    });

    clock.advance(1000);
    const second = await view(linkPath, cookie);
    expect(second.statusCode).toBe(200);
    expect(second.body).toContain('View 2 of 2');
    // the last view goes on for its time (reloads, its PDF), though it ended the link
    clock.advance(VIEW_MS - 1000);
    expect((await view(linkPath, cookie)).statusCode).toBe(200);
    expect(
      (await t.app.inject({ method: 'GET', url: `${linkPath}/document.pdf`, headers: { cookie } })).statusCode,
    ).toBe(200);
    clock.advance(1000);
    const over = await view(linkPath, cookie);
    expect(over.statusCode).toBe(404);
    const unknown = await view('/l/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(over.body).toBe(unknown.body);

    const link = (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json();
    expect(link).toMatchObject({ status: 'expired', views_used: 2, views_left: 0 });
    expect(
      link.access_log.filter((e: { kind: string; outcome: string }) => e.kind === 'viewed' && e.outcome === 'ok'),
    ).toHaveLength(2);
    expect(link.access_log.find((e: { kind: string }) => e.kind === 'code_checked')).toMatchObject({
      outcome: 'ok',
      email: to,
    });
    const doc = (await api('GET', `/v1/documents/${res.document_id}`)).json();
    expect(doc.magic_links.map((l: { id: string }) => l.id)).toEqual([res.magic_link_piece_id]);
  });

  it('answers the newest 100 entries of a long access log with the link, and pages all of them', async () => {
    const { res, path: linkPath } = await share({ expire_after_n_views: 1 });
    const id = res.magic_link_piece_id as string;
    expect((await api('POST', `/v1/magic_links/${id}/expire`)).statusCode).toBe(200);
    // each visit to the ended link from another browser is an entry (with those of making and sending it)
    for (let i = 0; i < ACCESS_LOG_SHOWN + 10; i++) {
      clock.advance(1000);
      const visit = await t.app.inject({ method: 'GET', url: linkPath, headers: { 'user-agent': `scanner/${i}` } });
      expect(visit.statusCode).toBe(404);
    }
    const pages: { id: string; at: string }[][] = [];
    for (let after: string | null = null; pages.length === 0 || after;) {
      const page: { data: { id: string; at: string }[]; has_more: boolean; next_cursor: string | null } = (
        await api('GET', `/v1/magic_links/${id}/access_log?limit=40${after ? `&starting_after=${after}` : ''}`)
      ).json();
      pages.push(page.data);
      after = page.has_more ? page.next_cursor : null;
    }
    const all = pages.flat();
    expect(all.length).toBeGreaterThanOrEqual(ACCESS_LOG_SHOWN + 10);
    expect(pages.slice(0, -1).map((p) => p.length)).toEqual(pages.slice(0, -1).map(() => 40));
    // newest first, each once
    expect(all.map((e) => e.id)).toEqual([...new Set(all.map((e) => e.id))].sort().reverse());
    const link = (await api('GET', `/v1/magic_links/${id}`)).json();
    expect(link.access_log_has_more).toBe(true);
    expect(link.access_log).toHaveLength(ACCESS_LOG_SHOWN);
    // the newest, oldest first
    expect(link.access_log.map((e: { at: string }) => e.at)).toEqual(
      all
        .slice(0, ACCESS_LOG_SHOWN)
        .reverse()
        .map((e) => e.at),
    );
    expect((await api('GET', `/v1/magic_links/ml_nope/access_log`)).statusCode).toBe(404);
  });

  it('counts an ended link opened again and again from one browser into one entry with one event', async () => {
    // a subscriber, so that refusals are written as events (nothing is written for nobody)
    const hook = await api('POST', '/v1/webhooks', {
      url: 'https://hooks.example.com/paperlink',
      events: ['magic_link.access_denied'],
    });
    expect(hook.statusCode).toBe(201);
    const { res, path: linkPath } = await share({ expire_after_n_views: 1 });
    const id = res.magic_link_piece_id as string;
    expect((await api('POST', `/v1/magic_links/${id}/expire`)).statusCode).toBe(200);
    const open = (ua: string) =>
      t.app.inject({ method: 'GET', url: linkPath, headers: { 'user-agent': ua }, remoteAddress: '203.0.113.9' });
    const first = clock.now().toISOString();
    for (let i = 0; i < 30; i++) {
      clock.advance(1000);
      expect((await open('bot/1')).statusCode).toBe(404);
    }
    const last = clock.now().toISOString();
    // another browser is another entry; the first one again after it starts a new one
    expect((await open('bot/2')).statusCode).toBe(404);
    expect((await open('bot/1')).statusCode).toBe(404);
    const refused = (await api('GET', `/v1/magic_links/${id}`))
      .json()
      .access_log.filter((e: { outcome: string }) => e.outcome === 'unavailable');
    expect(refused.map((e: { user_agent: string; count: number }) => [e.user_agent, e.count])).toEqual([
      ['bot/1', 30],
      ['bot/2', 1],
      ['bot/1', 1],
    ]);
    expect(refused[0].at > first && refused[0].last_at === last).toBe(true);
    expect(refused[1].last_at).toBeNull();
    const denied = await t.service.database.db
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'magic_link.access_denied')
      .where('resource_id', '=', id)
      .execute();
    expect(denied).toHaveLength(3);
    expect((await api('DELETE', `/v1/webhooks/${hook.json().id}`)).statusCode).toBe(200);
  });

  it("a reload within a view shows that view's number, whatever views others started since", async () => {
    const { to, path: linkPath } = await share({ expire_after_n_views: 3 });
    const cookies: string[] = [];
    for (let i = 0; i < 3; i++) {
      cookies.push(await signIn(linkPath, to));
      expect((await view(linkPath, cookies[i])).body).toContain(`View ${i + 1} of 3`);
    }
    clock.advance(60_000);
    const again = await view(linkPath, cookies[0]);
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain('View 1 of 3');
    expect(again.body).not.toContain('(the last)');
    expect((await view(linkPath, cookies[2])).body).toContain('View 3 of 3 (the last)');
  });

  it('a mail scanner fetching the link neither opens it nor starts its timer; the first view does', async () => {
    const { res, to, path: linkPath } = await share({ retain_from_opened: { minutes: 45 } });
    const scanned = await t.app.inject({
      method: 'GET',
      url: linkPath,
      headers: { 'user-agent': 'Mimecast-LinkScanner/1.0' },
    });
    expect(scanned.statusCode).toBe(200);
    clock.advance(HOUR);
    const cookie = await signIn(linkPath, to);
    let link = (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json();
    // not opened: only the bound on opening (10 days from creation), no timer yet
    expect(link).toMatchObject({
      opened_at: null,
      expires_at: new Date(Date.parse(link.created_at) + 240 * HOUR).toISOString(),
      views_used: 0,
    });
    clock.advance(5 * 60 * 1000);
    const opened = clock.now().getTime();
    expect((await view(linkPath, cookie)).statusCode).toBe(200);
    link = (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json();
    expect(link).toMatchObject({
      opened_at: new Date(opened).toISOString(),
      expires_at: new Date(opened + 45 * 60 * 1000).toISOString(),
      views_used: 1,
    });
    expect(link.access_log.filter((e: { outcome: string }) => e.outcome === 'first_opening')).toHaveLength(1);
  });

  it('does not show the document without a session, nor with a session of another link', async () => {
    const a = await share({ expire_after_n_views: 5 });
    const b = await share({ expire_after_n_views: 5 });
    const cookieA = await signIn(a.path, a.to);
    expect((await view(b.path, cookieA)).body).toContain('E-mail me a code');
    expect(
      (await t.app.inject({ method: 'GET', url: `${b.path}/document.pdf`, headers: { cookie: cookieA } })).statusCode,
    ).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: `${a.path}/document.pdf` })).statusCode).toBe(404);
  });

  it('counts views atomically: 50 simultaneous openings of a 3-view link by 50 signed-in recipients, exactly 3 succeed', async () => {
    const { res, to, path: linkPath } = await share({ expire_after_n_views: 3 });
    const token = linkPath.split('/').pop()!;
    const link = (await t.service.links.open(token, {}))!;
    // sessions as a right code makes them (codes are limited to 5 an hour per link)
    const cookies = await Promise.all(
      Array.from({ length: 50 }, async () => `paperlink_link=${await t.service.links.startSession(link, to)}`),
    );
    const answers = await Promise.all(cookies.map((cookie) => view(linkPath, cookie)));
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.statusCode === 404)).toHaveLength(47);
    expect((await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json()).toMatchObject({
      views_used: 3,
      status: 'expired',
    });
  });

  it('one session starts one view at a time: 20 simultaneous loads by one recipient are one view', async () => {
    const { res, to, path: linkPath } = await share({ expire_after_n_views: 3 });
    const cookie = await signIn(linkPath, to);
    const answers = await Promise.all(Array.from({ length: 20 }, () => view(linkPath, cookie)));
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    expect((await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json()).toMatchObject({
      views_used: 1,
      status: 'active',
    });
  });

  it('burns a code after 5 wrong tries, and limits codes to 5 an hour', async () => {
    const { to, path: linkPath } = await share({ expire_after_n_views: 5 });
    const before = mail.messages.length;
    await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    const codeMail = await mail.next(to, before);
    const code = codeIn(codeMail);
    // the code is in the body only, never in the subject a lock screen shows
    expect(codeMail.subject).not.toContain(code);
    const wrong = code === '000000' ? '111111' : '000000';
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push(
        (
          await t.app.inject({
            method: 'POST',
            url: `${linkPath}/verify`,
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            payload: `code=${wrong}`,
          })
        ).statusCode,
      );
    expect(statuses).toEqual([401, 401, 401, 401, 410]);
    const right = await t.app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${code}`,
    });
    expect(right.statusCode).toBe(410);
    expect(right.cookies).toHaveLength(0);
    for (let i = 0; i < 4; i++)
      expect((await t.app.inject({ method: 'POST', url: `${linkPath}/code` })).statusCode).toBe(303);
    const limited = await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe('3600');
  });

  it('sends at most five codes an hour however many are asked for at once', async () => {
    const { to, path: linkPath } = await share({ expire_after_n_views: 5 });
    const before = mail.inbox(to).length;
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => t.app.inject({ method: 'POST', url: `${linkPath}/code` })),
    );
    expect(answers.filter((a) => a.statusCode === 303)).toHaveLength(5);
    expect(answers.filter((a) => a.statusCode === 429)).toHaveLength(7);
    await eventually(async () => mail.inbox(to).length - before >= 5, 'five codes e-mailed');
    expect(mail.inbox(to).length - before).toBe(5);
  });

  it('expires a code after 10 minutes', async () => {
    const { to, path: linkPath } = await share({ expire_after_n_views: 5 });
    const before = mail.messages.length;
    await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    const code = codeIn(await mail.next(to, before));
    clock.advance(10 * 60 * 1000 + 1);
    const late = await t.app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${code}`,
    });
    expect(late.statusCode).toBe(410);
  });

  describe('expiry by time, with the clock', () => {
    it.each([
      ['minutes', { minutes: 45 }, 45 * 60 * 1000],
      ['hours', { hours: 5 }, 5 * HOUR],
      ['days', { days: 2 }, 48 * HOUR],
    ])(
      'retain_from_created in %s: works until the deadline, not after; the flow marks it expired',
      async (_unit, retain, ms) => {
        const { res, to, path: linkPath } = await share({ retain_from_created: retain });
        const cookie = await signIn(linkPath, to);
        clock.advance(ms - 1000);
        expect((await view(linkPath, cookie)).statusCode).toBe(200);
        clock.advance(1000);
        expect((await view(linkPath, cookie)).statusCode).toBe(404);
        await eventually(
          async () => (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json().status === 'expired',
          'status expired',
        );
      },
    );

    it('the lifecycle flow expires an untouched link at its deadline', async () => {
      const { res } = await share({ retain_from_created: { hours: 1 } });
      clock.advance(HOUR);
      await eventually(
        async () => (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json().status === 'expired',
        'status expired by the flow',
      );
    });

    it('a view limit also ends the link after 10 days', async () => {
      const { res, to, path: linkPath } = await share({ expire_after_n_views: 100, retain_from_created: { days: 30 } });
      expect(res.destinations.magic_link.expires_at).toBe(new Date(clock.now().getTime() + 240 * HOUR).toISOString());
      const cookie = await signIn(linkPath, to);
      clock.advance(240 * HOUR - 1000);
      expect((await view(linkPath, cookie)).statusCode).toBe(200);
      clock.advance(1000);
      expect((await view(linkPath, cookie)).statusCode).toBe(404);
    });

    it('retain_from_opened starts at the first opening', async () => {
      const { res, to, path: linkPath } = await share({ retain_from_opened: { hours: 2 } });
      const made = clock.now().getTime();
      expect(res.destinations.magic_link.expires_at).toBe(new Date(made + 240 * HOUR).toISOString());
      clock.advance(72 * HOUR);
      const opened = clock.now().getTime();
      const cookie = await signIn(linkPath, to);
      expect((await view(linkPath, cookie)).statusCode).toBe(200);
      const link = (await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json();
      expect(link.opened_at).toBe(new Date(opened).toISOString());
      expect(link.expires_at).toBe(new Date(opened + 2 * HOUR).toISOString());
      clock.advance(2 * HOUR - 1000);
      expect((await view(linkPath, cookie)).statusCode).toBe(200);
      clock.advance(1000);
      expect((await view(linkPath, cookie)).statusCode).toBe(404);
    });

    it('retain_from_opened without a view limit: not opened within 10 days, it ends (reason not_opened); opened on day 9, its whole timer runs', async () => {
      // events are written only for a subscriber: one that wants to know why links end
      const hook = await t.service.webhooks.create({
        url: 'https://hooks.example.com/paperlink',
        events: ['magic_link.expired'],
      });
      const late = await share({ retain_from_opened: { days: 30 } });
      const early = await share({ retain_from_opened: { days: 30 } });
      clock.advance(216 * HOUR);
      const cookie = await signIn(early.path, early.to);
      const opened = clock.now().getTime();
      expect((await view(early.path, cookie)).statusCode).toBe(200);
      clock.advance(24 * HOUR);
      // its lifecycle's timer ends it, and says why
      await eventually(
        async () => (await t.service.links.get(late.res.magic_link_piece_id)).status === 'expired',
        'the unopened link expired',
      );
      // the link says why and when it ended, as its webhook does
      const lateLink = (await api('GET', `/v1/magic_links/${late.res.magic_link_piece_id}`)).json();
      expect(lateLink).toMatchObject({ status: 'expired', opened_at: null, ended_reason: 'not_opened' });
      expect(Date.parse(lateLink.ended_at)).toBeGreaterThan(opened);
      // kept with the link as it ended, not worked out again when asked
      const stored = await t.service.database.db
        .selectFrom('magic_links')
        .select('ended_reason')
        .where('id', '=', late.res.magic_link_piece_id)
        .executeTakeFirstOrThrow();
      expect(stored.ended_reason).toBe('not_opened');
      const ended = await t.service.database.db
        .selectFrom('events')
        .select('data')
        .where('type', '=', 'magic_link.expired')
        .where('resource_id', '=', late.res.magic_link_piece_id)
        .execute();
      expect(ended.map((e) => JSON.parse(e.data).reason)).toEqual(['not_opened']);
      expect((await view(late.path)).statusCode).toBe(404);
      const kept = (await api('GET', `/v1/magic_links/${early.res.magic_link_piece_id}`)).json();
      expect(kept).toMatchObject({
        status: 'active',
        expires_at: new Date(opened + 720 * HOUR).toISOString(),
        ended_at: null,
        ended_reason: null,
      });
      await t.service.webhooks.remove(hook.id);
    });

    it('time and views together: whichever comes first', async () => {
      const a = await share({ retain_from_created: { hours: 1 }, expire_after_n_views: 1 });
      const cookie = await signIn(a.path, a.to);
      expect((await view(a.path, cookie)).statusCode).toBe(200);
      clock.advance(VIEW_MS);
      expect((await view(a.path, cookie)).statusCode).toBe(404);
      const b = await share({ retain_from_created: { hours: 1 }, expire_after_n_views: 5 });
      const cookieB = await signIn(b.path, b.to);
      clock.advance(HOUR);
      expect((await view(b.path, cookieB)).statusCode).toBe(404);
    });
  });

  it('revokes a link at once: the recipient sees the same page as for an unknown link', async () => {
    const { res, to, path: linkPath } = await share({ expire_after_n_views: 5 });
    const cookie = await signIn(linkPath, to);
    const revoked = await api('POST', `/v1/magic_links/${res.magic_link_piece_id}/expire`);
    expect(revoked.json().status).toBe('revoked');
    const page = await view(linkPath, cookie);
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('no longer available');
    expect(
      (await t.app.inject({ method: 'GET', url: `${linkPath}/document.pdf`, headers: { cookie } })).statusCode,
    ).toBe(404);
  });

  it('keeps a link whose e-mail failed as send_failed, says so, and the flow sends it again', async () => {
    mail.refuse(true);
    const to = `retry${++recipient}@example.com`;
    const res = await generatePostcard({
      inkit_storage: {},
      magic_link: { recipient_email: to, expire_after_n_views: 1 },
    });
    mail.refuse(false);
    expect(res.statusCode).toBe(201);
    expect(res.json().destinations.magic_link.status).toBe('send_failed');
    expect(res.json().warnings.map((w: { code: string }) => w.code)).toContain('magic_link_send_failed');
    const id = res.json().magic_link_piece_id;
    expect((await api('GET', `/v1/magic_links/${id}`)).json()).toMatchObject({ status: 'send_failed', sent_at: null });
    // the flow retries after its first wait, on the service's clock: moved a wait at a time until it
    // has (the links of the tests before sleep too, so a sleeper alone does not say it is this flow's)
    await eventually(async () => {
      clock.advance(POLICIES.link_email.waits[0]);
      return mail.inbox(to).length > 0;
    }, 'the flow sent it on retry');
    const message = await mail.next(to);
    await eventually(
      async () => (await api('GET', `/v1/magic_links/${id}`)).json().status === 'active',
      'sent on retry',
    );
    // the retried e-mail carries the URL the API answered with (a send never changes it), and it opens
    const sent = new URL(linkIn(message)).pathname;
    expect(sent).toBe(new URL(res.json().destinations.magic_link.url).pathname);
    expect((await view(sent)).statusCode).toBe(200);
    // e-mailed once: the flow does not send it again
    clock.advance(24 * HOUR);
    await eventually(async () => clock.waiting > 0, 'the flow waits again');
    expect(mail.inbox(to)).toHaveLength(1);
  });

  it('shares an already generated document with POST /v1/documents/:id/magic_links', async () => {
    const doc = await storedDocument();
    const to = `later${++recipient}@example.com`;
    const res = await api('POST', `/v1/documents/${doc.document_id}/magic_links`, {
      recipient_email: to,
      retain_from_created: { days: 1 },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ document_id: doc.document_id, status: 'active', recipient_email: to });
    expect(linkIn(await mail.next(to))).toBe(res.json().url);
    // a link's settings as the API answers them (null for what is not set) make the same link again
    const settings = Object.fromEntries(
      Object.entries((await api('GET', `/v1/magic_links/${res.json().id}`)).json()).filter(([k]) =>
        (SETTING_KEYS as readonly string[]).includes(k),
      ),
    );
    expect(settings).toMatchObject({ expire_after_n_views: null, retain_from_opened: null });
    const beforeAgain = mail.messages.length;
    const again = await api('POST', `/v1/documents/${doc.document_id}/magic_links`, settings);
    expect([again.statusCode, again.json().retain_from_created]).toEqual([201, { days: 1 }]);
    // the second link's e-mail is in before the resend is asked, so the next one counted is the resend's
    expect(linkIn(await mail.next(to, beforeAgain))).toBe(again.json().url);
    expect(
      (await api('POST', '/v1/documents/doc_nope/magic_links', { recipient_email: to, expire_after_n_views: 1 }))
        .statusCode,
    ).toBe(404);
    const before = mail.messages.length;
    const resent = await api('POST', `/v1/magic_links/${res.json().id}/resend`);
    // an explicit resend is the one thing that changes the URL: the old one stops working
    expect(resent.json().url).not.toBe(res.json().url);
    expect(linkIn(await mail.next(to, before))).toBe(resent.json().url);
    expect((await view(new URL(res.json().url).pathname)).statusCode).toBe(404);
    expect((await view(new URL(resent.json().url).pathname)).statusCode).toBe(200);
  });

  it('lists links newest first, filtered by status, document and recipient, page by page', async () => {
    await setUp();
    const doc = await storedDocument();
    const made: string[] = [];
    for (const to of ['list-a@example.com', 'list-b@example.com', 'list-a@example.com']) {
      // newest first is by creation time (ids made in the same millisecond have no order)
      clock.advance(1000);
      made.push(
        (
          await api('POST', `/v1/documents/${doc.document_id}/magic_links`, {
            recipient_email: to,
            expire_after_n_views: 2,
          })
        ).json().id,
      );
    }
    await api('POST', `/v1/magic_links/${made[0]}/expire`);
    const ofDoc = await api('GET', `/v1/magic_links?document_id=${doc.document_id}`);
    expect(ofDoc.statusCode).toBe(200);
    expect(ofDoc.json()).toMatchObject({ object: 'list', has_more: false });
    expect(ofDoc.json().data.map((l: { id: string }) => l.id)).toEqual([...made].reverse());
    const active = (await api('GET', `/v1/magic_links?document_id=${doc.document_id}&status=active`))
      .json()
      .data.map((l: { id: string }) => l.id);
    expect(active).toEqual([made[2], made[1]]);
    const toA = (await api('GET', `/v1/magic_links?document_id=${doc.document_id}&recipient_email=list-a@example.com`))
      .json()
      .data.map((l: { id: string }) => l.id);
    expect(toA).toEqual([made[2], made[0]]);
    const first = (await api('GET', `/v1/magic_links?document_id=${doc.document_id}&limit=2`)).json();
    expect(first).toMatchObject({ has_more: true, next_cursor: made[1] });
    const second = (
      await api('GET', `/v1/magic_links?document_id=${doc.document_id}&limit=2&starting_after=${first.next_cursor}`)
    ).json();
    expect(second.data.map((l: { id: string }) => l.id)).toEqual([made[0]]);
    // the document lists its links in the same order: the one just shared first
    const withLinks = (await api('GET', `/v1/documents/${doc.document_id}`)).json();
    expect(withLinks.magic_links.map((l: { id: string }) => l.id)).toEqual([...made].reverse());
    const bad = await api('GET', '/v1/magic_links?status=lost');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.details[0]).toMatchObject({ field: 'status', code: 'invalid' });
    expect((await t.app.inject({ method: 'GET', url: '/v1/magic_links' })).statusCode).toBe(401);

    // made between two times (at or after the first, before the second)
    const createdAt = await Promise.all(
      made.map(async (id) => (await api('GET', `/v1/magic_links/${id}`)).json().created_at as string),
    );
    const between = (
      await api(
        'GET',
        `/v1/magic_links?document_id=${doc.document_id}&created_after=${encodeURIComponent(createdAt[1])}&created_before=${encodeURIComponent(createdAt[2])}`,
      )
    ).json();
    expect(between.data.map((l: { id: string }) => l.id)).toEqual([made[1]]);
    const badTimes = await api('GET', '/v1/magic_links?created_after=yesterday&created_before=2026-13-45');
    expect(badTimes.statusCode).toBe(422);
    expect(
      badTimes
        .json()
        .error.details.map((d: { field: string; code: string }) => `${d.field}:${d.code}`)
        .sort(),
    ).toEqual(['created_after:invalid', 'created_before:invalid']);
  });

  it('expires several links at once, refusing the whole request when an id is unknown', async () => {
    await setUp();
    const doc = await storedDocument();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await api('POST', `/v1/documents/${doc.document_id}/magic_links`, {
            recipient_email: `many${i}@example.com`,
            expire_after_n_views: 2,
          })
        ).json().id,
      );
    const unknown = await api('POST', '/v1/magic_links/expire', { ids: [ids[0], 'ml_nope', ids[1]] });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.details).toEqual([expect.objectContaining({ field: 'ids[1]', code: 'not_found' })]);
    // nothing was revoked
    expect((await api('GET', `/v1/magic_links/${ids[0]}`)).json().status).toBe('active');
    for (const [body, code] of [
      [{}, 'required'],
      [{ ids: [] }, 'invalid'],
      [{ ids: 'ml_x' }, 'type'],
      [{ ids: Array.from({ length: 101 }, () => ids[0]) }, 'invalid'],
    ] as const) {
      const res = await api('POST', '/v1/magic_links/expire', body);
      expect(res.statusCode).toBe(422);
      expect(res.json().error.details[0]).toMatchObject({ field: 'ids', code });
    }
    const done = await api('POST', '/v1/magic_links/expire', { ids: [ids[0], ids[1], ids[0]] });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toMatchObject({
      object: 'list',
      data: [
        { id: ids[0], status: 'revoked' },
        { id: ids[1], status: 'revoked' },
      ],
    });
    expect((await api('GET', `/v1/magic_links/${ids[2]}`)).json().status).toBe('active');
    // again: the same answer, nothing changes
    expect((await api('POST', '/v1/magic_links/expire', { ids: [ids[0]] })).json().data).toEqual([
      expect.objectContaining({ id: ids[0], status: 'revoked' }),
    ]);
    expect((await t.app.inject({ method: 'POST', url: '/v1/magic_links/expire', payload: { ids } })).statusCode).toBe(
      401,
    );
  });

  it('deletes expired sign-ins, codes and idempotency answers, and keeps a sign-in whose view still runs', async () => {
    const { to, path: linkPath } = await share({ expire_after_n_views: 5 });
    await signIn(linkPath, to);
    await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    const key = `housekeeping-${recipient}`;
    const kept = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { ...auth(), 'idempotency-key': key },
      payload: { template_id: EXAMPLE_IDS.postcard, merge_parameters: postcard, destinations: { inkit_storage: {} } },
    });
    expect(kept.statusCode).toBe(201);
    const db = t.service.database.db;
    const linkId = (
      await db.selectFrom('magic_links').select('id').where('recipient_email', '=', to).executeTakeFirstOrThrow()
    ).id;
    const rows = async () => ({
      sessions: (await db.selectFrom('link_sessions').select('token_hash').where('link_id', '=', linkId).execute())
        .length,
      codes: (await db.selectFrom('link_codes').select('link_id').where('link_id', '=', linkId).execute()).length,
      answers: (await db.selectFrom('idempotency').select('key').where('key', '=', key).execute()).length,
    });
    // a sign-in past its end whose view still runs (the last view's PDF can still load)
    const now = clock.now().getTime();
    await db
      .insertInto('link_sessions')
      .values({
        token_hash: `viewing-${recipient}`,
        link_id: linkId,
        email: to,
        created_at: new Date(now).toISOString(),
        expires_at: new Date(now + 13 * HOUR).toISOString(),
        view_until: new Date(now + 26 * HOUR).toISOString(),
      })
      .execute();
    await t.service.housekeeping();
    expect(await rows()).toEqual({ sessions: 2, codes: 1, answers: 1 });
    clock.advance(25 * HOUR);
    await t.service.housekeeping();
    expect(await rows()).toEqual({ sessions: 1, codes: 0, answers: 0 });
    clock.advance(2 * HOUR);
    expect(await t.service.housekeeping()).toMatchObject({ sessions: 1 });
    expect(await rows()).toEqual({ sessions: 0, codes: 0, answers: 0 });
  });

  it('expires an active link on time after a restart, holding nothing for it in memory meanwhile', async () => {
    const { res } = await share({ retain_from_created: { hours: 3 } });
    t = await t.restart();
    const engine = t.service.engine as EmbeddedEngine;
    await engine.drain();
    expect(engine.size).toBe(0);
    clock.advance(3 * HOUR - 1);
    await engine.drain();
    expect((await t.service.links.get(res.magic_link_piece_id)).status).toBe('active');
    clock.advance(1);
    await engine.drain();
    expect((await t.service.links.get(res.magic_link_piece_id)).status).toBe('expired');
  });

  describe('links for several people (allowed_viewers)', () => {
    /** Asks for a code as `email` (typed on the sign-in page); the answer, and the code when one was sent. */
    async function askCode(linkPath: string, email: string) {
      const before = mail.messages.length;
      const res = await t.app.inject({
        method: 'POST',
        url: `${linkPath}/code`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `email=${encodeURIComponent(email)}`,
      });
      const code = res.statusCode === 303 ? codeIn(await mail.next(email.toLowerCase(), before)) : undefined;
      return { res, code };
    }
    const verify = (linkPath: string, email: string, code: string) =>
      t.app.inject({
        method: 'POST',
        url: `${linkPath}/verify`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `email=${encodeURIComponent(email)}&code=${code}`,
      });
    /** Signs in as `email` and starts a view: the view page. */
    async function viewAs(linkPath: string, email: string) {
      const { res, code } = await askCode(linkPath, email);
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`${linkPath}?sent=1&as=${encodeURIComponent(email.toLowerCase())}`);
      // the page the redirect leads to asks for the code sent to that address
      const asked = await view(res.headers.location as string);
      expect(asked.body).toContain(`name="email" value="${email.toLowerCase()}"`);
      const ok = await verify(linkPath, email, code!);
      expect(ok.statusCode).toBe(303);
      const cookie = ok.cookies.find((c) => c.name === 'paperlink_link')!;
      return view(linkPath, `paperlink_link=${cookie.value}`);
    }

    it('lets each allowed person prove their own address; the view limit counts them all; views are per person', async () => {
      const {
        path: linkPath,
        to,
        res,
      } = await share({
        expire_after_n_views: 2,
        allowed_viewers: ['Colleague@Acme.example', '@partner.example'],
      });
      const id = res.magic_link_piece_id as string;
      // the sign-in page asks who they are
      const first = await view(linkPath);
      expect(first.body).toContain('name="email"');
      // nobody else: another address, a subdomain, not an address at all; no code is sent
      const before = mail.messages.length;
      for (const stranger of ['someone@else.example', 'ann@sub.partner.example'])
        expect((await askCode(linkPath, stranger)).res.statusCode).toBe(403);
      expect((await askCode(linkPath, 'partner.example')).res.statusCode).toBe(422);
      expect(mail.messages.length).toBe(before);
      // one person's code is not another's
      const bob = await askCode(linkPath, 'Bob@Partner.example');
      expect([401, 410]).toContain((await verify(linkPath, 'colleague@acme.example', bob.code!)).statusCode);
      expect((await verify(linkPath, 'someone@else.example', bob.code!)).statusCode).toBe(410);

      expect((await viewAs(linkPath, 'bob@partner.example')).body).toContain('View 1 of 2');
      expect((await viewAs(linkPath, 'colleague@acme.example')).body).toContain('View 2 of 2');
      // the views are used up, whoever comes next (the link's own recipient too)
      expect((await view(linkPath)).statusCode).toBe(404);

      const link = (await api('GET', `/v1/magic_links/${id}`)).json();
      expect(link).toMatchObject({
        allowed_viewers: ['colleague@acme.example', '@partner.example'],
        views_used: 2,
        status: 'expired',
      });
      expect(link.viewers.map((v: { email: string; views: number }) => `${v.email} ${v.views}`).sort()).toEqual([
        'bob@partner.example 1',
        'colleague@acme.example 1',
      ]);
      const refused = link.access_log.filter((e: { outcome: string }) => e.outcome === 'not_allowed');
      expect(refused.map((e: { email: string }) => e.email).sort()).toEqual([
        'ann@sub.partner.example',
        'someone@else.example',
      ]);
      expect(to).not.toBe('bob@partner.example');
    });

    it("keeps codes per person: one asking again does not cancel another's", async () => {
      const { path: linkPath } = await share({ expire_after_n_views: 5, allowed_viewers: ['@team.example'] });
      const a = await askCode(linkPath, 'a@team.example');
      const b = await askCode(linkPath, 'b@team.example');
      // a asks again: their first code is replaced, b's still works
      const a2 = await askCode(linkPath, 'a@team.example');
      expect((await verify(linkPath, 'b@team.example', b.code!)).statusCode).toBe(303);
      if (a2.code !== a.code) expect((await verify(linkPath, 'a@team.example', a.code!)).statusCode).toBe(401);
      expect((await verify(linkPath, 'a@team.example', a2.code!)).statusCode).toBe(303);
    });

    it('refuses a list that is not addresses and domains, naming each entry', async () => {
      const res = await api('POST', `/v1/documents/${(await storedDocument()).document_id}/magic_links`, {
        recipient_email: 'x@example.com',
        expire_after_n_views: 1,
        allowed_viewers: ['ok@example.com', 'nope', '@', '@example.com'],
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.details.map((d: { field: string; code: string }) => `${d.field} ${d.code}`)).toEqual([
        'allowed_viewers[1] invalid_email',
        'allowed_viewers[2] invalid_email',
      ]);
    });
  });

  describe('retention (retain_for)', () => {
    const MINUTE = 60 * 1000;
    const eventsOf = async (type: string, id: string) =>
      (
        await t.service.database.db
          .selectFrom('events')
          .select('data')
          .where('type', '=', type)
          .where('resource_id', '=', id)
          .execute()
      ).map((e) => JSON.parse(e.data) as { reason: string });

    it('deletes a document when its time runs out, with its bytes; its links end (document_expired), and the events say so', async () => {
      const hook = await t.service.webhooks.create({
        url: 'https://hooks.example.com/paperlink',
        events: ['document.deleted', 'magic_link.expired'],
      });
      const {
        res,
        path: linkPath,
        to,
      } = await share(
        { expire_after_n_views: 5, retain_from_created: { days: 3 } },
        { inkit_storage: { name: 'Short-lived', retain_for: { hours: 2 } } },
      );
      const made = clock.now().getTime();
      const ends = new Date(made + 2 * HOUR).toISOString();
      expect(res.destinations.inkit_storage.expires_at).toBe(ends);
      const doc = res.document_id as string;
      expect((await api('GET', `/v1/documents/${doc}`)).json().expires_at).toBe(ends);
      // the same span at the top of the request; one without retain_for is kept
      const top = (await generatePostcard({ inkit_storage: {} }, { retain_for: { minutes: 150 } })).json();
      expect(top.destinations.inkit_storage.expires_at).toBe(new Date(made + 150 * MINUTE).toISOString());
      const kept = await storedDocument();
      expect((await api('GET', `/v1/documents/${kept.document_id}`)).json().expires_at).toBeNull();
      const cookie = await signIn(linkPath, to);
      expect((await view(linkPath, cookie)).statusCode).toBe(200);

      // not before its time
      clock.advance(2 * HOUR - 1);
      expect(await t.service.documents.expireDue()).toBe(0);
      expect((await api('GET', `/v1/documents/${doc}`)).statusCode).toBe(200);
      clock.advance(1);
      // two processes sweeping at once delete it once
      const swept = await Promise.all([t.service.documents.expireDue(), t.service.documents.expireDue()]);
      expect(swept[0] + swept[1]).toBe(1);
      expect((await api('GET', `/v1/documents/${doc}`)).statusCode).toBe(404);
      expect(await t.service.storage.get(doc)).toBeUndefined();
      expect((await api('GET', `/v1/documents/${top.document_id}`)).statusCode).toBe(200);
      // the recipient's view ends at once
      expect((await view(linkPath, cookie)).statusCode).toBe(404);
      expect((await api('GET', `/v1/magic_links/${res.magic_link_piece_id}`)).json().status).toBe('expired');
      expect(await eventsOf('document.deleted', doc)).toEqual([expect.objectContaining({ reason: 'expired' })]);
      expect(await eventsOf('magic_link.expired', res.magic_link_piece_id)).toEqual([
        expect.objectContaining({ reason: 'document_expired' }),
      ]);
      clock.advance(30 * MINUTE);
      expect(await t.service.documents.expireDue()).toBe(1);
      expect((await api('GET', `/v1/documents/${kept.document_id}`)).statusCode).toBe(200);
      await t.service.webhooks.remove(hook.id);
    });

    it("keeps a document made only for links while one is active, and deletes it 30 days (or the storage app's span) after the last ends", async () => {
      const DAY = 24 * HOUR;
      const { res } = await share({ expire_after_n_views: 3 }, {});
      const doc = res.document_id as string;
      const link = res.magic_link_piece_id as string;
      const got = () => api('GET', `/v1/documents/${doc}`);
      expect((await got()).json()).toMatchObject({ follows_links: true, expires_at: null });
      // one stored too, or given its own time, does not follow its links
      const stored = (await share({ expire_after_n_views: 1 })).res;
      expect((await api('GET', `/v1/documents/${stored.document_id}`)).json().follows_links).toBe(false);
      const timed = (
        await generatePostcard(
          { magic_link: { recipient_email: 'timed@example.com', expire_after_n_views: 1 } },
          { retain_for: { days: 1 } },
        )
      ).json();
      expect((await api('GET', `/v1/documents/${timed.document_id}`)).json()).toMatchObject({ follows_links: false });
      // a second link on it; the first ends, the second is active: kept, however long
      const second = await api('POST', `/v1/documents/${doc}/magic_links`, {
        recipient_email: 'second@example.com',
        retain_from_created: { days: 60 },
      });
      await mail.next('second@example.com');
      await api('POST', `/v1/magic_links/${link}/expire`);
      clock.advance(40 * DAY);
      await t.service.documents.expireDue();
      expect((await got()).statusCode).toBe(200);
      // the last one ends: the document says when it goes, and goes then, not before
      await api('POST', `/v1/magic_links/${second.json().id}/expire`);
      const ends = new Date(clock.now().getTime() + 30 * DAY).toISOString();
      expect((await got()).json().expires_at).toBe(ends);
      clock.advance(30 * DAY - 1);
      await t.service.documents.expireDue();
      expect((await got()).statusCode).toBe(200);
      clock.advance(1);
      await t.service.documents.expireDue();
      expect((await got()).statusCode).toBe(404);
      expect(await t.service.storage.get(doc)).toBeUndefined();

      // with a default retention set in the storage app, it is kept as every document is
      expect((await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 2 } })).statusCode).toBe(200);
      try {
        const other = (await share({ expire_after_n_views: 1 }, {})).res;
        expect((await api('GET', `/v1/documents/${other.document_id}`)).json()).toMatchObject({
          follows_links: false,
          expires_at: new Date(clock.now().getTime() + 2 * DAY).toISOString(),
        });
      } finally {
        await api('PUT', '/v1/apps/inkit_storage', { retain_for: null });
      }
    });

    it('does not delete a document that follows its links when a link is made for it as the sweep runs', async () => {
      const DAY = 24 * HOUR;
      const { res } = await share({ expire_after_n_views: 1 }, {});
      await api('POST', `/v1/magic_links/${res.magic_link_piece_id}/expire`);
      clock.advance(31 * DAY);
      // the sweep has found it due; a link is made before it deletes it
      const documents = t.service.documents;
      const remove = documents.remove.bind(documents);
      const spy = jest.spyOn(documents, 'remove').mockImplementation(async (...args) => {
        if (args[0] === res.document_id) {
          const made = await api('POST', `/v1/documents/${res.document_id}/magic_links`, {
            recipient_email: 'late@example.com',
            expire_after_n_views: 1,
          });
          expect(made.statusCode).toBe(201);
        }
        return remove(...args);
      });
      try {
        await documents.expireDue();
      } finally {
        spy.mockRestore();
      }
      expect((await api('GET', `/v1/documents/${res.document_id}`)).json()).toMatchObject({
        follows_links: true,
        expires_at: null,
      });
      await mail.next('late@example.com');
    });

    it("keeps documents for the storage app's default when a request does not say; a request's own span wins", async () => {
      expect((await api('GET', '/v1/apps/inkit_storage')).json()).toMatchObject({ retain_for: null });
      const set = await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 30 } });
      expect(set.statusCode).toBe(200);
      expect(set.json()).toMatchObject({ object: 'app', name: 'inkit_storage', retain_for: { days: 30 } });
      try {
        const now = clock.now().getTime();
        const byDefault = await storedDocument();
        expect((await api('GET', `/v1/documents/${byDefault.document_id}`)).json().expires_at).toBe(
          new Date(now + 30 * 24 * HOUR).toISOString(),
        );
        const own = (await generatePostcard({ inkit_storage: { retain_for: { days: 1 } } })).json();
        expect(own.destinations.inkit_storage.expires_at).toBe(new Date(now + 24 * HOUR).toISOString());
        // what GET answered may be sent back as it is
        const back = await api('PUT', '/v1/apps/inkit_storage', (await api('GET', '/v1/apps/inkit_storage')).json());
        expect(back.statusCode).toBe(200);
      } finally {
        expect((await api('PUT', '/v1/apps/inkit_storage', { retain_for: null })).json().retain_for).toBeNull();
      }
    });

    it('refuses a broken retain_for, naming each field', async () => {
      const said = (res: { statusCode: number; json(): { error: { details: { field: string; code: string }[] } } }) => {
        expect(res.statusCode).toBe(422);
        return res.json().error.details.map((d) => `${d.field} ${d.code}`);
      };
      // what the schema states first (a field the destination does not take), then the two retain_for that differ
      expect(
        said(
          await generatePostcard(
            { inkit_storage: { retain_for: { days: 3 }, keep: true } },
            { retain_for: { days: 2 } },
          ),
        ),
      ).toEqual(['destinations.inkit_storage.keep unknown_field']);
      expect(
        said(await generatePostcard({ inkit_storage: { retain_for: { days: 3 } } }, { retain_for: { days: 2 } })),
      ).toEqual(expect.arrayContaining(['destinations.inkit_storage.retain_for conflict']));
      const units = await generatePostcard({ inkit_storage: {} }, { retain_for: { weeks: 1 } });
      expect(units.statusCode).toBe(422);
      expect(units.json().error.details[0].field).toMatch(/^retain_for/);
      expect((await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 0 } })).statusCode).toBe(422);
    });
  });

  describe('page analytics', () => {
    const report = (linkPath: string, cookie: string | undefined, body: unknown) =>
      t.app.inject({
        method: 'POST',
        url: `${linkPath}/activity`,
        headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
        payload: JSON.stringify(body),
      });
    const timesOf = async (id: string) =>
      (await api('GET', `/v1/magic_links/${id}`))
        .json()
        .viewers.map((v: { email: string; seconds: number; pages: { page: number; seconds: number }[] }) => ({
          email: v.email,
          seconds: v.seconds,
          pages: v.pages.map((p) => `${p.page}:${p.seconds}`),
        }));

    it("adds each person's reported time per page, bounded by the time since they signed in", async () => {
      const { path: linkPath, to, res } = await share({ expire_after_n_views: 3 });
      const id = res.magic_link_piece_id as string;
      const cookie = await signIn(linkPath, to);
      expect((await view(linkPath, cookie)).body).toContain(`data-report="${linkPath}/activity"`);
      expect((await report(linkPath, cookie, { pages: { '1': 4000, '2': 1500 } })).statusCode).toBe(204);
      expect((await report(linkPath, cookie, { pages: { '1': 1000 } })).statusCode).toBe(204);
      expect(await timesOf(id)).toEqual([{ email: to, seconds: 6.5, pages: ['1:5', '2:1.5'] }]);
      // a client claiming a day gets what is left of the minute's slack since it signed in; then nothing
      expect((await report(linkPath, cookie, { pages: { '2': 86_400_000 } })).statusCode).toBe(204);
      expect((await report(linkPath, cookie, { pages: { '1': 5000 } })).statusCode).toBe(204);
      expect(await timesOf(id)).toEqual([{ email: to, seconds: 60, pages: ['1:5', '2:55'] }]);
      // as time passes, more may be reported
      clock.advance(10_000);
      expect((await report(linkPath, cookie, { pages: { '1': 20_000 } })).statusCode).toBe(204);
      expect(await timesOf(id)).toEqual([{ email: to, seconds: 70, pages: ['1:15', '2:55'] }]);
      // the magic_link.viewed event carries the figures of earlier views
      const hook = await t.service.webhooks.create({
        url: 'https://hooks.example.com/p',
        events: ['magic_link.viewed'],
      });
      clock.advance(VIEW_MS);
      expect((await view(linkPath, cookie)).statusCode).toBe(200);
      const viewed = await t.service.database.db
        .selectFrom('events')
        .select('data')
        .where('type', '=', 'magic_link.viewed')
        .where('resource_id', '=', id)
        .execute();
      expect(JSON.parse(viewed[0].data).object.viewers).toEqual([
        expect.objectContaining({ email: to, views: 2, seconds: 70 }),
      ]);
      await t.service.webhooks.remove(hook.id);
    });

    it('refuses a report that is not pages and milliseconds, and one without a viewing session', async () => {
      const { path: linkPath, to, res } = await share({ expire_after_n_views: 3 });
      const cookie = await signIn(linkPath, to);
      await view(linkPath, cookie);
      const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [String(i + 1), 10]));
      // the postcard has two pages: a third, or page 10,000, is none of its own (issue 64: one viewer
      // made 9,954 rows of a three-page document)
      expect(await t.service.documents.pageCount(res.document_id as string)).toBe(2);
      for (const body of [
        { pages: { '0': 10 } },
        { pages: { '1': -1 } },
        { pages: { x: 1 } },
        { pages: many },
        {},
        { pages: { '3': 10 } },
        { pages: { '10000': 10 } },
      ])
        expect((await report(linkPath, cookie, body)).json().error.code).toBe('validation_failed');
      const none = await report(linkPath, undefined, { pages: { '1': 10 } });
      expect(none.statusCode).toBe(404);
      expect(none.json().error.code).toBe('not_found');
    });
  });

  describe('notices: the sender hears, the recipient is reminded', () => {
    const toSender = (before: number) =>
      mail.messages
        .slice(before)
        .filter((m) => (Array.isArray(m.to) ? m.to[0] : m.to)!.value[0].address === 'owner@acme.example');

    it('e-mails the sender once on the first view and once when the link ends, and says why', async () => {
      const before = mail.messages.length;
      const {
        path: linkPath,
        to,
        res,
      } = await share({
        expire_after_n_views: 2,
        notify_sender: { on_first_view: true, on_end: true, email: 'owner@acme.example' },
      });
      const id = res.magic_link_piece_id as string;
      for (let i = 0; i < 2; i++) {
        expect((await view(linkPath, await signIn(linkPath, to))).statusCode).toBe(200);
        clock.advance(VIEW_MS);
      }
      const opened = await mail.next('owner@acme.example', before);
      expect(opened.subject).toBe(`Opened: "Postcard 6x4" by ${to}`);
      expect(opened.text).toContain(`${to} opened "Postcard 6x4"`);
      await eventually(async () => Boolean((await t.service.links.get(id)).notices_sent.ended), 'the end notice sent');
      const ended = toSender(before).find((m) => m.subject?.startsWith('Link ended'))!;
      expect(ended.subject).toBe(`Link ended: "Postcard 6x4" for ${to}`);
      expect(ended.text).toContain('its views were used up (2 of 2)');
      // each once: the lifecycle's later steps find both recorded
      expect((await api('GET', `/v1/magic_links/${id}`)).json().notices_sent).toEqual({
        first_view: expect.any(String),
        ended: expect.any(String),
      });
      expect(toSender(before).map((m) => m.subject?.split(':')[0])).toEqual(['Opened', 'Link ended']);
    });

    it('tries a notice the mail server refuses at each of its policy’s times, then gives it up with magic_link.notice_failed', async () => {
      const policy = POLICIES.link_notice;
      const engine = t.service.engine as EmbeddedEngine;
      const hook = await t.service.webhooks.create({
        url: 'https://hooks.example.com/paperlink',
        events: ['magic_link.notice_failed'],
      });
      const { res } = await share({
        expire_after_n_views: 5,
        notify_sender: { on_end: true, email: 'owner@acme.example' },
      });
      const id = res.magic_link_piece_id as string;
      const failures = async () => {
        const row = await t.service.database.db
          .selectFrom('magic_links')
          .select('notices')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        return (JSON.parse(row.notices ?? '{}') as { failed?: { ended?: { attempts: number } } }).failed?.ended
          ?.attempts;
      };
      mail.refuse(true);
      try {
        expect((await api('POST', `/v1/magic_links/${id}/expire`)).statusCode).toBe(200);
        await engine.drain();
        for (let n = 1; n < policy.attempts; n++) {
          expect([n, await failures()]).toEqual([n, n]);
          // not before its time
          clock.advance(waitMs(policy, n) - 1);
          await engine.drain();
          expect([n, await failures()]).toEqual([n, n]);
          clock.advance(1);
          await engine.drain();
        }
        expect(await failures()).toBe(policy.attempts);
        // given up: a day later nothing more is tried
        clock.advance(24 * HOUR);
        await engine.drain();
        expect(await failures()).toBe(policy.attempts);
      } finally {
        mail.refuse(false);
      }
      const events = await t.service.database.db
        .selectFrom('events')
        .select('data')
        .where('type', '=', 'magic_link.notice_failed')
        .where('resource_id', '=', id)
        .execute();
      expect(events.map((e) => JSON.parse(e.data) as Record<string, unknown>)).toEqual([
        expect.objectContaining({ notice: 'ended', attempts: policy.attempts, error: expect.any(String) }),
      ]);
      expect((await api('GET', `/v1/magic_links/${id}`)).json().notices_sent).toEqual({});
      await t.service.webhooks.remove(hook.id);
    });

    it('reminds a recipient who has not opened the link, with the same URL, before it ends; not one who has', async () => {
      const before = mail.messages.length;
      const idle = await share({ retain_from_created: { hours: 24 }, remind_before: { hours: 2 } });
      const busy = await share({ retain_from_created: { hours: 24 }, remind_before: { hours: 2 } });
      expect((await view(busy.path, await signIn(busy.path, busy.to))).statusCode).toBe(200);
      expect(idle.res.destinations.magic_link).toMatchObject({});
      expect((await api('GET', `/v1/magic_links/${idle.res.magic_link_piece_id}`)).json().remind_before).toEqual({
        hours: 2,
      });
      const sent = mail.messages.length;
      clock.advance(22 * HOUR);
      const reminder = await mail.next(idle.to, sent);
      expect(reminder.subject).toMatch(/^Reminder: "Postcard 6x4" is available until /);
      expect(new URL(linkIn(reminder)).pathname).toBe(idle.path);
      // past both links' end: the one opened got no reminder
      clock.advance(2 * HOUR);
      await eventually(
        async () => (await t.service.links.get(busy.res.magic_link_piece_id)).status === 'expired',
        'the opened link ended',
      );
      expect((await t.service.links.get(busy.res.magic_link_piece_id)).notices_sent).toEqual({});
      expect(
        mail.messages.slice(before).filter((m) => m.subject?.startsWith('Reminder') && m.text?.includes(busy.path)),
      ).toEqual([]);
    });

    it('refuses a reminder as long as the link, and a broken notice setting', async () => {
      const res = await api('POST', `/v1/documents/${(await storedDocument()).document_id}/magic_links`, {
        recipient_email: 'x@example.com',
        retain_from_created: { hours: 24 },
        remind_before: { days: 1 },
        notify_sender: { on_end: 'yes', email: 'nope' },
      });
      expect(res.statusCode).toBe(422);
      expect(
        res
          .json()
          .error.details.map((d: { field: string; code: string }) => `${d.field} ${d.code}`)
          .sort(),
      ).toEqual(['notify_sender.email invalid_email', 'notify_sender.on_end type']);
      const long = await api('POST', `/v1/documents/${(await storedDocument()).document_id}/magic_links`, {
        recipient_email: 'x@example.com',
        expire_after_n_views: 1,
        remind_before: { days: 10 },
      });
      expect(long.json().error.details).toEqual([expect.objectContaining({ field: 'remind_before', code: 'range' })]);
    });
  });

  describe('watermarks and downloads', () => {
    /** Shares the postcard with these settings, signs in and starts a view: the link's path, cookie and id. */
    async function viewing(settings: Record<string, unknown>) {
      const shared = await share({ expire_after_n_views: 3, ...settings });
      const cookie = await signIn(shared.path, shared.to);
      const page = await view(shared.path, cookie);
      expect(page.statusCode).toBe(200);
      return { ...shared, cookie, page, id: shared.res.magic_link_piece_id as string };
    }
    const get = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

    it('draws the watermark, filled in for the viewer, into every page of the PDF they get; the stored one stays clean', async () => {
      const {
        path: linkPath,
        cookie,
        to,
        id,
        res,
      } = await viewing({
        watermark: { text: 'For {{email}} · {{link_id}} · {{ip}} · {{viewed_at}}', opacity: 0.3 },
      });
      const served = await get(`${linkPath}/document.pdf`, cookie);
      expect(served.statusCode).toBe(200);
      const read = await readPdf(served.rawPayload);
      expect(read.pages).toHaveLength(2);
      const stamped = `For ${to} · ${id} · 127.0.0.1 · ${clock.now().toISOString().replace('T', ' ').slice(0, 16)} UTC`;
      // on every page, as one line of text, drawn see-through
      for (const p of read.pages) {
        expect(p.text.replace(/\s+/g, ' ')).toContain(stamped);
        expect(p.runs.find((r) => r.text.includes(to))?.alpha).toBeCloseTo(0.3, 2);
      }
      const stored = await readPdf((await api('GET', `/v1/documents/${res.document_id}/pdf`)).rawPayload);
      expect(stored.text).not.toContain(to);
      // the link shows its settings
      expect((await api('GET', `/v1/magic_links/${id}`)).json()).toMatchObject({
        watermark: { text: 'For {{email}} · {{link_id}} · {{ip}} · {{viewed_at}}', position: 'center', opacity: 0.3 },
        allow_download: true,
      });
    });

    it('without downloads, shows page images (watermarked) and no route serves the PDF', async () => {
      const plain = await viewing({ allow_download: false });
      const marked = await viewing({ allow_download: false, watermark: { text: '{{email}}', position: 'tiled' } });
      for (const { page, path: linkPath } of [plain, marked]) {
        expect(page.body).not.toContain('Download PDF');
        expect(page.body).toContain(`data-images="${linkPath}/pages"`);
        expect(page.body).toContain('data-count="2"');
        for (const url of [`${linkPath}/document.pdf`, `${linkPath}/document.pdf?download=1`])
          expect((await get(url, plain.cookie)).statusCode).toBe(404);
      }
      for (const url of [`${plain.path}/document.pdf`, `${plain.path}/document.pdf?download=1`])
        expect((await get(url, plain.cookie)).statusCode).toBe(404);
      const images = [];
      for (const { path: linkPath, cookie } of [plain, marked]) {
        const image = await get(`${linkPath}/pages/1`, cookie);
        expect(image.statusCode).toBe(200);
        expect(image.headers['content-type']).toBe('image/png');
        expect(image.headers['cache-control']).toBe('no-store');
        expect(image.rawPayload.subarray(1, 4).toString()).toBe('PNG');
        expect(image.rawPayload.readUInt32BE(16)).toBe(PAGE_IMAGE_WIDTH);
        images.push(image.rawPayload);
        // past the last page, without a session, with another link's session: nothing
        expect((await get(`${linkPath}/pages/3`, cookie)).statusCode).toBe(404);
        expect((await get(`${linkPath}/pages/0`, cookie)).statusCode).toBe(404);
        expect((await view(`${linkPath}/pages/1`)).statusCode).toBe(404);
      }
      expect((await get(`${marked.path}/pages/1`, plain.cookie)).statusCode).toBe(404);
      // the watermark is drawn into the image
      expect(images[0].equals(images[1])).toBe(false);
      expect((await api('GET', `/v1/magic_links/${plain.id}`)).json()).toMatchObject({
        allow_download: false,
        watermark: null,
      });
    });

    it('refuses a broken watermark or download setting, naming each field', async () => {
      const res = await generatePostcard({
        magic_link: {
          recipient_email: 'w@example.com',
          expire_after_n_views: 1,
          watermark: {
            text: 'For {{name}}',
            opacity: 2,
            position: 'left',
            size: 1000,
            rotation: 180,
            colour: 'red',
          },
          allow_download: 'no',
        },
      });
      expect(res.statusCode).toBe(422);
      const at = 'destinations.magic_link';
      expect(
        res
          .json()
          .error.details.map((d: { field: string; code: string }) => `${d.field} ${d.code}`)
          .sort(),
      ).toEqual(
        [
          `${at}.allow_download type`,
          `${at}.watermark.colour unknown_field`,
          `${at}.watermark.opacity range`,
          `${at}.watermark.position invalid`,
          `${at}.watermark.rotation range`,
          `${at}.watermark.size range`,
        ].sort(),
      );
      // what no schema can state, once the rest is right: a placeholder the watermark does not know
      const placeholder = await generatePostcard({
        magic_link: { recipient_email: 'w@example.com', expire_after_n_views: 1, watermark: { text: 'For {{name}}' } },
      });
      expect(placeholder.statusCode).toBe(422);
      expect(placeholder.json().error.details).toEqual([
        expect.objectContaining({ field: `${at}.watermark.text`, code: 'unknown_placeholder' }),
      ]);
    });
  });
});

describe('logs', () => {
  it('never hold link tokens, codes, session cookies or API keys', async () => {
    const { Writable } = await import('node:stream');
    const { buildApp } = await import('../../src/app');
    const mail = await startSmtp();
    const t = await testService({ config: { smtpUrl: mail.url, logLevel: 'debug' } });
    let logged = '';
    const app = await buildApp(t.service, {
      logStream: new Writable({ write: (c, _e, cb) => ((logged += c.toString()), cb()) }),
    });
    try {
      await t.service.apps.magicLink.put({});
      const res = await app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'x-service-api-token': t.key },
        payload: {
          template_id: EXAMPLE_IDS.postcard,
          merge_parameters: postcard,
          destinations: { magic_link: { recipient_email: 'log@example.com', expire_after_n_views: 2 } },
        },
      });
      const linkPath = new URL(res.json().destinations.magic_link.url).pathname;
      const token = linkPath.split('/').pop()!;
      await app.inject({ method: 'GET', url: linkPath });
      await app.inject({ method: 'POST', url: `${linkPath}/code` });
      const code = codeIn(await mail.next('log@example.com', 1));
      const ok = await app.inject({
        method: 'POST',
        url: `${linkPath}/verify`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `code=${code}`,
      });
      const session = ok.cookies[0].value;
      await app.inject({ method: 'GET', url: linkPath, headers: { cookie: `paperlink_link=${session}` } });
      await app.inject({
        method: 'GET',
        url: `${linkPath}/document.pdf`,
        headers: { cookie: `paperlink_link=${session}` },
      });
      await app.inject({ method: 'GET', url: '/v1/nothing', headers: { 'x-service-api-token': t.key } });
      expect(logged).toContain('/l/[token]');
      expect(logged.split('\n').length).toBeGreaterThan(8);
      for (const secret of [token, session, t.key]) expect(logged).not.toContain(secret);
      // six digits can hide inside a timestamp; the code alone must not appear
      expect(logged).not.toMatch(new RegExp(`\\b${code}\\b`));
    } finally {
      await app.close();
      await t.stop();
      await mail.close();
    }
  });
});
