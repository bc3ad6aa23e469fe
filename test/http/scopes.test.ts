/**
 * Scoped API keys: every /v1 route needs its scopes (one, or two where one would give more than
 * its name says), a key without one gets 403 insufficient_scope naming it, a key with only those
 * gets past the check, and a key made without scopes can do all.
 */
import { registeredRoutes } from '../../src/app';
import { ALL_SCOPES, type Scope } from '../../src/keys';
import { FIELD_SCOPES, hasScopeEntry, scopesOf } from '../../src/http/scopes';
import { firstRequest } from '../../src/serve';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { signInToWebApp, testService, type TestService } from '../support/service';

describe('scoped API keys', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(() => t?.stop());

  const v1Routes = () => (registeredRoutes.get(t.app) ?? []).filter((r) => r.url.startsWith('/v1/'));
  const keyWith = async (scopes: string[]) =>
    (await t.service.keys.create('api', `scoped ${scopes.length}`, scopes)).secret;
  const call = (key: string, method: string, url: string) =>
    t.app.inject({
      method: method as 'GET',
      url: url.replace(/:(\w+)/g, 'x_$1'),
      headers: { 'x-service-api-token': key, 'content-type': 'application/json' },
      ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }),
    });

  it('names a scope for every /v1 route the server has', () => {
    const routes = v1Routes();
    expect(routes.length).toBeGreaterThan(20);
    expect(routes.filter((r) => !hasScopeEntry(r.method, r.url))).toEqual([]);
  });

  it('refuses each route to a key without any one of its scopes, naming it, and lets a key with only those past', async () => {
    for (const r of v1Routes()) {
      const scopes = scopesOf(r.method, r.url);
      for (const scope of scopes) {
        const without = await call(await keyWith(ALL_SCOPES.filter((s) => s !== scope)), r.method, r.url);
        expect({ route: `${r.method} ${r.url}`, status: without.statusCode }).toEqual({
          route: `${r.method} ${r.url}`,
          status: 403,
        });
        expect(without.json().error).toMatchObject({
          code: 'insufficient_scope',
          details: [{ field: 'X-Service-API-Token', code: 'insufficient_scope' }],
        });
        expect(without.json().error.details[0].message).toContain(scope);
      }
      if (!scopes.length) continue;
      const only = await call(await keyWith(scopes), r.method, r.url);
      expect({ route: `${r.method} ${r.url}`, refused: [401, 403].includes(only.statusCode) }).toEqual({
        route: `${r.method} ${r.url}`,
        refused: false,
      });
    }
  });

  it('does not let a key that may share links read a document it may not read (issue 64)', async () => {
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key, 'content-type': 'application/json' },
      payload: firstRequest(),
    });
    const share = await call(
      await keyWith(['links:write']),
      'POST',
      `/v1/documents/${made.json().document_id}/magic_links`,
    );
    expect(share.statusCode).toBe(403);
    expect(
      share
        .json()
        .error.details.map((d: { message: string }) => d.message)
        .join(),
    ).toContain('documents:read');
  });

  it('gives a key made without scopes every scope, as keys made before scopes', async () => {
    const all = (await t.service.keys.create('api', 'everything')).key;
    expect(all.scopes).toEqual(ALL_SCOPES);
    const me = await t.app.inject({ method: 'GET', url: '/v1/key', headers: { 'x-service-api-token': t.key } });
    expect(me.json()).toMatchObject({ object: 'api_key', scopes: ALL_SCOPES });
    for (const r of v1Routes()) expect([401, 403]).not.toContain((await call(t.key, r.method, r.url)).statusCode);
  });

  it('checks required scopes on GET /v1/key, and refuses unknown scope names', async () => {
    const key = await keyWith(['generate', 'documents:read']);
    const ask = (require: string) =>
      t.app.inject({ method: 'GET', url: `/v1/key?require=${require}`, headers: { 'x-service-api-token': key } });
    expect((await ask('generate,documents:read')).statusCode).toBe(200);
    const lacking = await ask('generate,admin,links:write');
    expect(lacking.statusCode).toBe(403);
    expect(lacking.json().error.details.map((d: { message: string }) => d.message.split(' ').pop())).toEqual([
      'admin',
      'links:write',
    ] satisfies Scope[]);
    expect((await ask('generate,everything')).json().error.code).toBe('validation_failed');
    await expect(t.service.keys.create('api', 'bad', ['documents:reed'])).rejects.toMatchObject({
      code: 'validation_failed',
      details: [{ field: 'scopes', code: 'invalid' }],
    });
    await expect(t.service.keys.create('postcard', 'token', ['generate'])).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });

  it("leaves every field of another scope out of each read a key may make (a document's link recipients need links:read)", async () => {
    const json = { 'x-service-api-token': t.key, 'content-type': 'application/json' };
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: json,
      payload: {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: firstRequest().merge_parameters,
        destinations: {
          inkit_storage: {},
          magic_link: { recipient_email: 'reader@example.com', expire_after_n_views: 3 },
        },
      },
    });
    expect(made.statusCode).toBe(201);
    const { document_id } = made.json().destinations.inkit_storage;
    const ids: Record<string, string> = {
      documents: document_id,
      magic_links: made.json().destinations.magic_link.id,
      templates: EXAMPLE_IDS.letter,
    };
    // every field name anywhere in an answer
    const fields = (value: unknown, into = new Set<string>()): Set<string> => {
      if (Array.isArray(value)) for (const v of value) fields(v, into);
      else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) fields(v, into.add(k));
      return into;
    };
    let walked = 0;
    for (const scope of ALL_SCOPES) {
      const key = await keyWith([scope]);
      for (const r of v1Routes()) {
        const needs = scopesOf(r.method, r.url);
        if (r.method !== 'GET' || (needs.length && (needs.length > 1 || needs[0] !== scope))) continue;
        const resource = r.url.split('/')[2];
        if (r.url.includes(':id') && !ids[resource]) continue;
        const res = await t.app.inject({
          method: 'GET',
          url: r.url.replace(':id', ids[resource]).replace(':page', '1').replace(':version', '1'),
          headers: { 'x-service-api-token': key },
        });
        if (res.headers['content-type']?.toString().startsWith('application/json') !== true) continue;
        expect({ route: r.url, status: res.statusCode }).toEqual({ route: r.url, status: 200 });
        walked++;
        const foreign = [...fields(res.json())].filter((f) => f in FIELD_SCOPES && FIELD_SCOPES[f] !== scope);
        expect({ route: r.url, scope, foreign }).toEqual({ route: r.url, scope, foreign: [] });
      }
    }
    expect(walked).toBeGreaterThan(10);
    // and a key with both sees the links
    const both = await keyWith(['documents:read', 'links:read']);
    const doc = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${document_id}`,
      headers: { 'x-service-api-token': both },
    });
    expect(doc.json().magic_links).toEqual([expect.objectContaining({ recipient_email: 'reader@example.com' })]);
  });

  it('lets only a key with admin sign in to the web app', async () => {
    const signIn = (secret: string) => signInToWebApp(t.app, secret);
    expect((await signIn(await keyWith(['generate', 'documents:read']))).statusCode).toBe(403);
    expect((await signIn(await keyWith(['admin']))).statusCode).toBe(303);
  });
});
