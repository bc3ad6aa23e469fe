/**
 * An OpenTelemetry collector for tests: takes OTLP/HTTP JSON at `/v1/traces` (what a process with
 * OTEL_EXPORTER_OTLP_ENDPOINT=<url> sends) and keeps every span, flattened.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, unknown>;
  /** The resource's attributes (service.name, …). */
  resource: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

const flat = (attrs: OtlpAttributes): Record<string, unknown> =>
  Object.fromEntries(
    (attrs ?? []).map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue)),
    ]),
  );

export async function startCollector(): Promise<{ url: string; spans: CollectedSpan[]; close(): Promise<void> }> {
  const spans: CollectedSpan[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const sent = JSON.parse(body) as {
        resourceSpans: {
          resource?: { attributes?: OtlpAttributes };
          scopeSpans: {
            spans: {
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              kind: number;
              status?: { code?: number };
              attributes?: OtlpAttributes;
            }[];
          }[];
        }[];
      };
      for (const rs of sent.resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              status: s.status?.code ?? 0,
              attributes: flat(s.attributes),
              resource: flat(rs.resource?.attributes),
            });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The span named `name` in `spans` (the first), failing with what there is when there is none. */
export function spanNamed(spans: CollectedSpan[], name: string): CollectedSpan {
  const found = spans.find((s) => s.name === name);
  if (!found) throw new Error(`no span "${name}"; spans: ${spans.map((s) => s.name).join(', ')}`);
  return found;
}

/** The names of the spans from `span` up to the root of its trace, `span`'s own first. */
export function ancestry(spans: CollectedSpan[], span: CollectedSpan): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const names: string[] = [];
  for (let s: CollectedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined)
    names.push(s.name);
  return names;
}
