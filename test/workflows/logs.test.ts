/**
 * `paperlink worker` and `ENGINE=temporal paperlink serve` as operators run them, on a real
 * Temporal server (test/support/temporal.ts), under LOG_FORMAT=json: each greets naming the engine
 * and the address, namespace and task queue it connects to, and every line either writes, on
 * standard output and standard error, is a JSON object — the Temporal SDK's own messages (at
 * LOG_LEVEL=debug, where it says most) included — through a generate run by the worker and a stop.
 * Each serves GET /metrics on METRICS_ADDRESS: the API counts the request, the worker the render.
 * Each sends its spans to one collector (OTEL_EXPORTER_OTLP_ENDPOINT): the generate is one trace
 * from the caller's `traceparent` through the API and Temporal into the worker's render, store and e-mail.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { eventually } from '../support/eventually';
import { jsonLines, run, type LogLine } from '../support/logs';
import { freshPostgres } from '../support/service';
import { ancestry, spanNamed, startCollector } from '../support/otlp';
import { startTemporal, TEMPORAL_MISSING } from '../support/temporal';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

const suite = TEMPORAL_MISSING ? describe.skip : describe;

suite(
  `logs of paperlink worker and serve on Temporal${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`,
  () => {
    let env: TestWorkflowEnvironment;
    let dataDir: string;

    beforeAll(async () => {
      env = await startTemporal();
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-logs-'));
    }, 120_000);

    afterAll(async () => {
      await env?.teardown();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('greet with where they connect, and write only JSON lines through a generate and a stop', async () => {
      const address = env.connection.options.address;
      const collector = await startCollector();
      const taskQueue = `paperlink-logs-${process.pid}`;
      const common = {
        DATABASE_URL: await freshPostgres(),
        STORAGE: 'database',
        TEMPORAL_ADDRESS: address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'debug',
        STARTUP_CHECK: 'false',
        // each its own GET /metrics, on a port the system picks (named in its greeting)
        METRICS_ADDRESS: '127.0.0.1:0',
        // one set of Magic Link keys for both, as every process on one database must have
        LINK_TOKEN_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        // traces to one collector, sent within 50 ms of each span's end
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      };
      const worker = run(['worker', '--data-dir', path.join(dataDir, 'worker')], {
        ...common,
        OTEL_SERVICE_NAME: 'paperlink-worker',
      });
      const serve = run(['serve', '--port', '0', '--processes', '1', '--data-dir', path.join(dataDir, 'serve')], {
        ...common,
        ENGINE: 'temporal',
        OTEL_SERVICE_NAME: 'paperlink-api',
      });
      const where = { address, namespace: 'default', task_queue: taskQueue };
      try {
        const polling = () => jsonLines(worker.out.stderr, 'worker stderr').find((l) => l.engine === 'temporal');
        await eventually(async () => polling() !== undefined, 'the worker polling', 60).catch((err: Error) => {
          throw new Error(`${err.message}; it wrote:\n${worker.out.stderr}`);
        });
        expect(polling()!.temporal).toEqual(where);

        const keyLine = () => jsonLines(serve.out.stdout, 'serve stdout').find((l) => /^plk_\w+$/.test(l.msg));
        await eventually(async () => keyLine() !== undefined, 'the greeting', 60).catch((err: Error) => {
          throw new Error(`${err.message}; it wrote:\n${serve.out.stdout}${serve.out.stderr}`);
        });
        const greeting = jsonLines(serve.out.stdout, 'serve stdout').find((l) => typeof l.url === 'string')!;
        expect(greeting).toMatchObject({ engine: 'temporal', database: 'postgres', temporal: where });

        // a letter rendered by the worker, through Temporal, shared by a Magic Link, in the caller's trace
        const request = JSON.parse(fs.readFileSync(path.join(dataDir, 'serve', 'first-request.json'), 'utf8')) as {
          destinations: Record<string, unknown>;
        };
        request.destinations.magic_link = { recipient_email: 'reader@example.com', expire_after_n_views: 3 };
        const res = await fetch(`${greeting.url as string}/v1/generate`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-service-api-token': keyLine()!.msg,
            traceparent: `00-${TRACE}-${CALLER_SPAN}-01`,
          },
          body: JSON.stringify(request),
        });
        expect(res.status).toBe(201);

        // one trace: the API's request span, Temporal's spans on both sides, and the worker's own steps
        const steps = ['paperlink.render', 'paperlink.store', 'paperlink.email'];
        // each process sends on its own timer: wait until every step's chain reaches the request's span
        const reached = () =>
          steps.every((n) => {
            const inTrace = collector.spans.filter((s) => s.traceId === TRACE);
            const step = inTrace.find((s) => s.name === n);
            return step !== undefined && ancestry(inTrace, step).at(-1) === 'POST /v1/generate';
          });
        await eventually(async () => reached(), 'the spans', 30);
        const spans = collector.spans.filter((s) => s.traceId === TRACE);
        const service = (name: string) => spanNamed(spans, name).resource['service.name'];
        for (const step of steps) {
          const chain = ancestry(spans, spanNamed(spans, step));
          expect(chain.slice(0, 2)).toEqual([step, 'paperlink.generate']);
          expect(chain).toEqual(
            expect.arrayContaining(['RunActivity:generateDocument', 'RunWorkflow:generate', 'StartWorkflow:generate']),
          );
          expect(chain.at(-1)).toBe('POST /v1/generate');
          expect(service(step)).toBe('paperlink-worker');
        }
        expect(spanNamed(spans, 'POST /v1/generate').parentSpanId).toBe(CALLER_SPAN);
        expect(service('POST /v1/generate')).toBe('paperlink-api');
        expect(service('StartWorkflow:generate')).toBe('paperlink-api');
        expect(service('RunWorkflow:generate')).toBe('paperlink-worker');

        // the API counted the request; the worker, the render it did (Prometheus' text format)
        const scrape = async (url: unknown) => (await (await fetch(url as string)).text()).split('\n');
        const count = (lines: string[], name: string, ...labels: string[]) =>
          lines
            .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
            .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
        const api = await scrape(greeting.metrics);
        expect(count(api, 'paperlink_http_requests_total', 'route="/v1/generate"', 'status="201"')).toBe(1);
        expect(count(api, 'paperlink_renders_total')).toBe(0);
        const work = await scrape(polling()!.metrics);
        expect(count(work, 'paperlink_renders_total', 'outcome="ok"')).toBe(1);
        expect(work.some((l) => l.startsWith('paperlink_jobs_running{kind="webhook_delivery"}'))).toBe(true);
      } finally {
        serve.child.kill('SIGTERM');
        worker.child.kill('SIGTERM');
        await collector.close();
      }
      expect(await serve.exited).toBe(0);
      expect(await worker.exited).toBe(0);
      const lines: LogLine[] = [
        ...jsonLines(worker.out.stdout, 'worker stdout'),
        ...jsonLines(worker.out.stderr, 'worker stderr'),
        ...jsonLines(serve.out.stdout, 'serve stdout'),
        ...jsonLines(serve.out.stderr, 'serve stderr'),
      ];
      // the SDK's own messages came through Paperlink's log, one object each
      expect(lines.some((l) => typeof l.sdkComponent === 'string')).toBe(true);
      expect(lines.every((l) => typeof l.level === 'number' && typeof l.msg === 'string')).toBe(true);
    }, 180_000);
  },
);
