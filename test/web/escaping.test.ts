/**
 * Every page writes what users typed as text, never as markup: the escaping template of
 * src/html.ts, and the web app's and the recipient's pages written with it, fed hostile names.
 */
import fs from 'node:fs';
import path from 'node:path';
import { html, raw } from '../../src/html';
import { messagePage, DEFAULT_BRAND } from '../../src/http/pages';
import { signInPage, viewerPage } from '../../src/links/pages';
import { codeMessage, linkMessage } from '../../src/links/mail';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { webSession, testService, type TestService } from '../support/service';

const HOSTILE = `<img src=x onerror=alert(1)>"'&`;
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;';
/** Markup written as text: a part escaped twice, or a tag of ours shown instead of drawn. */
const DOUBLE =
  /&amp;(lt|gt|quot|amp|#39);|&lt;\/?(div|span|a|tr|td|th|input|form|p|strong|code|time|label|option|button|section|dl|dt|dd|ul|li|h1|h2|select|textarea|table)[\s>]/;

const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('the escaping template', () => {
  // (called through another name: the formatter lays out templates tagged `html`, and these
  // compare exact text)
  const h = html;
  it('writes values as text, markup only when it is Html', () => {
    const inner = h`<b>${HOSTILE}</b>`;
    expect(h`<p title="${HOSTILE}">${HOSTILE}</p>`.text).toBe(`<p title="${ESCAPED}">${ESCAPED}</p>`);
    expect(h`<div>${inner}</div>`.text).toBe(`<div><b>${ESCAPED}</b></div>`);
    expect(h`<ul>${['a<', h`<li>b</li>`, ['c', 2]]}</ul>`.text).toBe('<ul>a&lt;<li>b</li>c2</ul>');
    expect(h`<p>${null}${undefined}${false}${0}</p>`.text).toBe('<p>0</p>');
    expect(h`<p>${raw('<br>')}</p>`.text).toBe('<p><br></p>');
  });

  it("writes the recipient's pages with the document's name as text", () => {
    const pages = [
      viewerPage({
        brand: { ...DEFAULT_BRAND, organization_name: HOSTILE },
        documentName: HOSTILE,
        sender: HOSTILE,
        message: HOSTILE,
        pdfUrl: '/l/abc/document.pdf',
        viewsUsed: 1,
        maxViews: 3,
        expiresAt: '2026-12-01T10:00:00.000Z',
      }),
      signInPage({
        brand: DEFAULT_BRAND,
        documentName: HOSTILE,
        sender: HOSTILE,
        authType: 'social',
        maskedEmail: HOSTILE,
        action: '/l/abc',
        providers: [{ id: 'p', name: HOSTILE }],
        error: HOSTILE,
        viewsLeft: 2,
      }),
      messagePage(DEFAULT_BRAND, HOSTILE, HOSTILE, { url: '/l/abc/code', label: HOSTILE }),
    ];
    for (const page of pages) {
      expect(page).not.toContain(HOSTILE);
      expect(page).toContain(ESCAPED);
      expect(page).not.toMatch(DOUBLE);
    }
    expect(pages[0]).toContain('View 1 of 3');
    expect(pages[0]).toContain('<script type="module" src="/assets/viewer.js"></script>');
  });
  it("writes the recipient's e-mails with the names as text", () => {
    const app = {
      public_url: 'https://docs.example.com',
      public_url_follows_server: false,
      sender_name: HOSTILE,
      sender_email: 'docs@example.com',
      organization_name: HOSTILE,
      logo_url: 'https://example.com/logo.png',
      accent_color: '#1F6FEB',
      auth_types: ['email' as const],
      oidc_providers: [],
      configured_at: '2026-11-24T10:00:00.000Z',
    };
    const to = 'reader@example.com';
    const mails = [
      linkMessage(app, {
        to,
        documentName: HOSTILE,
        url: 'https://docs.example.com/l/abc',
        limits: HOSTILE,
        confirm: to,
        message: HOSTILE,
      }),
      codeMessage(app, { to, documentName: HOSTILE, code: '123456', minutes: 10 }),
    ];
    for (const mail of mails) {
      expect(mail.html).not.toContain(HOSTILE);
      expect(mail.html).toContain(ESCAPED);
      expect(mail.html).not.toMatch(DOUBLE);
    }
    expect(mails[1].html).toContain('123456');
  });
});

describe('the web app fed hostile names', () => {
  let t: TestService;
  let cookie: string;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    t = await testService();
    await t.service.apps.magicLink.put({});
    const template = await t.service.templates.create({
      source: new TextEncoder().encode('<document><body><p>{{note}}</p></body></document>'),
      name: HOSTILE,
      assets: async () => undefined,
    });
    ids.template = template.id;
    const generated = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: template.id,
        merge_parameters: { note: HOSTILE },
        destinations: {
          inkit_storage: { name: HOSTILE },
          magic_link: { recipient_email: 'reader@example.com', expire_after_n_views: 2 },
        },
      },
    });
    expect(generated.statusCode).toBe(201);
    ids.document = generated.json().document_id;
    await t.service.keys.create('api', HOSTILE);
    const token = (await t.service.keys.create('postcard', HOSTILE)).secret;
    const postcard = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { api_token: token, template_id: EXAMPLE_IDS.postcard, ...sample, tagline: HOSTILE },
    });
    expect(postcard.statusCode).toBe(202);
    ids.postcard = postcard.json().id;
    cookie = await webSession(t.app, t.key);
  });
  afterAll(() => t?.stop());

  it.each([
    ['the templates', () => '/app/templates', true],
    ['a template preview', () => `/app/templates/${ids.template}/preview`, true],
    ['generate', () => `/app/generate?template_id=${ids.template}`, true],
    ['the documents', () => '/app/documents', true],
    ['a document with its link', () => `/app/documents/${ids.document}`, true],
    ['the Magic Links', () => '/app/links', true],
    ['a postcard', () => `/app/postcards/${ids.postcard}`, true],
    ['the settings', () => '/app/settings', true],
    ['the postcards', () => '/app/postcards', false],
  ])('shows %s as text', async (_what, url, shown) => {
    const res = await t.app.inject({ method: 'GET', url: url(), headers: { cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(HOSTILE);
    expect(res.body).not.toMatch(DOUBLE);
    if (shown) expect(res.body).toContain(ESCAPED);
  });

  it('shows an error page with the request id as text, in the shell', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/app/documents/doc_missing', headers: { cookie } });
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain('<nav aria-label="Sections">');
    expect(res.body).not.toMatch(DOUBLE);
  });
});
