/**
 * A bounded fuzz of every route (issue 19): a few thousand generated requests, from a fixed seed,
 * with and without a key, with JSON of any shape and depth, broken JSON, forms, garbage multipart
 * and hostile ids. Never a 5xx; every API failure in the one error shape; every page failure a page.
 */
import { isPagePath } from '../../src/http/errors';
import { testService, type TestService } from '../support/service';

let t: TestService;
beforeAll(async () => {
  t = await testService();
  await t.service.apps.magicLink.put({});
});
afterAll(() => t?.stop());

/** mulberry32: the same requests on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every route of the app, from its own route tree (so a new route is fuzzed without a change here). */
function routes(tree: string): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    const parent = depth ? stack[depth - 1] : '';
    const path =
      parent + (parent.endsWith('/') || m[2].startsWith('/') || m[2].startsWith('.') || !parent ? '' : '/') + m[2];
    stack[depth] = path;
    for (const method of m[3].split(', ')) if (method !== 'HEAD') out.push({ method, path });
  }
  return out;
}

const FIELDS = [
  'template_id',
  'merge_parameters',
  'destinations',
  'inkit_storage',
  'magic_link',
  'recipient_email',
  'expire_after_n_views',
  'retain_from_created',
  'api_token',
  'first_name',
  'last_name',
  'address_line_1',
  'address_state',
  'address_country',
  'code',
  'secret',
  '_csrf',
  'name',
  'source',
  'source_base64',
  'assets',
  'url',
  'events',
  'public_url',
  'auth_types',
  '__proto__',
  'constructor',
  'toString',
];
const STRINGS = [
  '',
  ' ',
  'tmpl_example_letter',
  'tmpl_example_postcard',
  'x'.repeat(300),
  '%ZZ',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '{{x}}',
  '\u0000',
  '\ud800',
  'Łódź 東京 🎉',
  'https://example.com/hook',
  'http://127.0.0.1:1/',
  'a@b.co',
  '123456',
  'US',
  'OR',
  'plk_notakey',
  'plp_notatoken',
];

function value(r: () => number, depth: number): unknown {
  const k = Math.floor(r() * (depth > 6 ? 5 : 8));
  switch (k) {
    case 0:
      return STRINGS[Math.floor(r() * STRINGS.length)];
    case 1:
      return [0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER, 1_000_000_001][Math.floor(r() * 6)];
    case 2:
      return r() < 0.5;
    case 3:
      return null;
    case 4:
      return 'v'.repeat(Math.floor(r() * 40));
    case 5:
    case 6: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 6); i > 0; i--) o[FIELDS[Math.floor(r() * FIELDS.length)]] = value(r, depth + 1);
      return o;
    }
    default:
      return Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth + 1));
  }
}

/** Any generated value as text (an object may carry a "toString" that is not a function). */
const text = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
/** %-escaped for a URL or a form (a lone surrogate becomes U+FFFD, as a browser would send it). */
const escaped = (v: unknown): string => encodeURIComponent(Buffer.from(text(v)).toString());

function body(r: () => number): { type?: string; payload?: string | Buffer } {
  const k = Math.floor(r() * 10);
  if (k < 5) return { type: 'application/json', payload: JSON.stringify(value(r, 0)) };
  if (k === 5)
    return { type: 'application/json', payload: JSON.stringify(value(r, 0)).slice(0, Math.floor(r() * 20)) + '{' };
  if (k === 6)
    return {
      type: 'application/x-www-form-urlencoded',
      payload:
        FIELDS.slice(0, Math.floor(r() * 8))
          .map((f) => `${f}=${escaped(value(r, 3))}`)
          .join('&') + (r() < 0.3 ? '&%ZZ=%' : ''),
    };
  if (k === 7)
    return {
      type: `multipart/form-data; boundary=${r() < 0.5 ? 'B' : ''}`,
      payload: `--B\r\nContent-Disposition: form-data; name="file"; filename="a.xml"\r\n\r\n<document><body><p>{{x}}</p>${r() < 0.5 ? '</body></document>\r\n--B--' : ''}`,
    };
  if (k === 8)
    return {
      type: ['text/plain', 'application/xml', 'application/pdf', 'image/png'][Math.floor(r() * 4)],
      payload: Buffer.from(Array.from({ length: Math.floor(r() * 64) }, () => Math.floor(r() * 256))),
    };
  return {};
}

const IDS = [
  'doc_01HXXXXXXXXXXXXXXXXXXXXXXX',
  'tmpl_example_letter',
  'ml_nope',
  'pc_nope',
  'whk_nope',
  '%ZZ',
  '%C0%AE',
  'x'.repeat(120),
  '..%2F..%2Fetc',
  '🎉',
  'A'.repeat(43),
];

describe('fuzz', () => {
  it('answers a few thousand generated requests on every route without a 5xx, each failure in its shape', async () => {
    const r = random(19);
    const all = routes(t.app.printRoutes({ commonPrefix: false }));
    expect(all.length).toBeGreaterThan(40);
    const problems: string[] = [];
    let sent = 0;
    for (const route of all) {
      for (let i = 0; i < 50; i++) {
        const url =
          route.path.replace(/:[A-Za-z]+/g, () => IDS[Math.floor(r() * IDS.length)]) +
          (r() < 0.2 ? `?limit=${escaped(value(r, 5))}&starting_after=%ZZ&status=x` : '');
        const b = route.method === 'GET' || route.method === 'DELETE' ? (r() < 0.2 ? body(r) : {}) : body(r);
        const headers: Record<string, string> = {};
        if (r() < 0.7) headers['x-service-api-token'] = t.key;
        if (r() < 0.1) headers['idempotency-key'] = escaped(value(r, 5)).slice(0, 300) || 'k';
        if (b.type) headers['content-type'] = b.type;
        const res = await t.app.inject({ method: route.method as 'GET', url, headers, payload: b.payload });
        sent++;
        const what = `${route.method} ${url.slice(0, 80)} (${b.type ?? 'no body'}) → ${res.statusCode}`;
        if (res.statusCode >= 500) problems.push(`${what}: ${res.body.slice(0, 200)}`);
        if (res.statusCode < 400) continue;
        // pages answer pages; the viewer's page-time reports answer JSON (src/http/errors.ts)
        const page = isPagePath(url);
        if (page) {
          if (!String(res.headers['content-type']).startsWith('text/html'))
            problems.push(`${what}: a page path answered ${String(res.headers['content-type'])}`);
        } else {
          let parsed: { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined;
          try {
            parsed = res.json();
          } catch {
            parsed = undefined;
          }
          const e = parsed?.error;
          if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || !Array.isArray(e.details))
            problems.push(`${what}: outside the error shape: ${res.body.slice(0, 120)}`);
        }
      }
    }
    expect(sent).toBeGreaterThan(2000);
    expect(problems).toEqual([]);
  }, 120_000);
});
