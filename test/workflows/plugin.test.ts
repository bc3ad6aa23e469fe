/**
 * Paperlink in an engineer's own Temporal worker, on a real server: the plugin connects where
 * Paperlink's settings say, runs Paperlink's workflows beside the engineer's (one of which starts
 * `generate` as a child and waits for the link to end), and delivers the webhook events that worker
 * writes with no other Paperlink process running. A worker that would get no task (its task queue
 * sends them to a versioned build) is refused at its start instead of waiting silently.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig, type Config } from '../../src/config';
import { PaperlinkError } from '../../src/errors';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { expireLink, generateDocument, paperlinkDataConverter, renderIdOf, workflowId } from '../../workflows/client';
import { codecServer, payloadCodec } from '../../workflows/codec';
import { createPaperlinkPlugin, routedTo, type PaperlinkPlugin } from '../../workflows/plugin';
import { adoptVersion, deploymentOptions } from '../../workflows/worker';
import { eventually } from '../support/eventually';
import { startReceiver } from '../support/receiver';
import { freshPostgres } from '../support/service';
import { historyText, startTemporal, TEMPORAL_MISSING, workerProcess } from '../support/temporal';

const suite = TEMPORAL_MISSING ? describe.skip : describe;
const ownWorkflows = path.join(__dirname, 'fixtures/own-workflows.ts');

suite(`Paperlink in an engineer's own worker${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`, () => {
  let env: TestWorkflowEnvironment;
  let databaseUrl: string;
  /** One DATA_DIR for every process here: they share its Magic Link keys, as machines share LINK_TOKEN_KEYS. */
  let dataDir: string;
  const tag = `${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    env = await startTemporal();
    databaseUrl = await freshPostgres();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-plugin-'));
  }, 120_000);

  afterAll(async () => {
    await env?.teardown();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  /** Paperlink's settings from the environment an engineer sets: TEMPORAL_ADDRESS names the test server. */
  const configFor = (taskQueue: string): Config =>
    loadConfig(
      { TEMPORAL_ADDRESS: env.connection.options.address, TEMPORAL_TASK_QUEUE: taskQueue },
      { dataDir, databaseUrl, storage: 'database', logLevel: 'silent', webhookAllowPrivate: true },
    );

  /** A letter's generate body with every variable given `value`. */
  const letter = async (paperlink: PaperlinkPlugin, value: string, destinations: object = { inkit_storage: {} }) => {
    const variables = (await paperlink.service.templates.load(EXAMPLE_IDS.letter)).variables;
    return {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, value])),
      destinations,
    };
  };
  const caller = { keyId: null, name: 'test' };

  it("runs Paperlink's workflows beside the engineer's, connected by Paperlink's settings, and delivers the events it writes", async () => {
    const taskQueue = `own-app-${tag}`;
    const rx = await startReceiver();
    // the only Paperlink process: the engineer's worker, with the plugin
    const paperlink: PaperlinkPlugin = await createPaperlinkPlugin({
      config: configFor(taskQueue),
      log: () => undefined,
    });
    let worker: Worker | undefined;
    let running: Promise<void> | undefined;
    try {
      await paperlink.service.apps.magicLink.put({});
      await paperlink.service.webhooks.create({ url: rx.url, events: ['document.generated'] });
      // no address of the test's: the plugin's connection options are TEMPORAL_ADDRESS's
      const connection = await NativeConnection.connect(paperlink.connectionOptions);
      worker = await Worker.create({
        connection,
        namespace: paperlink.namespace,
        taskQueue: paperlink.taskQueue,
        workflowsPath: ownWorkflows,
        plugins: [paperlink],
      });
      running = worker.run();
      const body = await letter(paperlink, 'a value', {
        inkit_storage: {},
        magic_link: { recipient_email: 'ada@example.com', retain_from_created: { hours: 1 } },
      });
      const handle = await env.client.workflow.start('sendContract', {
        taskQueue,
        workflowId: `contract-${tag}`,
        args: [`order-${tag}`, body],
      });
      // the engineer's workflow made the document and link through its child, and waits for the link
      let link: string | null = null;
      await eventually(async () => (link = await handle.query<string | null>('link')) !== null, 'a link', 60);
      // the event that worker wrote reaches the receiver with nothing else running or writing
      await eventually(async () => rx.received.length > 0, 'document.generated delivered', 30);
      expect(rx.received.map((r) => r.event.type)).toEqual(['document.generated']);
      await expireLink(env.client, link!, { reason: 'plugin test' });
      const result = await handle.result();
      expect(result).toMatchObject({ link, ended: 'revoked' });
      expect(result.document).toMatch(/^doc_/);
      // the child was named by the engineer's key: one render, one document
      const docs = await paperlink.service.database.db.selectFrom('documents').select('id').execute();
      expect(docs.map((d) => d.id)).toEqual([result.document]);
      // Paperlink's steps as the engineer's activities: a share repeated under its key is one link
      const shared = await env.client.workflow.execute('shareTwice', {
        taskQueue,
        workflowId: `share-${tag}`,
        args: [result.document, 'grace@example.com'],
      });
      expect(shared.second).toBe(shared.first);
      expect(new Set(shared.links)).toEqual(new Set([link, shared.first]));
    } finally {
      worker?.shutdown();
      await running?.catch(() => undefined);
      await paperlink.close();
      await rx.stop();
    }
  }, 180_000);

  it('refuses, at its start, a worker whose task queue sends every task to a versioned build', async () => {
    const taskQueue = `own-versioned-${tag}`;
    const deploymentName = `paperlink-plugin-${tag}`;
    const ours = await createPaperlinkPlugin({ config: configFor(taskQueue), log: () => undefined });
    const nativeConnection = await NativeConnection.connect({ plugins: [ours] });
    // `paperlink worker` with TEMPORAL_WORKER_VERSIONING=true: its build made current on the queue
    // (the plugin on the connection: every worker made on it gets it)
    const versioned = await Worker.create({
      connection: nativeConnection,
      namespace: ours.namespace,
      taskQueue,
      workerDeploymentOptions: deploymentOptions({ deploymentName, buildId: 'a' }),
    });
    const versionedRun = versioned.run();
    const mine = await createPaperlinkPlugin({ config: configFor(taskQueue), log: () => undefined });
    try {
      await adoptVersion(ours.client, ours.namespace, { deploymentName, buildId: 'a' });
      // the server tells the task queue of its current build a moment after it is made current
      await eventually(
        async () => (await routedTo(ours.client, ours.namespace, taskQueue)) !== undefined,
        'the queue routed to build a',
        30,
      );
      // the engineer's unversioned worker on the same queue would get nothing: refused when it is
      // made (nothing holds its connection, which closes), saying why
      const connection = await NativeConnection.connect(mine.connectionOptions);
      const err = await Worker.create({
        connection,
        namespace: mine.namespace,
        taskQueue,
        workflowsPath: ownWorkflows,
        plugins: [mine],
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaperlinkError);
      expect((err as PaperlinkError).code).toBe('temporal_task_queue_versioned');
      await connection.close();
      // `paperlink worker` unversioned (the default now) says so and exits, rather than polling for nothing
      const exited = await workerProcess(dataDir, {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: env.connection.options.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        STORAGE: 'database',
      }).then(
        ({ child }) => (child.kill('SIGKILL'), 'polling'),
        (e: unknown) => (e as Error).message,
      );
      expect(exited).toMatch(/error \(temporal_task_queue_versioned\)/);
      // an activity of the engineer's named like one of Paperlink's would replace it in our workflows
      const clash = await Worker.create({
        connection: nativeConnection,
        namespace: mine.namespace,
        taskQueue,
        workerDeploymentOptions: deploymentOptions({ deploymentName, buildId: 'b' }),
        activities: { generateDocument: async () => 'theirs' },
      }).catch((e: unknown) => e);
      expect((clash as PaperlinkError).code).toBe('invalid_configuration');
      // and a worker on another task queue than Paperlink starts its workflows on
      const elsewhere = await Worker.create({
        connection: await NativeConnection.connect(mine.connectionOptions),
        namespace: mine.namespace,
        taskQueue: `${taskQueue}-elsewhere`,
        workflowsPath: ownWorkflows,
        plugins: [mine],
      }).catch((e: unknown) => e);
      expect((elsewhere as PaperlinkError).code).toBe('invalid_configuration');
    } finally {
      versioned.shutdown();
      await versionedRun.catch(() => undefined);
      await ours.close();
      await mine.close();
    }
  }, 180_000);

  it("keeps Paperlink's payloads encrypted in Temporal's history with TEMPORAL_PAYLOAD_KEYS, and the codec server reads them", async () => {
    const taskQueue = `own-encrypted-${tag}`;
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    const config = configFor(taskQueue);
    config.temporal.payloadKeys = keys;
    const paperlink = await createPaperlinkPlugin({ config, log: () => undefined });
    const connection = await NativeConnection.connect({ plugins: [paperlink] });
    const worker = await Worker.create({ connection, namespace: paperlink.namespace, taskQueue });
    const running = worker.run();
    const server = codecServer(payloadCodec(config.temporal)!, 'http://ui.example');
    try {
      await paperlink.service.apps.magicLink.put({});
      // the engineer's client, with the plugin: it writes and reads Paperlink's payloads encrypted
      const client = new Client({
        connection: env.connection,
        namespace: paperlink.namespace,
        dataConverter: paperlinkDataConverter(config.temporal),
      });
      const secret = `Zanzibar ${tag}`;
      const body = await letter(paperlink, secret, {
        magic_link: { recipient_email: `hidden-${process.pid}@example.com`, expire_after_n_views: 2 },
      });
      const result = await generateDocument(client, { body, idempotencyKey: `encrypted-${tag}` }, { taskQueue });
      expect(result.document_id).toMatch(/^doc_/);
      const generateId = workflowId.generate(renderIdOf({ idempotencyKey: `encrypted-${tag}` }));
      // what anyone reading the server's history (or its database) sees: neither the values nor the address
      const stored = await historyText(env, generateId);
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(`hidden-${process.pid}`);
      const linkHistory = await historyText(env, workflowId.link(result.magic_link_piece_id!));
      expect(linkHistory).not.toContain(`hidden-${process.pid}`);
      // the codec server decodes them for Temporal's UI
      const history = await env.client.workflow.getHandle(generateId).fetchHistory();
      const input = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: 'http://ui.example' },
        body: JSON.stringify({
          payloads: [
            {
              metadata: Object.fromEntries(
                Object.entries(input.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
              ),
              data: Buffer.from(input.data!).toString('base64'),
            },
          ],
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('http://ui.example');
      const decoded = ((await res.json()) as { payloads: { data: string }[] }).payloads[0];
      expect(Buffer.from(decoded.data, 'base64').toString('utf8')).toContain(secret);
    } finally {
      server.close();
      worker.shutdown();
      await running.catch(() => undefined);
      await paperlink.close();
    }
  }, 180_000);

  it('finds a render by its template and its document in Temporal with TEMPORAL_SEARCH_ATTRIBUTES, which a namespace without them refuses at start', async () => {
    const taskQueue = `own-indexed-${tag}`;
    const config = configFor(taskQueue);
    config.temporal.searchAttributes = true;
    const refused = await createPaperlinkPlugin({ config, log: () => undefined }).catch((e: unknown) => e);
    expect((refused as PaperlinkError).code).toBe('invalid_configuration');
    const KEYWORD = 2; // INDEXED_VALUE_TYPE_KEYWORD
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: { PaperlinkRenderId: KEYWORD, PaperlinkTemplateId: KEYWORD, PaperlinkDocumentId: KEYWORD },
    });
    const paperlink = await createPaperlinkPlugin({ config, log: () => undefined });
    const worker = await Worker.create({
      connection: await NativeConnection.connect(paperlink.connectionOptions),
      namespace: paperlink.namespace,
      taskQueue,
      plugins: [paperlink],
    });
    const running = worker.run();
    try {
      // as POST /v1/generate runs it under ENGINE=temporal
      const result = await paperlink.service.engine.generate({ body: await letter(paperlink, 'indexed'), caller });
      const query = `PaperlinkTemplateId = '${EXAMPLE_IDS.letter}' AND PaperlinkDocumentId = '${result.document_id}'`;
      const found: string[] = [];
      await eventually(
        async () => {
          found.length = 0;
          for await (const w of paperlink.client.workflow.list({ query })) found.push(w.workflowId);
          return found.length > 0;
        },
        'the render found by its template and document',
        30,
      );
      expect(found).toEqual([workflowId.generate(result.id)]);
    } finally {
      worker.shutdown();
      await running.catch(() => undefined);
      await paperlink.close();
    }
  }, 180_000);

  it("runs Paperlink's workflows on the engineer's own Worker Deployment build", async () => {
    const taskQueue = `own-deployment-${tag}`;
    const version = { deploymentName: `engineer-${tag}`, buildId: '2026.11.27' };
    const paperlink = await createPaperlinkPlugin({ config: configFor(taskQueue), log: () => undefined });
    const worker = await Worker.create({
      connection: await NativeConnection.connect(paperlink.connectionOptions),
      namespace: paperlink.namespace,
      taskQueue,
      workerDeploymentOptions: deploymentOptions(version),
      plugins: [paperlink],
    });
    const running = worker.run();
    try {
      // the engineer's rollout makes their build current; Paperlink's renders then run on it
      await adoptVersion(paperlink.client, paperlink.namespace, version);
      const result = await paperlink.service.engine.generate({ body: await letter(paperlink, 'versioned'), caller });
      const run = await paperlink.client.workflow.getHandle(workflowId.generate(result.id)).describe();
      expect(run.status.name).toBe('COMPLETED');
      const history = await paperlink.client.workflow.getHandle(workflowId.generate(result.id)).fetchHistory();
      const completed = history.events!.filter((e) => e.workflowTaskCompletedEventAttributes);
      expect(completed.length).toBeGreaterThan(0);
      expect(
        completed.every(
          (e) => e.workflowTaskCompletedEventAttributes!.deploymentVersion?.deploymentName === version.deploymentName,
        ),
      ).toBe(true);
    } finally {
      worker.shutdown();
      await running.catch(() => undefined);
      await paperlink.close();
    }
  }, 180_000);
});
