/**
 * Paperlink in a process that registered an OpenTelemetry tracer provider of its own first (an
 * engineer's worker with its SDK): Paperlink starts none beside it, and its spans go to that one.
 * A failed step's span says the error's code and nothing of its message, which may hold what a span
 * must not (the address a mail server refused).
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ValidationError } from '../src/errors';
import { inSpan, startTracing, tracing } from '../src/tracing';

describe("tracing beside a provider of the process's own", () => {
  const yours = new InMemorySpanExporter();

  beforeAll(() => {
    expect(
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(yours)] })),
    ).toBe(true);
  });

  it('starts none of its own, and its spans go to yours', async () => {
    const log: string[] = [];
    expect(startTracing({ exporter: 'console', destination: 'standard output' }, (l) => log.push(l))).toBeUndefined();
    expect(tracing()).toBeUndefined();
    await inSpan('paperlink.render', { 'paperlink.template_format': 'xml' }, async () => undefined);
    expect(yours.getFinishedSpans().map((s) => s.name)).toContain('paperlink.render');
  });

  it('marks a failed step with its code and keeps the message out', async () => {
    yours.reset();
    const refused = Object.assign(new Error('550 5.1.1 <reader@example.com>: recipient rejected'), {
      name: 'SmtpError',
    });
    await expect(inSpan('paperlink.email', {}, () => Promise.reject(refused))).rejects.toBe(refused);
    await expect(
      inSpan('paperlink.generate', {}, () =>
        Promise.reject(new ValidationError('reader@example.com is not valid', [])),
      ),
    ).rejects.toBeInstanceOf(ValidationError);
    const [email, generate] = yours.getFinishedSpans();
    expect(email.attributes['error.type']).toBe('SmtpError');
    expect(email.status).toEqual({ code: 2, message: 'SmtpError' });
    expect(generate.attributes['error.type']).toBe('validation_failed');
    expect(JSON.stringify([email, generate].map((s) => [s.attributes, s.status, s.events]))).not.toContain(
      'reader@example.com',
    );
  });
});
