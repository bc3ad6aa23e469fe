/**
 * OpenTelemetry traces, when the standard OTEL_* settings ask for them (config.tracing; off by
 * default). Spans are made through the OpenTelemetry API wherever the work happens — the HTTP
 * request (src/http/app.ts), the generate (src/engine/index.ts), the render (src/templates/pool.ts),
 * the store (src/documents), the e-mail (src/mail) — and under Temporal its interceptors carry the
 * trace from the API's client into the worker's workflow and activities (workflows/plugin.ts).
 *
 * Off, the API's tracer makes no span that records anything and the SDK is never loaded. On, this
 * process registers one tracer provider that sends its spans in batches over OTLP/HTTP
 * (OTEL_EXPORTER_OTLP_ENDPOINT and the rest of the exporter's standard settings) or writes them to
 * standard output as JSON lines (OTEL_TRACES_EXPORTER=console). A process whose own code registered a provider
 * first (an engineer's worker with its own SDK) keeps it: Paperlink's spans go there. docs/tracing.md.
 */
import {
  context,
  diag,
  DiagLogLevel,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { SpanExporter, SpanProcessor, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';
import { PaperlinkError } from './errors';
import { redact, type Log } from './log';

const tracer = trace.getTracer('paperlink');

/** What the settings ask for (src/config.ts reads them from OTEL_*). */
export interface TracingConfig {
  /** `otlp`: OTLP over HTTP to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT; `console`: each span on standard output. */
  exporter: 'otlp' | 'console';
  /** The OTLP URL the spans are sent to (`otlp`). */
  endpoint?: string;
  /** Where the spans go, as the greeting names it: the OTLP URL (its password masked), or standard output. */
  destination: string;
}

/** The tracing this process started: its span processor and resource (Temporal's workflow spans go there too). */
export interface Tracing {
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  /** Sends what is batched; at a process's end. */
  flush(): Promise<void>;
}

let started: Tracing | undefined;

/**
 * Starts this process's tracing, once (later calls return the first): a tracer provider with a
 * batching processor, registered as the process's global one, with W3C trace context propagation
 * (and no baggage: what a caller puts there is not carried into Temporal's histories). Undefined
 * when tracing is off, or when the process registered a provider of its own first: Paperlink's spans
 * go to that one. What the exporter fails to send is said on `log`.
 */
export function startTracing(config: TracingConfig | undefined, log: Log | undefined): Tracing | undefined {
  if (started || !config) return started;
  /* eslint-disable @typescript-eslint/no-require-imports -- the SDK is loaded only when tracing is on */
  const sdk = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const resources = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { AsyncLocalStorageContextManager } =
    require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const out: SpanExporter =
    config.exporter === 'console'
      ? jsonLines
      : new (
          require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')
        ).OTLPTraceExporter({ url: config.endpoint });
  /* eslint-enable @typescript-eslint/no-require-imports */
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say what the process is; "paperlink" otherwise
  const resource = resources
    .resourceFromAttributes({ 'service.name': 'paperlink' })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const processor = new sdk.BatchSpanProcessor(out);
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [processor] });
  // a provider the process's own code registered first keeps Paperlink's spans
  if (!trace.setGlobalTracerProvider(provider)) {
    void provider.shutdown();
    return undefined;
  }
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // a collector that cannot be reached, or refuses the spans, is said once per failed send
  if (log) {
    const say = (message: string) => log(`tracing: ${redact(message)}`);
    diag.setLogger(
      { error: say, warn: say, info: () => undefined, debug: () => undefined, verbose: () => undefined },
      DiagLogLevel.WARN,
    );
  }
  started = { processor, resource, flush: () => provider.forceFlush() };
  return started;
}

/** OTEL_TRACES_EXPORTER=console: each span one JSON line on standard output (so LOG_FORMAT=json stays JSON). */
const jsonLines: SpanExporter = {
  export: (spans, done) => {
    for (const s of spans) {
      const { traceId, spanId } = s.spanContext();
      const line = {
        trace_id: traceId,
        span_id: spanId,
        parent_span_id: s.parentSpanContext?.spanId,
        name: s.name,
        duration_ms: s.duration[0] * 1000 + s.duration[1] / 1e6,
        status: s.status.code === SpanStatusCode.ERROR ? 'error' : 'ok',
        attributes: s.attributes,
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
};

/** The tracing this process started, if it did. */
export function tracing(): Tracing | undefined {
  return started;
}

/**
 * Runs `fn` in a span named `name`, a child of the span under way (none: a trace of its own). A
 * failure marks the span with the error's code (the API's, for a PaperlinkError) and ends it.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Marks `span` failed by `err`: its code as the status and `error.type`. Only the code: an error's
 * message and stack may hold what a span must not (an address a mail server refused, a body's text).
 */
export function failed(span: Span, err: unknown): void {
  span.setAttribute('error.type', codeOf(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: codeOf(err) });
}

/** What names an error in a span: the API's code, or the error's class. */
function codeOf(err: unknown): string {
  return err instanceof PaperlinkError ? err.code : err instanceof Error ? err.name : 'error';
}

/**
 * The span of an HTTP request, begun when it is read: a child of the caller's span when the request
 * names one (`traceparent`, W3C trace context); `context` is what the handler runs within (within()).
 */
export function requestSpan(
  method: string,
  route: string | undefined,
  headers: Record<string, unknown>,
): { span: Span; context: Context } {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(
    route ? `${method} ${route}` : method,
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': method, ...(route ? { 'http.route': route } : {}) },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` within `ctx` (the request's span). */
export function within<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** Temporal's OpenTelemetry interceptors (workflows/ uses them): loaded only when tracing is on. */
export function temporalInterceptors(): typeof import('@temporalio/interceptors-opentelemetry') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');
}

/**
 * Temporal's workflow spans are made in the workflow sandbox by an SDK of the 1.x line and handed
 * over in its shape (`parentSpanId`, `instrumentationLibrary`); this process's SDK and exporter read
 * the 2.x shape (`parentSpanContext`, `instrumentationScope`). Converts the one to the other on the
 * way to `processor`.
 */
export function workflowSpans(processor: SpanProcessor): SpanProcessor {
  return {
    onStart: () => undefined,
    onEnd: (span) => {
      const old = span as ReadableSpan & {
        parentSpanId?: string;
        instrumentationLibrary?: ReadableSpan['instrumentationScope'];
      };
      const ctx = span.spanContext();
      processor.onEnd({
        ...old,
        spanContext: () => ctx,
        parentSpanContext:
          old.parentSpanContext ??
          (old.parentSpanId
            ? { traceId: ctx.traceId, spanId: old.parentSpanId, traceFlags: ctx.traceFlags }
            : undefined),
        instrumentationScope: old.instrumentationScope ?? old.instrumentationLibrary ?? { name: 'temporal' },
      });
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: () => Promise.resolve(),
  };
}
