/**
 * Every answer an API test receives is checked against /openapi.json: a test app's `inject` fails
 * when a JSON answer of a public route does not match the schema the document gives for its
 * status, when a success has no schema there, or when an error is not in the one error shape.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { withFormats } from '../../src/http/validation';

type Operation = { responses: Record<string, { content?: Record<string, { schema: unknown }> }> };
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

export function checkAnswers(app: FastifyInstance): void {
  const doc = JSON.parse(JSON.stringify(app.swagger())) as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  withFormats(ajv);
  ajv.addSchema({ $id: 'paperlink', components: doc.components }, 'paperlink');
  const compiled = new Map<string, ValidateFunction>();
  const compile = (key: string, schema: unknown) => {
    let v = compiled.get(key);
    if (!v) {
      v = ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components/g, '"paperlink#/components')));
      compiled.set(key, v);
    }
    return v;
  };
  // the document's paths, most specific first: /v1/magic_links/expire before /v1/magic_links/{id}
  const routes = Object.keys(doc.paths)
    .map((p) => ({
      path: p,
      re: new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}$`),
      fixed: p.split('/').filter((s) => s && !s.startsWith('{')).length,
    }))
    .sort((a, b) => b.fixed - a.fixed);

  const check = (method: string, url: string, res: LightMyRequestResponse) => {
    if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) return;
    const pathname = url.split('?')[0];
    const m = method.toLowerCase();
    const route = routes.find((r) => r.re.test(pathname) && doc.paths[r.path][m]);
    if (!route) return;
    const op = doc.paths[route.path][m];
    const what = `${method} ${route.path} ${res.statusCode}`;
    const schema = op.responses[String(res.statusCode)]?.content?.['application/json']?.schema;
    if (!schema && res.statusCode < 400) throw new Error(`${what}: /openapi.json has no schema for this answer`);
    const validate = schema ? compile(what, schema) : compile('error', { $ref: 'paperlink#/components/schemas/Error' });
    const body: unknown = res.json();
    if (!validate(body))
      throw new Error(
        `${what}: the answer does not match /openapi.json: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
      );
  };

  const inject = app.inject.bind(app) as (o: InjectOptions | string) => Promise<LightMyRequestResponse>;
  (app as unknown as { inject: unknown }).inject = async (options: InjectOptions | string) => {
    const res = await inject(options);
    const o = typeof options === 'string' ? { method: 'GET', url: options } : options;
    check(String(o.method ?? 'GET'), typeof o.url === 'string' ? o.url : '', res);
    return res;
  };
}
