/**
 * What a hostile client cannot hold: a request whose body comes slowly is answered 408 after
 * REQUEST_TIMEOUT_MS and its connection closed; the routes without an API key (postcard intake,
 * the recipient's pages, code requests) take so many requests a minute per client address, then
 * answer 429 with Retry-After in the error shape, counted on the service's clock.
 */
import net from 'node:net';
import { FakeClock } from '../../src/clock';
import { rateLimiters } from '../../src/http/app';
import { RateLimiter } from '../../src/http/ratelimit';
import { testService, type TestService } from '../support/service';

/** Sends the headers and the first bytes of a body that never comes whole; resolves with all the server said once it closed. */
function slowRequest(port: number, path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let said = '';
    socket.on('data', (c: Buffer) => (said += c.toString()));
    socket.on('close', () => resolve(said));
    socket.on('error', reject);
    const head = Object.entries({ host: 'localhost', 'content-length': '60000', ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{"api_token":"`);
  });
}

describe('a request sent slowly', () => {
  let t: TestService;
  let port: number;
  beforeAll(async () => {
    t = await testService({ config: { requestTimeoutMs: 300 } });
    const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = Number(new URL(url).port);
  });
  afterAll(() => t?.stop());

  it('is answered 408 request_timeout in the error shape and its connection closed, with or without a key', async () => {
    for (const [path, headers] of [
      ['/postcards', { 'content-type': 'application/json' }],
      ['/v1/generate', { 'content-type': 'application/json', 'x-service-api-token': t.key }],
    ] as const) {
      const said = await slowRequest(port, path, headers);
      expect(said.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      expect(JSON.parse(said.slice(said.indexOf('\r\n\r\n') + 4))).toMatchObject({
        error: { code: 'request_timeout' },
      });
    }
  });
});

describe('per-address limits on the routes without a key', () => {
  let t: TestService;
  const clock = new FakeClock();
  beforeAll(async () => {
    t = await testService({ clock, config: { rateLimits: { postcards: 3, pages: 5, codes: 2, previews: 2 } } });
  });
  afterAll(() => t?.stop());

  const postcard = (remoteAddress: string, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/postcards',
      remoteAddress,
      headers: { 'content-type': 'application/json', ...headers },
      payload: { api_token: 'plp_not_a_token', first_name: 'Pat' },
    });

  it('answers 429 rate_limited with Retry-After past the limit, per address, and again once the minute refills', async () => {
    for (let i = 0; i < 3; i++) expect((await postcard('203.0.113.7')).statusCode).toBe(401);
    const over = await postcard('203.0.113.7');
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('rate_limited');
    // 3 a minute: one more every 20 s
    expect(over.headers['retry-after']).toBe('20');
    // another address has its own count
    expect((await postcard('203.0.113.8')).statusCode).toBe(401);
    clock.advance(19_000);
    expect((await postcard('203.0.113.7')).statusCode).toBe(429);
    clock.advance(1_000);
    expect((await postcard('203.0.113.7')).statusCode).toBe(401);
    expect((await postcard('203.0.113.7')).statusCode).toBe(429);
  });

  it("limits the recipient's pages (as a page) and code requests on their own counts", async () => {
    const page = () => t.app.inject({ method: 'GET', url: '/l/plm_nosuchtoken', remoteAddress: '198.51.100.1' });
    for (let i = 0; i < 5; i++) expect((await page()).statusCode).not.toBe(429);
    const over = await page();
    expect(over.statusCode).toBe(429);
    expect(over.headers['content-type']).toContain('text/html');
    expect(over.headers['retry-after']).toBe('12');
    const code = () => t.app.inject({ method: 'POST', url: '/l/plm_nosuchtoken/code', remoteAddress: '198.51.100.1' });
    for (let i = 0; i < 2; i++) expect((await code()).statusCode).not.toBe(429);
    expect((await code()).statusCode).toBe(429);
    // the API with a key is not counted per address
    for (let i = 0; i < 10; i++)
      expect(
        (
          await t.app.inject({
            method: 'GET',
            url: '/v1/key',
            remoteAddress: '198.51.100.1',
            headers: { 'x-service-api-token': t.key },
          })
        ).statusCode,
      ).toBe(200);
  });

  it('limits template previews per API key, not per address', async () => {
    const preview = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/templates/preview',
        remoteAddress: '198.51.100.9',
        headers: { 'x-service-api-token': key, 'content-type': 'application/json' },
        payload: { source: '<document><body><p>Hi</p></body></document>' },
      });
    for (let i = 0; i < 2; i++) expect((await preview(t.key)).statusCode).toBe(200);
    const over = await preview(t.key);
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('rate_limited');
    // another key from the same address has its own count
    const other = (await t.service.keys.create('api', 'another')).secret;
    expect((await preview(other)).statusCode).toBe(200);
  });

  it('counts X-Forwarded-For only from a trusted proxy (TRUST_PROXY)', async () => {
    // not trusted: every forwarded address is the proxy's own count
    for (let i = 0; i < 3; i++)
      expect((await postcard('192.0.2.50', { 'x-forwarded-for': `203.0.113.${100 + i}` })).statusCode).toBe(401);
    expect((await postcard('192.0.2.50', { 'x-forwarded-for': '203.0.113.200' })).statusCode).toBe(429);
    const behind = await testService({
      clock,
      config: { rateLimits: { postcards: 1, pages: 0, codes: 0, previews: 0 }, trustProxy: true },
    });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await behind.app.inject({
          method: 'POST',
          url: '/postcards',
          remoteAddress: '192.0.2.50',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${100 + i}` },
          payload: { api_token: 'plp_not_a_token' },
        });
        expect(res.statusCode).toBe(401);
      }
      expect(rateLimiters.get(behind.app)?.size).toBe(3);
    } finally {
      await behind.stop();
    }
  });

  it('holds at most 100,000 addresses, forgetting the one seen longest ago', () => {
    const limiter = new RateLimiter(clock, { postcards: 1, pages: 0, codes: 0, previews: 0 });
    for (let i = 0; i < 100_050; i++) limiter.take('postcards', `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(limiter.size).toBe(100_000);
    // the first was forgotten (a fresh count), the last is remembered (over its limit)
    expect(() => limiter.take('postcards', '10.0.0.0')).not.toThrow();
    expect(() => limiter.take('postcards', `10.1.134.209`)).toThrow(expect.objectContaining({ code: 'rate_limited' }));
    // a limit of 0 counts nothing
    limiter.take('pages', '10.0.0.1');
    expect(limiter.size).toBe(100_000);
  });
});
