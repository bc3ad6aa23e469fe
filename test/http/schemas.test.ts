/**
 * The routes' schemas: what a route's schema refuses in the path, the query or a JSON body is a 422
 * validation_failed in the one error shape, one detail per field with the core's codes, after the
 * key was checked, and never reaches the handler; what a query leaves out takes its default.
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

  describe('a JSON body', () => {
    type Schema = Record<string, unknown> & {
      $ref?: string;
      allOf?: Schema[];
      oneOf?: Schema[];
      properties?: Record<string, Schema>;
      additionalProperties?: unknown;
      'x-codes'?: Record<string, string>;
    };
    type Violation = { at: string[]; value: unknown; field: string; code: string };
    const CODES = { maximum: 'range', maxLength: 'invalid', additionalProperties: 'unknown_field', type: 'type' };

    /** Every bound a body schema states, each as a value that breaks it (read from /openapi.json). */
    function violations(doc: { components: { schemas: Record<string, Schema> } }, root: Schema): Violation[] {
      const resolve = (s: Schema): Schema => {
        if (s.$ref) return resolve(doc.components.schemas[s.$ref.split('/').pop()!]);
        if (s.allOf) return Object.assign({}, ...s.allOf.map(resolve), { ...s, allOf: undefined }) as Schema;
        // a duration or null: the duration's bounds
        if (s.oneOf) return resolve(s.oneOf.find((o) => o.type !== 'null')!);
        return s;
      };
      const out: Violation[] = [];
      const walk = (raw: Schema, at: string[], depth: number) => {
        const s = resolve(raw);
        const field = at.join('.');
        const code = (k: keyof typeof CODES) => s['x-codes']?.[k] ?? CODES[k];
        if (typeof s.maximum === 'number') out.push({ at, value: s.maximum + 1, field, code: code('maximum') });
        if (typeof s.maxLength === 'number')
          out.push({ at, value: 'a'.repeat(s.maxLength + 1), field, code: code('maxLength') });
        if (s.type === 'string' || s.type === 'integer' || s.type === 'boolean')
          out.push({ at, value: s.type === 'string' ? 42 : 'text', field, code: code('type') });
        if (s.properties && depth < 4) {
          if (s.additionalProperties === false && at.length)
            out.push({
              at: [...at, 'not_a_field'],
              value: 1,
              field: `${field}.not_a_field`,
              code: code('additionalProperties'),
            });
          for (const [k, p] of Object.entries(s.properties)) if (!p.readOnly) walk(p, [...at, k], depth + 1);
        }
      };
      walk(root, [], 0);
      return out;
    }

    /** A copy of `base` with `value` at `at` (objects made on the way). */
    function put(base: unknown, at: string[], value: unknown): Record<string, unknown> {
      const copy = structuredClone(base ?? {}) as Record<string, unknown>;
      let node = copy;
      for (const k of at.slice(0, -1)) {
        if (typeof node[k] !== 'object' || node[k] === null || Array.isArray(node[k])) node[k] = {};
        node = node[k] as Record<string, unknown>;
      }
      node[at[at.length - 1]] = value;
      return copy;
    }

    it('refuses every bound each JSON body schema states, before the handler, naming the field with the core code', async () => {
      const doc = (await get('/openapi.json')).json();
      const postcardToken = (await t.service.keys.create('postcard', 'schemas')).secret;
      // whatever a route hands its body to must not be called for a body its schema refuses
      // (the postcard intake is called to check the token first: that nothing was stored says it stopped)
      const reached = [jest.spyOn(t.service.engine, 'generate'), jest.spyOn(t.service.webhooks, 'create')];
      const postcards = () =>
        t.service.database.db
          .selectFrom('postcards')
          .select((e) => e.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
          .then((r) => Number(r.n));
      const before = await postcards();
      let routes = 0;
      let checked = 0;
      type Operation = {
        parameters: { name: string; example?: string; schema?: { examples?: string[] } }[];
        requestBody?: { content?: Record<string, { schema?: Schema; example?: object }> };
      };
      for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
        for (const [method, op] of Object.entries(item)) {
          const media = op.requestBody?.content?.['application/json'];
          const schema = media?.schema;
          if (!schema) continue;
          routes++;
          // a valid path: each parameter's example
          const url = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
            const p = op.parameters.find((q) => q.name === name);
            return encodeURIComponent(p?.schema?.examples?.[0] ?? p?.example ?? 'x');
          });
          // the documented example, which is valid, with one bound broken at a time
          const base = { ...(media.example as object) };
          if ('api_token' in base) Object.assign(base, { api_token: postcardToken });
          for (const v of violations(doc, schema)) {
            // the postcard's own token: breaking it makes a 401, which comes first
            if (v.field === 'api_token') continue;
            const res = await t.app.inject({
              method: method.toUpperCase() as 'POST',
              url,
              headers: { 'x-service-api-token': t.key, 'content-type': 'application/json' },
              payload: JSON.stringify(put(base, v.at, v.value)),
            });
            const said = `${method.toUpperCase()} ${template} ${v.field}=${JSON.stringify(v.value).slice(0, 20)}`;
            expect([said, res.statusCode]).toEqual([said, 422]);
            expect([said, details(res)]).toEqual([said, expect.arrayContaining([`${v.field}:${v.code}`])]);
            checked++;
          }
        }
      }
      for (const spy of reached) expect(spy).not.toHaveBeenCalled();
      expect(await postcards()).toBe(before);
      // generate, sharing, the apps, expiring links, webhooks, templates and postcards
      expect(routes).toBeGreaterThanOrEqual(8);
      expect(checked).toBeGreaterThan(50);
    });

    it('answers a body that is not JSON with 415, before its schema', async () => {
      for (const [url, headers] of [
        ['/v1/generate', { 'x-service-api-token': t.key }],
        ['/postcards', {}],
      ] as const) {
        const res = await t.app.inject({
          method: 'POST',
          url,
          headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'template_id=x',
        });
        expect([url, res.statusCode, res.json().error.code]).toEqual([url, 415, 'unsupported_media_type']);
      }
    });

    it('checks a postcard token before the body: a broken body without one is a 401', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/postcards',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ api_token: 'plp_nope', address_state: 'CALIFORNIA', template_id: 7 }),
      });
      expect(res.statusCode).toBe(401);
      const check = await t.app.inject({
        method: 'POST',
        url: '/postcards/token',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ api_token: 'a'.repeat(300) }),
      });
      expect(check.statusCode).toBe(401);
    });
  });
});
