/**
 * GET /metrics after real work (issue 68): a generate with a Magic Link e-mailed through a real
 * SMTP server, a recipient signing in with a wrong code and then the right one, a webhook delivered
 * to a real receiver and one retried, a render that fails; each shows in the documented metrics,
 * read back over HTTP from the listener METRICS_ADDRESS opens.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../src/clock';
import { serveMetrics, type MetricsServer } from '../src/metrics';
import { EXAMPLE_IDS } from '../src/templates/store';
import { eventually } from './support/eventually';
import { root } from './support/fixtures';
import { startReceiver, type Receiver } from './support/receiver';
import { BACKENDS, testService, type TestService } from './support/service';
import { codeIn, linkIn, startSmtp, type Mailbox } from './support/smtp';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Prometheus' text format, as a scraper reads it: one sample a line, comments skipped. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

describe.each(BACKENDS)('metrics on %s', (backend) => {
  let t: TestService;
  let mail: Mailbox;
  let rx: Receiver;
  let metrics: MetricsServer;
  const clock = new FakeClock('2026-11-22T10:00:00Z');

  beforeAll(async () => {
    mail = await startSmtp();
    rx = await startReceiver();
    t = await testService({
      backend,
      clock,
      config: { smtpUrl: mail.url, webhookAllowPrivate: true, publicUrl: 'http://docs.example' },
    });
    await t.service.apps.magicLink.put({ public_url: 'http://docs.example' });
    metrics = await serveMetrics({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await metrics?.close();
    await t?.stop();
    await rx?.stop();
    await mail?.close();
  });

  const scrape = async () => {
    const res = await fetch(metrics.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parse(await res.text());
  };
  /** The value of one series (0 when absent: a counter not counted yet). */
  const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
    samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((n, s) => n + s.value, 0);
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { 'x-service-api-token': t.key }, payload: payload as object });

  it('counts requests, renders, e-mails, views, refusals and webhook attempts, and shows jobs and render threads', async () => {
    const before = await scrape();
    const hook = await api('POST', '/v1/webhooks', { url: rx.url, events: ['document.generated'] });
    expect(hook.statusCode).toBe(201);
    let calls = 0;
    rx.respond = () => (++calls === 1 ? 500 : 200);

    const to = 'metrics@example.com';
    const sent = mail.messages.length;
    const made = await api('POST', '/v1/generate', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: postcard,
      destinations: { inkit_storage: {}, magic_link: { recipient_email: to, expire_after_n_views: 3 } },
    });
    expect(made.statusCode).toBe(201);
    // a render that fails: a character no font of the template has
    const failed = await api('POST', '/v1/generate', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: { ...postcard, city: 'Tokyo 東京' },
      destinations: { inkit_storage: {} },
    });
    expect(failed.statusCode).toBe(422);
    const failedCode = failed.json().error.code as string;

    // the recipient: the link, a code, a wrong code (refused), the right one, a view
    const linkPath = new URL(linkIn(await mail.next(to, sent))).pathname;
    await t.app.inject({ method: 'GET', url: linkPath });
    const asked = mail.messages.length;
    await t.app.inject({ method: 'POST', url: `${linkPath}/code` });
    const code = codeIn(await mail.next(to, asked));
    const form = (c: string) =>
      t.app.inject({
        method: 'POST',
        url: `${linkPath}/verify`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `code=${c}`,
      });
    await form(code === '000000' ? '111111' : '000000');
    const ok = await form(code);
    const cookie = ok.cookies.find((c) => c.name === 'paperlink_link')!;
    const view = await t.app.inject({
      method: 'GET',
      url: linkPath,
      headers: { cookie: `paperlink_link=${cookie.value}` },
    });
    expect(view.statusCode).toBe(200);

    // the webhook: refused once, then taken after its back-off
    await eventually(async () => calls === 1, 'the first attempt');
    clock.advance(60_000);
    t.service.dispatcher.wake();
    await eventually(async () => calls === 2, 'the retry');
    await t.service.dispatcher.drain();

    // paths with ids: the document, the recipient's link (its token)
    expect((await api('GET', `/v1/documents/${made.json().document_id as string}`)).statusCode).toBe(200);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(before, name, labels);
    expect(delta('paperlink_http_requests_total', { method: 'POST', route: '/v1/generate', status: '201' })).toBe(1);
    expect(delta('paperlink_http_requests_total', { method: 'POST', route: '/v1/generate', status: '422' })).toBe(1);
    expect(delta('paperlink_http_request_duration_seconds_count', { method: 'POST', route: '/v1/generate' })).toBe(2);
    expect(delta('paperlink_renders_total', { format: 'xml', outcome: 'ok' })).toBe(1);
    expect(delta('paperlink_renders_total', { format: 'xml', outcome: failedCode })).toBe(1);
    expect(delta('paperlink_render_duration_seconds_count', { format: 'xml' })).toBe(2);
    // the link, and the code
    expect(delta('paperlink_emails_total', { outcome: 'sent' })).toBe(2);
    expect(delta('paperlink_link_views_total')).toBe(1);
    expect(delta('paperlink_link_refusals_total')).toBe(1);
    expect(delta('paperlink_webhook_attempts_total', { outcome: 'retrying' })).toBe(1);
    expect(delta('paperlink_webhook_attempts_total', { outcome: 'delivered' })).toBe(1);
    // an id in a path makes no series of its own: the route as declared
    expect(delta('paperlink_http_requests_total', { route: '/v1/documents/:id', status: '200' })).toBe(1);
    const token = linkPath.split('/').pop()!;
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes(made.json().document_id as string)))).toBe(
      false,
    );
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes(token)))).toBe(false);

    // gauges of what this process runs: its render threads and each kind of background work
    expect(value(after, 'paperlink_render_threads')).toBeGreaterThanOrEqual(1);
    expect(after.some((s) => s.name === 'paperlink_render_queue')).toBe(true);
    const kinds = after.filter((s) => s.name === 'paperlink_jobs_running').map((s) => s.labels.kind);
    expect(kinds.sort()).toEqual([
      'housekeeping',
      'link_step',
      'postcard_handoff',
      'postcard_render',
      'retention',
      'webhook_delivery',
    ]);
    expect(
      after
        .filter((s) => s.name === 'paperlink_jobs_due')
        .map((s) => s.labels.kind)
        .sort(),
    ).toEqual(['link_step', 'postcard_handoff', 'postcard_render', 'webhook_delivery']);
    expect(value(after, 'paperlink_jobs_due', { kind: 'webhook_delivery' })).toBe(0);
    // Node's own
    expect(value(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    await api('DELETE', `/v1/webhooks/${hook.json().id as string}`);
  });

  it('shows work due and how long it has waited, from the database', async () => {
    const hook = (await api('POST', '/v1/webhooks', { url: rx.url, events: ['document.generated'] })).json();
    rx.respond = () => 500;
    const made = await api('POST', '/v1/generate', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: postcard,
      destinations: { inkit_storage: {} },
    });
    expect(made.statusCode).toBe(201);
    const delivery = async () => (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().data[0];
    await eventually(async () => (await delivery())?.attempts.length === 1, 'the first attempt recorded');
    // this process takes nothing now: its retry comes due, and waits
    await t.service.dispatcher.pause();
    const due = Date.parse((await delivery()).next_attempt_at as string);
    clock.set(new Date(due + 90_000));
    const samples = await scrape();
    expect(value(samples, 'paperlink_jobs_due', { kind: 'webhook_delivery' })).toBe(1);
    expect(value(samples, 'paperlink_jobs_oldest_due_seconds', { kind: 'webhook_delivery' })).toBe(90);
    t.service.dispatcher.resume();
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('answers 404 for anything but GET /metrics', async () => {
    expect((await fetch(new URL('/other', metrics.url))).status).toBe(404);
    expect((await fetch(metrics.url, { method: 'POST' })).status).toBe(404);
  });
});
