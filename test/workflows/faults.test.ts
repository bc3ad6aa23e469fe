/**
 * Faults on a real Temporal server (test/support/temporal.ts), with `paperlink worker` as a process
 * of its own beside the API, as operators run it: a worker killed -9 in the middle of a render and
 * of an e-mail; the server stopped and started again with its database kept while requests
 * arrive. What users rely on must hold: each request answered (503 engine_unavailable while the
 * server is down, to be retried), one document per render, one e-mail per link, every link opens,
 * and what was accepted while the server was down is done once it is back.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { eventually } from '../support/eventually';
import { sample } from '../support/rows';
import { freshPostgres } from '../support/service';
import { holdingSmtp } from '../support/smtp';
import { closedPort } from '../support/net';
import {
  serviceOnTemporal,
  startTemporal,
  temporalCli,
  TEMPORAL_MISSING,
  workerProcess,
  type OnTemporal,
} from '../support/temporal';
import { linkResult, postcardResult, TemporalEngine } from '../../workflows/client';

const suite = TEMPORAL_MISSING ? describe.skip : describe;

/** A letter long enough that its render takes a second or two: time to kill its worker in the middle. */
const LONG = `<document size="letter"><body>${`<p>${'All work and no play makes Jack a dull boy. '.repeat(8)}</p>`.repeat(4500)}</body></document>`;

suite(`faults on a real Temporal server${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`, () => {
  let env: TestWorkflowEnvironment;
  let on: OnTemporal;
  let app: FastifyInstance;
  let key: string;
  let dataDir: string;
  let smtp: Awaited<ReturnType<typeof holdingSmtp>>;
  let workerEnv: Record<string, string>;
  const workers: ChildProcess[] = [];

  beforeAll(async () => {
    env = await startTemporal();
    smtp = await holdingSmtp();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-faults-'));
    const databaseUrl = await freshPostgres();
    const taskQueue = `paperlink-faults-${process.pid}-${Date.now()}`;
    const config = loadConfig(
      {},
      {
        dataDir,
        databaseUrl,
        storage: 'database',
        engine: 'temporal',
        smtpUrl: smtp.url,
        publicUrl: 'http://docs.acme.example',
        logLevel: 'silent',
      },
    );
    config.temporal.taskQueue = taskQueue;
    // the API alone: the workers are processes of their own
    on = await serviceOnTemporal(env, config, {}, { worker: false });
    app = await buildApp(on.service, { logger: false });
    key = (await on.service.keys.create('api', 'faults test')).secret;
    await on.service.apps.magicLink.put({ public_url: 'http://docs.acme.example' });
    workerEnv = {
      DATABASE_URL: databaseUrl,
      STORAGE: 'database',
      TEMPORAL_ADDRESS: env.connection.options.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SMTP_URL: smtp.url,
      PUBLIC_URL: 'http://docs.acme.example',
      LOG_LEVEL: 'error',
    };
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await app?.close();
    await on?.stop();
    await env?.teardown();
    await smtp?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const startWorker = async () => {
    const w = await workerProcess(dataDir, workerEnv);
    workers.push(w.child);
    return w.child;
  };
  const generate = (idempotencyKey: string, body: object) =>
    app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': key, 'idempotency-key': idempotencyKey },
      payload: body,
    });
  const documents = async () => on.service.database.db.selectFrom('documents').select(['id', 'render_id']).execute();
  /** The generate activities running now, by their workflows. */
  const runningActivities = async () => {
    let n = 0;
    for await (const w of env.client.workflow.list({
      query: `WorkflowType = 'generate' AND ExecutionStatus = 'Running'`,
    })) {
      const d = await env.client.workflow.getHandle(w.workflowId).describe();
      // PENDING_ACTIVITY_STATE_STARTED
      n += d.raw.pendingActivities?.filter((a) => Number(a.state) === 2).length ?? 0;
    }
    return n;
  };

  it('a worker killed -9 in the middle of a render and of an e-mail: one document each, one e-mail each, the links open', async () => {
    const first = await startWorker();
    const template = await on.service.templates.create({ source: LONG });
    // an e-mail the mail server holds (as a slow one does), sent from the worker's generate activity
    const mailed = generate('mid-send', {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: sample,
      destinations: { magic_link: { recipient_email: 'held@example.com', expire_after_n_views: 3 } },
    });
    await eventually(async () => smtp.held() === 1, 'the e-mail held by the mail server', 60);
    // and a long render, under way beside it
    const rendered = generate('mid-render', {
      template_id: template.id,
      merge_parameters: {},
      destinations: { magic_link: { recipient_email: 'long@example.com', expire_after_n_views: 3 } },
    });
    await eventually(
      async () => (await runningActivities()) === 2 && (await documents()).length === 1,
      'the long render under way (its activity started, its document not stored)',
      60,
    );
    first.kill('SIGKILL');
    // from now on the mail server takes what comes; what the dead worker sent stays unaccepted
    smtp.take();
    await startWorker();

    const [a, b] = await Promise.all([mailed, rendered]);
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    const docs = await documents();
    for (const res of [a, b])
      expect(docs.filter((d) => d.render_id === res.json().id)).toEqual([
        { id: res.json().document_id, render_id: res.json().id },
      ]);
    expect(docs).toHaveLength(2);
    // one e-mail per link, with the URL the API answered
    for (const [res, to] of [
      [a, 'held@example.com'],
      [b, 'long@example.com'],
    ] as const) {
      const url = res.json().destinations.magic_link.url as string;
      await eventually(async () => smtp.received.some((m) => m.includes(`To: ${to}`)), `the e-mail to ${to}`, 60);
      const mails = smtp.received.filter((m) => m.includes(`To: ${to}`));
      expect(mails).toHaveLength(1);
      expect(mails[0]).toContain(url);
      const page = await app.inject({ method: 'GET', url: new URL(url).pathname });
      expect(page.statusCode).toBe(200);
    }
  }, 180_000);
});

