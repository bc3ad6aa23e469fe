/**
 * Hostile and broken requests get a 4xx in the one error shape, never a 500 (issue 19's
 * reproduced cases, one regression test each).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { testService, type TestService } from '../support/service';

let t: TestService;
beforeAll(async () => {
  t = await testService();
  await t.service.apps.magicLink.put({});
});
afterAll(() => t?.stop());

const shape = (body: unknown) =>
  expect(body).toMatchObject({
    error: { code: expect.any(String), message: expect.any(String), details: expect.any(Array) },
  });
const auth = () => ({ 'x-service-api-token': t.key });

describe('hostile requests', () => {
  it.each([
    [
      'a part with no closing boundary',
      'multipart/form-data; boundary=XYZ',
      '--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.xml"\r\nContent-Type: application/xml\r\n\r\n<document><body><p>x</p></body></document>',
    ],
    ['no boundary at all', 'multipart/form-data', 'anything'],
    ['a truncated header', 'multipart/form-data; boundary=XYZ', '--XYZ\r\nContent-Disposition: form-da'],
  ])('answers malformed multipart (%s) with a 400 in the error shape', async (_what, type, payload) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), 'content-type': type },
      payload,
    });
    expect(res.statusCode).toBe(400);
    shape(res.json());
    expect(res.json().error.code).toBe('malformed_multipart');
  });

  it.each([
    ['POST', '/v1/generate'],
    ['POST', '/postcards'],
    ['POST', '/v1/webhooks'],
  ])('answers a multipart body to %s %s, which takes none, 415 in the error shape', async (method, url) => {
    const res = await t.app.inject({
      method: method as 'POST',
      url,
      headers: { ...auth(), 'content-type': 'multipart/form-data; boundary=XYZ' },
      payload: '--XYZ\r\nContent-Disposition: form-data; name="template_id"\r\n\r\ntmpl_example_letter\r\n--XYZ--\r\n',
    });
    expect(res.statusCode).toBe(415);
    shape(res.json());
    expect(res.json().error.code).toBe('unsupported_media_type');
  });

  it('answers a PDF template with no catalog as template_invalid', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), 'content-type': 'application/pdf' },
      payload: Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF'),
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('template_invalid');
  });

  it('answers a generate body nested 10,000 arrays deep (with an Idempotency-Key) without a 500', async () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': 'deep-1' },
      payload: `{"template_id":"tmpl_example_letter","merge_parameters":${deep},"destinations":{}}`,
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    shape(res.json());
  });

  it('answers a verification code that is not text with a page, not a 500', async () => {
    const made = await t.service.documents.generate(
      {
        template_id: 'tmpl_example_letter',
        merge_parameters: Object.fromEntries(
          (await t.service.templates.load('tmpl_example_letter')).variables.map((v) => [v, 'x']),
        ),
        destinations: { magic_link: { recipient_email: 'hostile@example.com', expire_after_n_views: 1 } },
      },
      { keyId: null, name: null },
    );
    const path = new URL(made.destinations.magic_link!.url).pathname;
    const res = await t.app.inject({
      method: 'POST',
      url: `${path}/verify`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ code: { toString: 1 } }),
    });
    expect(res.statusCode).toBeLessThan(500);
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
  });

  it('answers a web-app sign-in secret that is not text without a 500', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/app/signin' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? 'x';
    const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const res = await t.app.inject({
      method: 'POST',
      url: '/app/signin',
      headers: { 'content-type': 'application/json', cookie },
      payload: JSON.stringify({ _csrf: csrf, secret: { toString: 1 } }),
    });
    expect(res.statusCode).toBeLessThan(500);
  });

  it.each(['/v1/documents/%ZZ', '/v1/documents/%C0%AE', `/v1/documents/${'d'.repeat(150)}`])(
    'answers a bad id %s without a key with 401 in the shape, and with a key with a 4xx in the shape',
    async (url) => {
      const anonymous = await t.app.inject({ method: 'GET', url });
      expect(anonymous.statusCode).toBe(401);
      shape(anonymous.json());
      // every answer names its request, the router's refusals too (support asks for it)
      expect(anonymous.headers['x-request-id']).toMatch(/^req_\w+$/);
      const keyed = await t.app.inject({ method: 'GET', url, headers: auth() });
      expect(keyed.statusCode).toBeGreaterThanOrEqual(400);
      expect(keyed.statusCode).toBeLessThan(500);
      shape(keyed.json());
      expect(keyed.headers['x-request-id']).toMatch(/^req_\w+$/);
    },
  );

  // a recipient's link and the web app are pages: what they refuse is a page too, never JSON or a stack
  const page = (
    res: { statusCode: number; headers: Record<string, unknown>; body: string },
    status: number,
    code: string,
  ) => {
    expect(res.statusCode).toBe(status);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBeDefined();
    expect(res.body).toContain('<h1>');
    expect(res.body).toContain(`Code ${code}`);
    expect(res.headers['x-request-id']).toMatch(/^req_\w+$/);
    expect(res.body).not.toMatch(/ at \S+ \(|node_modules/);
  };
  const token = 'A'.repeat(43);

  it.each([
    ['a broken %-escape in a link', 'GET', '/l/%ZZ', undefined, undefined, 400, 'bad_url'],
    ['a broken %-escape in the web app', 'GET', '/app/templates/%C0%AE', undefined, undefined, 400, 'bad_url'],
    [
      'a form over the body limit',
      'POST',
      `/l/${token}/verify`,
      'application/x-www-form-urlencoded',
      `code=${'1'.repeat(11 * 1024 * 1024)}`,
      413,
      'body_too_large',
    ],
    [
      'a body that is not a form',
      'POST',
      `/l/${token}/verify`,
      'text/plain',
      'code=123456',
      415,
      'unsupported_media_type',
    ],
    ['broken JSON', 'POST', `/l/${token}/verify`, 'application/json', '{"code": ', 400, 'malformed_json'],
    ['no such page', 'GET', `/l/${token}/no/such/page`, undefined, undefined, 404, 'not_found'],
  ])('answers %s on a page path with a styled page', async (_what, method, url, type, payload, status, code) => {
    const res = await t.app.inject({
      method: method as 'GET' | 'POST',
      url,
      headers: type ? { 'content-type': type } : {},
      payload,
    });
    page(res, status, code);
  });

  it('answers a cheap request while the largest document the limits allow renders', async () => {
    // 998 pages of text, one item each: just under RENDER_MAX_PAGES (1,000)
    const tmpl = await t.service.templates.create({
      source: '<document><body><each var="items"><p>{{item}}</p><page-break/></each></body></document>',
    });
    const items = JSON.stringify(Array.from({ length: 998 }, (_, i) => `Page ${i + 1} ${'lorem ipsum '.repeat(40)}`));
    // know when the render has begun, and whether it has ended
    const renderer = t.service.renderer;
    const render = renderer.render.bind(renderer);
    let began!: () => void;
    const begun = new Promise<void>((r) => (began = r));
    let ended = false;
    renderer.render = (...args: Parameters<typeof render>) => {
      const p = render(...args);
      began();
      void p.finally(() => (ended = true)).catch(() => undefined);
      return p;
    };
    try {
      const big = t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: { template_id: tmpl.id, merge_parameters: { items }, destinations: { inkit_storage: {} } },
      });
      await begun;
      const health = await t.app.inject({ method: 'GET', url: '/healthz' });
      expect(health.statusCode).toBe(200);
      expect(health.headers['x-request-id']).toMatch(/^req_\w+$/);
      // answered while the render still ran: it runs on a render thread, not on the HTTP thread
      expect(ended).toBe(false);
      expect((await big).statusCode).toBe(201);
      expect(ended).toBe(true);
    } finally {
      renderer.render = render;
    }
  }, 60_000);

  it('answers headers over the limit with 431 in the error shape', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: '/healthz', headers: { 'x-filler': 'a'.repeat(20_000) } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'headers_too_large', details: [] } });
  });
});
