/**
 * The same API end to end on both engines: the embedded one (PostgreSQL, a fake clock) and
 * ENGINE=temporal on a real Temporal server with a worker beside the API (PostgreSQL, documents in
 * a real S3-compatible server, real durable timers). Each scenario asserts what a user relies on;
 * each engine's run also writes down what it sent (the events of every resource, each delivered
 * to a webhook once, and the e-mails to every recipient), and the last test compares the two.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { buildApp } from '../../src/app';
import { FakeClock } from '../../src/clock';
import { loadConfig, type Config } from '../../src/config';
import type { Service } from '../../src/service';
import { EVENT_TYPES } from '../../src/events/types';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { checkAnswers } from '../support/contract';
import { eventually } from '../support/eventually';
import { startReceiver, type Receiver } from '../support/receiver';
import { linkRow, sample } from '../support/rows';
import { freshBucket, S3_MISSING } from '../support/s3';
import { freshPostgres, testService, type TestService } from '../support/service';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';
import {
  exportHistories,
  historyText,
  serviceOnTemporal,
  startTemporal,
  TEMPORAL_MISSING,
  type OnTemporal,
} from '../support/temporal';

const ENGINES = ['embedded', 'temporal'] as const;
type Kind = (typeof ENGINES)[number];

/** What each engine's run sent, by the scenario's names for things (ids differ between runs). */
type Transcript = { events: Record<string, string[]>; mail: Record<string, string[]> };
const transcripts: Partial<Record<Kind, Transcript>> = {};

