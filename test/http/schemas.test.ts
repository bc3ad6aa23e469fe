/**
 * The routes' schemas: what a route's schema refuses in the path or the query is a 422
 * validation_failed in the one error shape, one detail per field with the core's codes, after the
 * key was checked; what it leaves out takes its default.
 */
import type { ValidationError } from '../../src/errors';
import { parsePageQuery } from '../../src/pagination';
import { testService, type TestService } from '../support/service';

describe('route schemas', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(() => t?.stop());

  const get = (url: string, key: string | undefined = t.key) =>
    t.app.inject({ method: 'GET', url, headers: key ? { 'x-service-api-token': key } : {} });
  const details = (res: { json(): { error: { details: { field: string; code: string }[] } } }) =>
    res
      .json()
      .error.details.map((d) => `${d.field}:${d.code}`)
      .sort();

  it('answers every broken query parameter at once, one detail each, in the core codes', async () => {
    const res = await get('/v1/webhooks?limit=0&starting_after=');
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_failed');
    expect(details(res)).toEqual(['limit:range', 'starting_after:invalid']);
    // a value that breaks two rules is one broken field
    const words = await get('/v1/webhooks/wh_x/deliveries?limit=ten');
    expect(words.statusCode).toBe(422);
    expect(details(words)).toEqual(['limit:type']);
    expect(details(await get('/v1/webhooks?limit=101'))).toEqual(['limit:range']);
  });

  it('answers a broken page as the web app pages (src/pagination.ts) do: one API, one answer', async () => {
    const queries: Record<string, string>[] = [
      { limit: '0' },
      { limit: '101' },
      { starting_after: 'x'.repeat(65) },
      { limit: '0', starting_after: '' },
    ];
    for (const q of queries) {
      let byHand: string[] = [];
      try {
        parsePageQuery(q);
      } catch (err) {
        byHand = (err as ValidationError).details.map((d) => `${d.field}:${d.code}`).sort();
      }
      expect(byHand.length).toBeGreaterThan(0);
      for (const route of ['/v1/documents', '/v1/templates', '/v1/magic_links', '/v1/postcards', '/v1/webhooks']) {
        const res = await get(`${route}?${new URLSearchParams(q)}`);
        expect({ route, q, status: res.statusCode, details: details(res) }).toEqual({
          route,
          q,
          status: 422,
          details: byHand,
        });
      }
    }
  });

  it('checks the key before the query: without one, a broken query is a 401', async () => {
    const res = await get('/v1/webhooks?limit=0', '');
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
  });

  it('fills what the query leaves out with its default, and coerces text to numbers', async () => {
    for (let i = 0; i < 3; i++)
      await t.app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: { 'x-service-api-token': t.key },
        payload: { url: `https://hooks.example.com/${i}`, events: ['*'] },
      });
    const two = (await get('/v1/webhooks?limit=2')).json();
    expect(two.data).toHaveLength(2);
    expect(two.has_more).toBe(true);
    const rest = (await get(`/v1/webhooks?starting_after=${two.next_cursor}`)).json();
    expect(rest.data).toHaveLength(1);
    expect(rest.has_more).toBe(false);
  });

  it('refuses a scope list given twice as a type error, not a crash', async () => {
    const res = await get('/v1/key?require=generate&require=admin');
    expect(res.statusCode).toBe(422);
    expect(details(res)).toEqual(['require:type']);
  });
});
