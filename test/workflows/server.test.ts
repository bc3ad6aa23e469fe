/**
 * End to end on a real Temporal server (test/support/temporal.ts): the API with ENGINE=temporal, a
 * worker running our workflows and activities, PostgreSQL; the workflow clients' own helpers; a
 * restart that tells Temporal only of what it has not heard of.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadConfig } from '../../src/config';
import { buildApp } from '../../src/app';
import type { Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import {
  expireLink,
  generateDocument,
  linkResult,
  linkStatus,
  postcardResult,
  TemporalEngine,
} from '../../workflows/client';
import { eventually } from '../support/eventually';
import { linkRow, sample } from '../support/rows';
import { freshPostgres } from '../support/service';
import {
  exportHistories,
  serviceOnTemporal,
  startTemporal,
  TEMPORAL_MISSING,
  type OnTemporal,
} from '../support/temporal';

const suite = TEMPORAL_MISSING ? describe.skip : describe;

suite(`on a real Temporal server${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`, () => {
  let env: TestWorkflowEnvironment;
  let service: Service;
  let app: FastifyInstance;
  let key: string;
  let dataDir: string;
  const taskQueue = `paperlink-test-${process.pid}-${Date.now()}`;
  let on: OnTemporal;
  let startAll: () => Promise<void>;
  const statements: string[] = [];

  beforeAll(async () => {
    env = await startTemporal();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-temporal-'));
    const config = loadConfig(
      {},
      { dataDir, databaseUrl: await freshPostgres(), storage: 'database', logLevel: 'silent', engine: 'temporal' },
    );
    config.temporal.taskQueue = taskQueue;
    startAll = async () => {
      on = await serviceOnTemporal(env, config, { beforeStatement: (sql) => void statements.push(sql) });
      service = on.service;
      app = await buildApp(service, { logger: false });
    };
    await startAll();
    await service.apps.magicLink.put({});
    key = (await service.keys.create('api', 'temporal test')).secret;
  }, 120_000);

  /** The runs whose histories `PAPERLINK_EXPORT_HISTORIES=1` writes (test/support/temporal.ts). */
  const runs = new Map<string, string>();

  afterAll(async () => {
    if (env) await exportHistories(env, runs);
    await app?.close();
    await on?.stop();
    await env?.teardown();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const api = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    app.inject({ method, url, payload: payload as object, headers: { 'x-service-api-token': key } });
  const letter = async (destinations: object) => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    return {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, `value of ${v}`])),
      destinations,
    };
  };

  it('generates through workflow generate-<render id> and answers as the embedded engine does', async () => {
    const res = await api('POST', '/v1/generate', await letter({ inkit_storage: { name: 'Via Temporal' } }));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      object: 'render',
      status: 'completed',
      destinations: { inkit_storage: { name: 'Via Temporal' } },
    });
    runs.set('generate.stored', `generate-${res.json().id}`);
    const run = await env.client.workflow.getHandle(`generate-${res.json().id}`).describe();
    expect(run.status.name).toBe('COMPLETED');
    const bad = await api('POST', '/v1/generate', { template_id: 'tmpl_nope', destinations: {} });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.code).toBe('validation_failed');
  }, 60_000);

  it('runs a render id once: a second start, after the first completed, answers with its result', async () => {
    const body = await letter({ inkit_storage: { name: 'Once' } });
    const first = await generateDocument(env.client, { body, renderId: 'rnd_server_once' }, { taskQueue });
    const again = await generateDocument(env.client, { body, renderId: 'rnd_server_once' }, { taskQueue });
    expect(again.document_id).toBe(first.document_id);
    const runs = [];
    for await (const w of env.client.workflow.list({ query: `WorkflowId = 'generate-rnd_server_once'` }))
      runs.push(w.runId);
    expect(runs).toHaveLength(1);
  }, 60_000);

  it('expires a link by time in its lifecycle workflow, and revokes another through the expire update', async () => {
    const res = await api(
      'POST',
      '/v1/generate',
      await letter({ magic_link: { recipient_email: 'ada@example.com', retain_from_created: { minutes: 1 } } }),
    );
    expect(res.statusCode).toBe(201);
    const id = res.json().magic_link_piece_id as string;
    runs.set('link.expired-by-time', `link-${id}`);
    await eventually(
      async () => (await linkStatus(env.client, id)).state?.status === 'active',
      'the lifecycle read its link',
    );
    if (env.supportsTimeSkipping) await env.sleep('2 minutes');
    expect(await linkResult(env.client, id)).toBe('expired');
    expect((await service.links.get(id)).status).toBe('expired');

    const other = await api('POST', `/v1/documents/${res.json().document_id}/magic_links`, {
      recipient_email: 'bo@example.com',
      expire_after_n_views: 3,
    });
    const otherId = other.json().id as string;
    runs.set('link.revoked-by-update', `link-${otherId}`);
    await eventually(
      async () => (await linkStatus(env.client, otherId).catch(() => undefined))?.state?.status === 'active',
      'the API started the lifecycle',
    );
    expect((await expireLink(env.client, otherId, { reason: 'test' })).status).toBe('revoked');
    expect(await linkResult(env.client, otherId)).toBe('revoked');
    expect((await service.links.get(otherId)).status).toBe('revoked');
  }, 240_000);

  it('renders a postcard the API accepted in workflow postcard-<id>', async () => {
    const token = (await service.keys.create('postcard', 'temporal test')).secret;
    const res = await app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { api_token: token, template_id: EXAMPLE_IDS.postcard, ...sample },
    });
    expect(res.statusCode).toBe(202);
    // the API starts the workflow after it answers
    await eventually(
      () =>
        env.client.workflow
          .getHandle(`postcard-${res.json().id}`)
          .describe()
          .then(
            () => true,
            () => false,
          ),
      'the API started the postcard workflow',
    );
    expect(await postcardResult(env.client, res.json().id)).toBe('rendered');
    runs.set('postcard.rendered', `postcard-${res.json().id}`);
    expect((await service.postcards.get(res.json().id)).status).toBe('rendered');
  }, 60_000);

  it('starts on 20,000 links Temporal has heard of by telling it only of what it has not', async () => {
    const db = service.database.db;
    const now = new Date();
    const held = 20_000;
    for (let i = 0; i < held; i += 1000)
      await db
        .insertInto('magic_links')
        .values(Array.from({ length: 1000 }, (_, j) => linkRow(`ml_held${String(i + j).padStart(6, '0')}`, now)))
        .execute();
    // made while Temporal was unreachable, or by a process killed between its commit and its start:
    // a link whose deadline has passed meanwhile, and a postcard received
    const marked = new Date(now.getTime() - 60_000).toISOString();
    await db
      .insertInto('magic_links')
      .values(linkRow('ml_unheard', now, { wake_at: marked, expires_at: marked }))
      .execute();
    const token = (await service.keys.create('postcard', 'handover test')).secret;
    const card = await app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { api_token: token, template_id: EXAMPLE_IDS.postcard, ...sample },
    });
    expect(card.statusCode).toBe(202);
    const postcard = card.json<{ id: string }>().id;
    // as if the API had died before starting it: the postcard's workflow is not there
    await env.client.workflow
      .getHandle(`postcard-${postcard}`)
      .terminate('as if never started')
      .catch(() => undefined);
    await db.updateTable('postcards').set({ wake_at: marked }).where('id', '=', postcard).execute();

    await app.close();
    await on.stop();
    statements.length = 0;
    await startAll();
    const calls = on.calls;
    // the start does not wait for its handover; this waits for it (and runs one more)
    await (service.engine as TemporalEngine).handOver(true);
    expect(calls.filter((id) => id.startsWith('link-ml_held'))).toEqual([]);
    expect(calls).toEqual(expect.arrayContaining(['link-ml_unheard', `postcard-${postcard}`]));
    expect(calls.length).toBeLessThan(10);
    // reads of marked rows through their index, not of every link
    expect(statements.filter((q) => /"magic_links"/.test(q)).length).toBeLessThan(20);
    expect(statements.length).toBeLessThan(300);
    expect(await linkResult(env.client, 'ml_unheard')).toBe('expired');
    expect(await postcardResult(env.client, postcard)).toBe('rendered');
    const left = await service.database.db
      .selectFrom('magic_links')
      .select('id')
      .where('wake_at', 'is not', null)
      .execute();
    expect(left.map((r) => r.id).filter((id) => id.startsWith('ml_held') || id === 'ml_unheard')).toEqual([]);
  }, 180_000);
});