suite(`the Temporal server restarted${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`, () => {
  let env: TestWorkflowEnvironment | undefined;
  let on: OnTemporal;
  let app: FastifyInstance;
  let key: string;
  let dataDir: string;
  let port: number;
  const workers: ChildProcess[] = [];
  /** The dev server on `port`, its history kept in a file of the data dir across restarts. */
  const startServer = () =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: temporalCli()! },
        dbFilename: path.join(dataDir, 'temporal.db'),
        port,
      },
    });

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-restart-'));
    port = await closedPort();
    env = await startServer();
    const databaseUrl = await freshPostgres();
    const taskQueue = `paperlink-restart-${process.pid}-${Date.now()}`;
    const config = loadConfig(
      {},
      { dataDir, databaseUrl, storage: 'database', engine: 'temporal', logLevel: 'silent' },
    );
    config.temporal.taskQueue = taskQueue;
    // generate waits 3 s for its workflow here (60 s in service)
    on = await serviceOnTemporal(
      env,
      config,
      {},
      { worker: false, engine: { resultTimeoutMs: 3_000, callTimeoutMs: 2_000 } },
    );
    app = await buildApp(on.service, { logger: false });
    key = (await on.service.keys.create('api', 'restart test')).secret;
    await on.service.apps.magicLink.put({});
    const worker = await workerProcess(dataDir, {
      DATABASE_URL: databaseUrl,
      STORAGE: 'database',
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      TEMPORAL_TASK_QUEUE: taskQueue,
      LOG_LEVEL: 'error',
    });
    workers.push(worker.child);
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await app?.close();
    await on?.stop();
    await env?.teardown();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const api = (method: 'GET' | 'POST', url: string, payload?: object, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { 'x-service-api-token': key, ...headers }, payload });
  const letter = async (destinations: object) => {
    const variables = (await on.service.templates.load(EXAMPLE_IDS.letter)).variables;
    return {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations,
    };
  };

  /**
   * A generate as a client sends it while the server is up: retried with its key on 503, as the
   * answer's Retry-After asks (on a loaded machine a render may outlast the 3 s wait given here).
   */
  async function generated(payload: object, key: string) {
    for (let attempt = 1; ; attempt++) {
      const res = await api('POST', '/v1/generate', payload, { 'idempotency-key': key });
      if (res.statusCode !== 503 || attempt === 10) return res;
    }
  }

  it('answers 503 engine_unavailable while it is down, keeps what it accepted, and completes it all once it is back', async () => {
    const made = await generated(
      await letter({ magic_link: { recipient_email: 'a@example.com', expire_after_n_views: 5 } }),
      'before',
    );
    expect(made.statusCode).toBe(201);
    const linkId = made.json().magic_link_piece_id as string;
    // its workflow has read it: nothing is marked
    await eventually(
      async () =>
        (
          await on.service.database.db
            .selectFrom('magic_links')
            .select('wake_at')
            .where('id', '=', linkId)
            .executeTakeFirstOrThrow()
        ).wake_at === null,
      'the link handed over',
      30,
    );

    await env!.teardown();
    env = undefined;
    // while it is down: a generate cannot run (the client is told to retry), a postcard is accepted,
    // a revocation is recorded
    const down = await api('POST', '/v1/generate', await letter({ inkit_storage: {} }), {
      'idempotency-key': 'while-down',
    });
    expect(down.statusCode).toBe(503);
    expect(down.json().error.code).toBe('engine_unavailable');
    expect(down.headers['retry-after']).toBeDefined();
    const token = (await on.service.keys.create('postcard', 'restart test')).secret;
    const card = await app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { ...sample, api_token: token, template_id: EXAMPLE_IDS.postcard },
    });
    expect(card.statusCode).toBe(202);
    const revoked = await api('POST', `/v1/magic_links/${linkId}/expire`);
    expect(revoked.json().status).toBe('revoked');
    const marked = () =>
      on.service.database.db
        .selectFrom('magic_links')
        .select('wake_at')
        .where('id', '=', linkId)
        .executeTakeFirstOrThrow();
    await eventually(async () => (await marked()).wake_at !== null, 'the failed signal marked in its row', 30);

    env = await startServer();
    // the next handover (every 15 s; here at once) tells it what it missed
    await eventually(
      () =>
        (on.service.engine as TemporalEngine).handOver(true).then(
          () => true,
          () => false,
        ),
      'a handover that reaches the server',
      60,
    );
    expect(await linkResult(env.client, linkId)).toBe('revoked');
    expect(await postcardResult(env.client, card.json().id)).toBe('rendered');
    // the client's retry, with its key, is answered
    const again = await generated(await letter({ inkit_storage: {} }), 'while-down');
    expect(again.statusCode).toBe(201);
    const docs = await on.service.database.db
      .selectFrom('documents')
      .select('id')
      .where('render_id', '=', again.json().id)
      .execute();
    expect(docs).toEqual([{ id: again.json().document_id }]);
  }, 180_000);
});
