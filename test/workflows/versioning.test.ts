/**
 * A rollout under Worker Versioning, on a real Temporal server (the CLI's dev server has Worker
 * Deployments): build `a` runs renders and link lifecycles; build `b` is deployed beside it and
 * made current, build `a` is stopped; the running lifecycles move to `b` at their next task and end
 * as they should, and new renders run on `b`. The workers are set up as `paperlink worker` sets
 * itself up (workflows/worker.ts): deployment options, the first build adopted as current.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import type { Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { createActivities } from '../../workflows/activities';
import { expireLink, linkResult } from '../../workflows/client';
import {
  adoptVersion,
  currentBuild,
  deploymentOptions,
  hasWorkerDeployments,
  makeCurrent,
  workflowsPath,
} from '../../workflows/worker';
import { eventually } from '../support/eventually';
import { freshPostgres } from '../support/service';
import { serviceOnTemporal, startTemporal, TEMPORAL_MISSING, type OnTemporal } from '../support/temporal';

const suite = TEMPORAL_MISSING ? describe.skip : describe;

suite(`a rollout under Worker Versioning${TEMPORAL_MISSING ? ` (skipped: ${TEMPORAL_MISSING})` : ''}`, () => {
  let env: TestWorkflowEnvironment;
  let on: OnTemporal;
  let service: Service;
  let app: FastifyInstance;
  let key: string;
  let dataDir: string;
  const taskQueue = `paperlink-versions-${process.pid}-${Date.now()}`;
  const deploymentName = `paperlink-test-${process.pid}-${Date.now()}`;
  const running: { worker: Worker; done: Promise<void> }[] = [];

  beforeAll(async () => {
    env = await startTemporal();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-versions-'));
    const config = loadConfig(
      {},
      { dataDir, databaseUrl: await freshPostgres(), storage: 'database', logLevel: 'silent', engine: 'temporal' },
    );
    config.temporal.taskQueue = taskQueue;
    on = await serviceOnTemporal(env, config, {}, { worker: false });
    service = on.service;
    app = await buildApp(service, { logger: false });
    key = (await service.keys.create('api', 'versions test')).secret;
    await service.apps.magicLink.put({});
  }, 120_000);

  afterAll(async () => {
    for (const r of running) {
      if (r.worker.getState() === 'RUNNING') r.worker.shutdown();
      await r.done.catch(() => undefined);
    }
    await app?.close();
    await on?.stop();
    await env?.teardown();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  /** A worker of build `buildId`, as `paperlink worker` makes one. */
  const startBuild = async (buildId: string) => {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowsPath,
      activities: createActivities(service),
      workerDeploymentOptions: deploymentOptions({ deploymentName, buildId }),
    });
    const r = { worker, done: worker.run() };
    running.push(r);
    return r;
  };
  const build = async (workflowId: string) =>
    (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo
      ?.deploymentVersion?.buildId;
  const share = async () => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const res = await app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': key },
      payload: {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: 'a@example.com', expire_after_n_views: 5 } },
      },
    });
    expect(res.statusCode).toBe(201);
    return res.json<{ id: string; magic_link_piece_id: string }>();
  };

  it('moves running link lifecycles to the new build, and sends new renders there', async () => {
    expect(await hasWorkerDeployments(env.client, env.namespace ?? 'default')).toBe(true);
    const a = await startBuild('a');
    // the first build of the deployment makes itself current, as `paperlink worker` does
    expect(await adoptVersion(env.client, env.namespace ?? 'default', { deploymentName, buildId: 'a' })).toContain(
      'made current',
    );
    const first = await share();
    const second = await share();
    expect(await build(`generate-${first.id}`)).toBe('a');
    for (const link of [first, second])
      await eventually(async () => (await build(`link-${link.magic_link_piece_id}`)) === 'a', 'the lifecycle on a');

    // build b beside a: it waits until it is made current
    await startBuild('b');
    expect(await adoptVersion(env.client, env.namespace ?? 'default', { deploymentName, buildId: 'b' })).toContain(
      'waits beside it',
    );
    await eventually(
      () =>
        makeCurrent(env.client, env.namespace ?? 'default', { deploymentName, buildId: 'b' }).then(
          () => true,
          () => false,
        ),
      'b made current (once the server has seen its pollers)',
      30,
    );
    expect(await currentBuild(env.client, env.namespace ?? 'default', deploymentName)).toBe('b');
    a.worker.shutdown();
    await a.done;

    // the lifecycles go on, on b: one revoked by the API, the other by the expire update
    const revoked = await app.inject({
      method: 'POST',
      url: `/v1/magic_links/${first.magic_link_piece_id}/expire`,
      headers: { 'x-service-api-token': key },
    });
    expect(revoked.json().status).toBe('revoked');
    expect(await linkResult(env.client, first.magic_link_piece_id)).toBe('revoked');
    expect((await expireLink(env.client, second.magic_link_piece_id, { reason: 'rollout test' })).status).toBe(
      'revoked',
    );
    expect(await linkResult(env.client, second.magic_link_piece_id)).toBe('revoked');
    for (const link of [first, second]) expect(await build(`link-${link.magic_link_piece_id}`)).toBe('b');
    // and a new render runs on b, its lifecycle too
    const third = await share();
    expect(await build(`generate-${third.id}`)).toBe('b');
    await eventually(async () => (await build(`link-${third.magic_link_piece_id}`)) === 'b', 'the new lifecycle on b');
  }, 180_000);
});