describe.each(ENGINES)('the API on the %s engine', (kind) => {
  const skip = kind === 'temporal' ? TEMPORAL_MISSING : undefined;
  const test = skip ? it.skip : it;
  if (skip) it.skip(`(skipped: ${skip})`, () => undefined);

  // the embedded engine's time is the test's; Temporal's timers are the server's, real
  const clock = kind === 'embedded' ? new FakeClock(new Date()) : undefined;
  let mail: Mailbox;
  let rx: Receiver;
  let app: FastifyInstance;
  let service: Service;
  let key: string;
  let t: TestService | undefined;
  let env: TestWorkflowEnvironment | undefined;
  let on: OnTemporal | undefined;
  let dataDir: string | undefined;
  /** The scenario's name for each resource id. */
  const names = new Map<string, string>();
  /** On Temporal, the runs whose histories PAPERLINK_EXPORT_HISTORIES=1 writes (replayed in CI). */
  const runs = new Map<string, string>();

  beforeAll(async () => {
    if (skip) return;
    mail = await startSmtp();
    rx = await startReceiver();
    const settings: Partial<Config> = {
      smtpUrl: mail.url,
      webhookAllowPrivate: true,
      publicUrl: 'http://docs.acme.example',
      // every request here comes from one address
      rateLimits: { postcards: 0, pages: 0, codes: 0, previews: 0 },
    };
    if (kind === 'embedded') {
      t = await testService({ backend: 'postgres', clock, config: settings });
      ({ service, app, key } = t);
    } else {
      env = await startTemporal();
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-engines-'));
      const config = loadConfig(
        {},
        {
          dataDir,
          databaseUrl: await freshPostgres(),
          logLevel: 'silent',
          engine: 'temporal',
          ...(S3_MISSING ? { storage: 'database' as const } : { storage: 's3' as const, s3: await freshBucket() }),
          ...settings,
        },
      );
      config.temporal.taskQueue = `paperlink-engines-${process.pid}-${Date.now()}`;
      on = await serviceOnTemporal(env, config);
      service = on.service;
      app = await buildApp(service, { logger: false });
      await app.ready();
      checkAnswers(app);
      key = (await service.keys.create('api', 'engines test')).secret;
    }
    await service.apps.magicLink.put({ public_url: 'http://docs.acme.example', organization_name: 'Acme' });
    const hook = await api('POST', '/v1/webhooks', { url: rx.url, events: [...EVENT_TYPES] });
    expect(hook.statusCode).toBe(201);
  }, 120_000);

  afterAll(async () => {
    if (t) await t.stop();
    else {
      if (env) await exportHistories(env, runs);
      await app?.close();
      await on?.stop();
      await env?.teardown();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }
    await rx?.stop();
    await mail?.close();
  }, 60_000);

  const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: { 'x-service-api-token': key }, payload: payload as object });
  const view = (linkPath: string, cookie?: string) =>
    app.inject({ method: 'GET', url: linkPath, headers: cookie ? { cookie } : {} });
  /** Time passes: the embedded engine's clock moves; on Temporal the real timers run. */
  const passes = async (ms: number) => {
    if (clock) clock.advance(ms);
    else await new Promise((r) => setTimeout(r, ms));
  };
  const to = (name: string) => `${name}.${kind}@example.com`;
  const status = async (linkId: string) => (await api('GET', `/v1/magic_links/${linkId}`)).json().status as string;
  /** The e-mailed link's path, from the newest message to `name`. */
  const e_mailed = async (name: string, before: number) => new URL(linkIn(await mail.next(to(name), before))).pathname;
  /** Proves the recipient's address with an e-mailed code: a new sign-in (a new session). */
  const signIn = async (name: string, linkPath: string) => {
    const before = mail.messages.length;
    expect((await app.inject({ method: 'POST', url: `${linkPath}/code` })).statusCode).toBe(303);
    const code = codeIn(await mail.next(to(name), before));
    const ok = await app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `code=${code}`,
    });
    expect(ok.statusCode).toBe(303);
    return `paperlink_link=${ok.cookies.find((c) => c.name === 'paperlink_link')!.value}`;
  };
  /** A Magic Link to a stored document, e-mailed: its id and path. */
  const share = async (name: string, documentId: string, settings: object) => {
    const before = mail.messages.length;
    const res = await api('POST', `/v1/documents/${documentId}/magic_links`, {
      recipient_email: to(name),
      ...settings,
    });
    expect(res.statusCode).toBe(201);
    const id = res.json<{ id: string }>().id;
    names.set(id, name);
    return { id, path: await e_mailed(name, before) };
  };
  let documentId: string;

  test('generates with both destinations: the document stored and downloadable, its link e-mailed', async () => {
    const before = mail.messages.length;
    const res = await api('POST', '/v1/generate', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: sample,
      destinations: {
        inkit_storage: { name: 'Proof' },
        magic_link: { recipient_email: to('viewer'), expire_after_n_views: 2 },
      },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      object: 'render',
      status: 'completed',
      template_id: EXAMPLE_IDS.postcard,
      destinations: {
        inkit_storage: {
          document_id: body.document_id,
          name: 'Proof',
          sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        },
        magic_link: { id: body.magic_link_piece_id, recipient_email: to('viewer'), views_left: 2, status: 'active' },
      },
    });
    documentId = body.document_id;
    names.set(documentId, 'document');
    names.set(body.magic_link_piece_id, 'viewer');
    runs.set('generate.with-link', `generate-${body.id}`);
    runs.set('link.expired-by-views', `link-${body.magic_link_piece_id}`);
    const pdf = await api('GET', `/v1/documents/${documentId}/pdf`);
    expect(pdf.statusCode).toBe(200);
    expect(pdf.rawPayload.length).toBe(body.destinations.inkit_storage.size);
    expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    const linkPath = await e_mailed('viewer', before);
    expect(body.destinations.magic_link.url).toBe(`http://docs.acme.example${linkPath}`);
    if (env) {
      // the URL is a secret: Temporal keeps the render's input and result, never the URL
      const kept = await historyText(env, `generate-${body.id}`);
      expect(kept).toContain(body.document_id);
      expect(kept).not.toContain(linkPath.split('/').pop());
    }

    // its two views, each in a sign-in of its own, end it
    for (let i = 0; i < 2; i++) expect((await view(linkPath, await signIn('viewer', linkPath))).statusCode).toBe(200);
    await eventually(async () => (await status(body.magic_link_piece_id)) === 'expired', 'ended by its views', 30);
    expect((await view(linkPath)).statusCode).toBe(404);
  }, 60_000);

  test('revokes a link, and resends another to a new URL that works where the old one no longer does', async () => {
    const revoked = await share('revoked', documentId, { expire_after_n_views: 3 });
    runs.set('link.revoked-by-api', `link-${revoked.id}`);
    const answer = await api('POST', `/v1/magic_links/${revoked.id}/expire`);
    expect(answer.json().status).toBe('revoked');
    expect((await view(revoked.path)).statusCode).toBe(404);

    const resent = await share('resent', documentId, { expire_after_n_views: 3 });
    runs.set('link.resent', `link-${resent.id}`);
    const before = mail.messages.length;
    expect((await api('POST', `/v1/magic_links/${resent.id}/resend`)).statusCode).toBe(200);
    const again = await e_mailed('resent', before);
    expect(again).not.toBe(resent.path);
    expect((await view(resent.path)).statusCode).toBe(404);
    expect((await view(again)).statusCode).toBe(200);
    expect(await status(resent.id)).toBe('active');
  }, 60_000);

  test('shares for a team without downloads, watermarked per person: page images from the stored document, no PDF', async () => {
    const { id, path: linkPath } = await share('lead', documentId, {
      expire_after_n_views: 3,
      allowed_viewers: ['@team.example'],
      allow_download: false,
      watermark: { text: 'For {{email}}', position: 'tiled' },
    });
    const member = `kim.${kind}@team.example`;
    const before = mail.messages.length;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const asked = await app.inject({
      method: 'POST',
      url: `${linkPath}/code`,
      headers: form,
      payload: `email=${member}`,
    });
    expect(asked.statusCode).toBe(303);
    const code = codeIn(await mail.next(member, before));
    const ok = await app.inject({
      method: 'POST',
      url: `${linkPath}/verify`,
      headers: form,
      payload: `email=${member}&code=${code}`,
    });
    expect(ok.statusCode).toBe(303);
    const cookie = `paperlink_link=${ok.cookies.find((c) => c.name === 'paperlink_link')!.value}`;
    const page = await view(linkPath, cookie);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-count="2"');
    const image = await app.inject({ method: 'GET', url: `${linkPath}/pages/2`, headers: { cookie } });
    expect(image.statusCode).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect((await app.inject({ method: 'GET', url: `${linkPath}/document.pdf`, headers: { cookie } })).statusCode).toBe(
      404,
    );
    const link = (await api('GET', `/v1/magic_links/${id}`)).json();
    expect(link).toMatchObject({ views_used: 1, viewers: [{ email: member, views: 1 }] });
  }, 60_000);

  test('deletes a document whose retention ran out, with its bytes, and ends its links (document_expired)', async () => {
    const res = await api('POST', '/v1/generate', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: sample,
      retain_for: { days: 1 },
      destinations: {
        inkit_storage: { name: 'Short-lived' },
        magic_link: { recipient_email: to('brief'), expire_after_n_views: 2 },
      },
    });
    expect(res.statusCode).toBe(201);
    const { document_id: doc, magic_link_piece_id: link } = res.json();
    names.set(doc, 'short-lived document');
    names.set(link, 'brief');
    await mail.next(to('brief'));
    // its day has passed (the sweep reads the time from the row; no one waits a day)
    await service.database.db
      .updateTable('documents')
      .set({ expires_at: new Date(service.clock.now().getTime() - 1000).toISOString() })
      .where('id', '=', doc)
      .execute();
    expect(await service.documents.expireDue()).toBe(1);
    expect((await api('GET', `/v1/documents/${doc}`)).statusCode).toBe(404);
    expect(await service.storage.get(doc)).toBeUndefined();
    await eventually(async () => (await status(link)) === 'expired', 'its link ended', 30);
  }, 60_000);

  test('ends links by time: a minute from their making, a minute from their first opening, and at the ten-day cap', async () => {
    const made = await share('timed', documentId, { retain_from_created: { minutes: 1 } });
    const opened = await share('opened', documentId, { retain_from_opened: { minutes: 1 } });
    expect((await view(opened.path, await signIn('opened', opened.path))).statusCode).toBe(200);
    const untouched = await share('untouched', documentId, { retain_from_created: { days: 2 } });
    // a link with a view limit made ten days ago less a minute, as it is then: e-mailed, its
    // deadline the ten-day cap, due to be looked at (so both engines take it up)
    const now = (clock ?? { now: () => new Date() }).now().getTime();
    const created = new Date(now - 240 * 3_600_000 + 60_000).toISOString();
    await service.database.db
      .insertInto('magic_links')
      .values(
        linkRow('ml_capped', new Date(created), {
          document_id: documentId,
          max_views: 5,
          settings: JSON.stringify({ recipientEmail: to('capped'), maxViews: 5 }),
          expires_at: new Date(now + 60_000).toISOString(),
          wake_at: new Date(now).toISOString(),
        }),
      )
      .execute();
    names.set('ml_capped', 'capped');
    runs.set('link.expired-by-ten-day-cap', 'link-ml_capped');
    runs.set('link.expired-from-opening', `link-${opened.id}`);
    await passes(61_000);
    for (const link of [made, opened, { id: 'ml_capped' }])
      await eventually(async () => (await status(link.id)) === 'expired', `${names.get(link.id)} ended by time`, 45);
    const reasons = await service.database.db
      .selectFrom('events')
      .select(['resource_id', 'data'])
      .where('type', '=', 'magic_link.expired')
      .where('resource_id', 'in', [made.id, opened.id, 'ml_capped'])
      .execute();
    expect(Object.fromEntries(reasons.map((e) => [names.get(e.resource_id), JSON.parse(e.data).reason]))).toEqual({
      timed: 'time',
      opened: 'time',
      capped: 'ten_day_cap',
    });
    expect(await status(untouched.id)).toBe('active');
  }, 120_000);

  test('renders a postcard, and fails one it cannot draw, saying why', async () => {
    const token = (await service.keys.create('postcard', 'engines test')).secret;
    const post = async (name: string, fields: object) => {
      const res = await app.inject({
        method: 'POST',
        url: '/postcards',
        payload: { ...sample, ...fields, api_token: token, template_id: EXAMPLE_IDS.postcard },
      });
      expect(res.statusCode).toBe(202);
      names.set(res.json().id, name);
      return res.json<{ id: string }>().id;
    };
    const good = await post('postcard', {});
    const bad = await post('undrawable', { city: 'Tokyo 東京' });
    const settled = async (id: string) => {
      await eventually(
        async () => (await api('GET', `/v1/postcards/${id}`)).json().status !== 'received',
        'settled',
        60,
      );
      return (await api('GET', `/v1/postcards/${id}`)).json();
    };
    const rendered = await settled(good);
    expect(rendered.status).toBe('rendered');
    names.set(rendered.document_id, 'postcard document');
    expect((await api('GET', `/v1/documents/${rendered.document_id}/pdf`)).statusCode).toBe(200);
    runs.set('postcard.failed', `postcard-${bad}`);
    const failed = await settled(bad);
    expect(failed).toMatchObject({ status: 'failed', document_id: null });
    expect(failed.failure_reason).toContain('unsupported_character');
  }, 90_000);

  test('delivers every event to the webhook, each once, and writes down what was sent', async () => {
    const db = service.database.db;
    const events = async () => db.selectFrom('events').select(['id', 'type', 'resource_id']).execute();
    await eventually(
      async () => {
        const written = await events();
        const delivered = new Set(rx.received.map((r) => r.event.id));
        return written.length > 0 && written.every((e) => delivered.has(e.id));
      },
      'every event delivered',
      60,
    );
    const written = await events();
    const ids = rx.received.map((r) => r.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(written.map((e) => e.id).sort());
    const transcript: Transcript = { events: {}, mail: {} };
    for (const e of written) {
      const name = names.get(e.resource_id) ?? `unnamed ${e.type}`;
      (transcript.events[name] ??= []).push(e.type);
    }
    for (const list of Object.values(transcript.events)) list.sort();
    for (const m of mail.messages) {
      const address = (Array.isArray(m.to) ? m.to[0] : m.to)!.value[0].address!;
      (transcript.mail[address.replace(`.${kind}@`, '@')] ??= []).push(m.subject ?? '');
    }
    transcripts[kind] = transcript;
    // what the scenarios above did, as a user sees it
    expect(transcript.events.viewer).toContain('magic_link.expired');
    expect(transcript.events.postcard).toEqual(['postcard.received', 'postcard.rendered']);
    expect(transcript.events.undrawable).toEqual(['postcard.failed', 'postcard.received']);
  }, 90_000);
});

describe('both engines', () => {
  const test = TEMPORAL_MISSING ? it.skip : it;
  test('sent the same events for every resource and the same e-mails to every recipient', () => {
    expect(transcripts.embedded).toBeDefined();
    expect(transcripts.temporal).toEqual(transcripts.embedded);
  });
});
