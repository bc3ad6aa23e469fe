/**
 * OpenTelemetry tracing (src/tracing.ts) on the embedded engine, as an operator turns it on: the
 * standard OTEL_* settings, a `paperlink serve` process, and a collector taking OTLP/HTTP. One
 * generate with a Magic Link is one trace under the caller's `traceparent`: the request's span,
 * the generate, and under it the render, the store and the e-mail. Off (the default), the SDK is
 * not even loaded. (On Temporal, the trace crosses into the worker: test/workflows/logs.test.ts.)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { EXAMPLE_IDS } from '../src/templates/store';
import { eventually } from './support/eventually';
import { root } from './support/fixtures';
import { ancestry, spanNamed, startCollector } from './support/otlp';
import { cliJs, serveProcess } from './support/serve';

/** `env` without the OTEL_* settings of whoever runs the tests. */
const withoutOtel = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('OTEL_')));

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

describe('tracing settings', () => {
  const tracing = (env: Record<string, string | undefined>) => loadConfig(env).tracing;

  it('are off unless an exporter or an OTLP endpoint is named', () => {
    expect(tracing({})).toBeUndefined();
    const otlp = (endpoint: string, destination = endpoint) => ({ exporter: 'otlp', endpoint, destination });
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ' http://collector:4318/ ' })).toEqual(
      otlp('http://collector:4318/v1/traces'),
    );
    expect(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/traces' })).toEqual(
      otlp('http://collector:4318/traces'),
    );
    expect(tracing({ OTEL_TRACES_EXPORTER: ' OTLP ', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })).toEqual(
      otlp('http://localhost:4318/v1/traces'),
    );
    // a password in the URL is not repeated in the greeting
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://me:s3cret@collector' })).toEqual(
      otlp('https://me:s3cret@collector/v1/traces', 'https://me:***@collector/v1/traces'),
    );
    expect(tracing({ OTEL_TRACES_EXPORTER: 'console' })).toEqual({
      exporter: 'console',
      destination: 'standard output',
    });
    expect(tracing({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(
      undefined,
    );
    expect(tracing({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
  });

  it('refuse an exporter, a protocol or an endpoint Paperlink cannot send to', () => {
    for (const env of [
      { OTEL_TRACES_EXPORTER: 'zipkin' },
      { OTEL_TRACES_EXPORTER: 'otlp,console' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'GRPC' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' },
    ])
      expect(() => tracing(env)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});

describe('a generate traced on the embedded engine', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-tracing-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('is one trace from the caller through the request to the render, the store and the e-mail', async () => {
    const collector = await startCollector();
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'paperlink-api',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      STARTUP_CHECK: 'false',
    };
    const key = spawnSync(process.execPath, [cliJs, 'keys', 'create', '--name', 'traces', '--data-dir', dataDir], {
      encoding: 'utf8',
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
    }).stdout.trim();
    const server = await serveProcess(dataDir, env);
    try {
      expect(server.output()).toContain(`traces: ${collector.url}/v1/traces`);
      const values = JSON.parse(fs.readFileSync(path.join(root, 'examples/letter/sample.json'), 'utf8')) as unknown;
      const request = { template_id: EXAMPLE_IDS.letter, merge_parameters: values };
      const generate = (destinations: Record<string, unknown>) =>
        fetch(`${server.url}/v1/generate`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-service-api-token': key,
            traceparent: `00-${TRACE}-${CALLER_SPAN}-01`,
          },
          body: JSON.stringify({ ...request, destinations }),
        });
      const res = await generate({
        inkit_storage: {},
        magic_link: { recipient_email: 'reader@example.com', expire_after_n_views: 3 },
      });
      expect(res.status).toBe(201);
      const answer = (await res.json()) as { id: string; document_id: string; magic_link_piece_id: string };

      const names = [
        'paperlink.render',
        'paperlink.store',
        'paperlink.email',
        'paperlink.generate',
        'POST /v1/generate',
      ];
      await eventually(async () => names.every((n) => collector.spans.some((s) => s.name === n)), 'the spans', 30);
      const spans = collector.spans.filter((s) => s.traceId === TRACE);
      const served = spanNamed(spans, 'POST /v1/generate');
      expect(served).toMatchObject({
        parentSpanId: CALLER_SPAN,
        kind: 2,
        attributes: { 'http.route': '/v1/generate', 'http.response.status_code': 201 },
        resource: { 'service.name': 'paperlink-api' },
      });
      expect(spanNamed(spans, 'paperlink.generate').attributes).toMatchObject({
        'paperlink.render_id': answer.id,
        'paperlink.document_id': answer.document_id,
        'paperlink.link_id': answer.magic_link_piece_id,
      });
      for (const step of ['paperlink.render', 'paperlink.store', 'paperlink.email'])
        expect(ancestry(spans, spanNamed(spans, step))).toEqual([step, 'paperlink.generate', 'POST /v1/generate']);
      expect(spanNamed(spans, 'paperlink.store').attributes).toMatchObject({
        'paperlink.document_id': answer.document_id,
      });
      // nothing secret in a span: not the key, not the recipient's address
      expect(JSON.stringify(spans)).not.toContain(key);
      expect(JSON.stringify(spans)).not.toContain('reader@example.com');

      // a refused request keeps its code on its span, and a 4xx is not the server's error
      const before = collector.spans.length;
      expect((await generate({ magic_link: { recipient_email: 'reader@example.com' } })).status).toBe(422);
      await eventually(
        async () => collector.spans.slice(before).some((s) => s.name === 'POST /v1/generate'),
        'the refused request',
        30,
      );
      const refused = spanNamed(collector.spans.slice(before), 'POST /v1/generate');
      expect(refused.attributes).toMatchObject({ 'error.type': 'validation_failed', 'http.response.status_code': 422 });
      expect(refused.status).toBe(0);

      // a client that goes away before its body is read: its request's span still ends, and says so
      const aborted = collector.spans.length;
      const target = new URL(`${server.url}/v1/generate`);
      await new Promise<void>((resolve) => {
        const req = http.request({
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': '1000', 'x-service-api-token': key },
        });
        req.on('error', () => resolve());
        req.on('close', () => resolve());
        req.write('{"template_id":', () => setImmediate(() => req.destroy()));
      });
      await eventually(
        async () => collector.spans.slice(aborted).some((s) => s.name === 'POST /v1/generate'),
        'the aborted request',
        30,
      );
      const gone = spanNamed(collector.spans.slice(aborted), 'POST /v1/generate');
      expect(gone.attributes['error.type']).toBe('aborted');
      expect(gone.attributes['http.response.status_code']).toBeUndefined();
    } finally {
      server.child.kill('SIGTERM');
      await collector.close();
    }
  }, 120_000);

  it('loads no OpenTelemetry SDK when it is off, and does when it is on', () => {
    // a service and its API, one request through them: which of the SDK's modules did it load?
    const script = `
      const { loadConfig } = require('./dist/src/config');
      const { createService } = require('./dist/src/service');
      const { buildApp } = require('./dist/src/app');
      (async () => {
        const service = await createService(loadConfig(process.env, { dataDir: process.argv[1] }), { examples: false });
        const app = await buildApp(service, { logger: false });
        await app.inject({ method: 'GET', url: '/healthz' });
        await app.close();
        await service.close();
        const sdk = Object.keys(require.cache).filter((k) => /@opentelemetry[\\\\/](sdk-|exporter-|resources)/.test(k));
        console.log(JSON.stringify(sdk.length));
      })();`;
    const loaded = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, ['-e', script, path.join(dataDir, 'off')], {
        cwd: root,
        encoding: 'utf8',
        env: { ...withoutOtel(process.env), NODE_OPTIONS: '', STARTUP_CHECK: 'false', ...env },
      });
      expect(r.status).toBe(0);
      // (the console exporter writes its spans first)
      return Number(r.stdout.trim().split('\n').pop());
    };
    expect(loaded({})).toBe(0);
    expect(loaded({ OTEL_TRACES_EXPORTER: 'console' })).toBeGreaterThan(0);
  }, 60_000);
});
