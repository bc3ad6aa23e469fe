/**
 * A real Temporal server for the tests: TEMPORAL_ADDRESS (an existing one), or the official
 * `temporal` CLI started as a local dev server: the one scripts/temporal-install.sh builds from
 * source through the Go module proxy into ~/.cache (CI does), or one on PATH. Without either the
 * suites that need it are reported as skipped, with the reason in their name; CI sets
 * PAPERLINK_REQUIRE_TEMPORAL=1, and there a missing server fails them instead.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { Config } from '../../src/config';
import { createService, type Service, type ServiceOptions } from '../../src/service';
import { createActivities } from '../../workflows/activities';
import { TemporalEngine, type TemporalEngineOptions } from '../../workflows/client';
import { workflowsPath } from '../../workflows/worker';
import { cliJs } from './serve';

/** The version scripts/temporal-install.sh builds (keep the two the same). */
export const CLI_VERSION = 'v1.5.1';

/** The temporal CLI this run uses (when not TEMPORAL_ADDRESS). */
export const temporalCli = () => cli;

const cli = (() => {
  const cached = path.join(os.homedir(), '.cache', 'paperlink-temporal', CLI_VERSION);
  if (fs.existsSync(path.join(cached, '.complete'))) return path.join(cached, 'temporal');
  try {
    return execFileSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
})();
const address = process.env.TEMPORAL_ADDRESS;

/** Why there is no Temporal server for this run; undefined when there is one. */
export const TEMPORAL_MISSING =
  address || cli ? undefined : `TEMPORAL_ADDRESS is not set and no temporal CLI (bash scripts/temporal-install.sh)`;
if (TEMPORAL_MISSING && process.env.PAPERLINK_REQUIRE_TEMPORAL === '1')
  throw new Error(`A real Temporal server is required here (PAPERLINK_REQUIRE_TEMPORAL=1): ${TEMPORAL_MISSING}`);

/** The server: TEMPORAL_ADDRESS, or a dev server of the CLI started for this test file. */
export async function startTemporal(): Promise<TestWorkflowEnvironment> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  return address
    ? TestWorkflowEnvironment.createFromExistingServer({
        address,
        namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
      })
    : TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: cli! } } });
}

export interface OnTemporal {
  service: Service;
  /** Every workflow id the engine started or signalled, in order. */
  calls: string[];
  /** Stops the worker, then the service (its engine closes its own connection). */
  stop(): Promise<void>;
}

/**
 * `serve` with ENGINE=temporal and one `worker` beside it, as an operator runs them: the service's
 * engine has a connection of its own (and closes it); every start and signal it sends is counted.
 */
export async function serviceOnTemporal(
  env: TestWorkflowEnvironment,
  config: Config,
  options: ServiceOptions = {},
  more: { worker?: boolean; engine?: TemporalEngineOptions } = {},
): Promise<OnTemporal> {
  const calls: string[] = [];
  const client = new Client({
    connection: await Connection.connect({ address: env.connection.options.address }),
    namespace: env.namespace ?? 'default',
    interceptors: {
      workflow: [
        {
          start: (input, next) => (calls.push(input.options.workflowId), next(input)),
          signalWithStart: (input, next) => (calls.push(input.options.workflowId), next(input)),
        },
      ],
    },
  });
  const service = await createService(config, {
    runFlows: true,
    log: () => undefined,
    ...options,
    engine: (_activities, parts) => new TemporalEngine(client, config.temporal.taskQueue, { ...more.engine, ...parts }),
  });
  if (more.worker === false) return { service, calls, stop: () => service.close() };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: config.temporal.taskQueue,
    workflowsPath,
    activities: createActivities(service),
  });
  const running = worker.run();
  return {
    service,
    calls,
    stop: async () => {
      worker.shutdown();
      await running;
      await service.close();
    },
  };
}

/** `paperlink worker` as its own process (the built CLI), as an operator runs it; resolves once it polls. */
export function workerProcess(
  dataDir: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliJs, 'worker', '--data-dir', dataDir], {
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const read = (c: Buffer) => {
      out += c.toString();
      if (out.includes('paperlink worker: polling')) resolve({ child, output: () => out });
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code, signal) => reject(new Error(`worker exited (${code ?? signal}): ${out}`)));
  });
}

/**
 * With PAPERLINK_EXPORT_HISTORIES=1: writes the history of each run (`name` → workflow id) to
 * test/workflows/histories/server/<name>.json, replayed in CI by replay.test.ts; a file that exists
 * is kept as it was (histories are never rewritten).
 */
export async function exportHistories(env: TestWorkflowEnvironment, runs: Map<string, string>): Promise<void> {
  if (process.env.PAPERLINK_EXPORT_HISTORIES !== '1') return;
  const dir = path.resolve(__dirname, '../workflows/histories/server');
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, workflowId] of runs) {
    const file = path.join(dir, `${name}.json`);
    if (fs.existsSync(file)) continue;
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const { events } = JSON.parse(historyToJSON(history)) as { events: unknown[] };
    // one event per line, as the hand-built ones: a diff shows which event a change touched
    fs.writeFileSync(file, `{"events": [\n${events.map((e) => JSON.stringify(e)).join(',\n')}\n]}\n`);
  }
}

/** Every payload of a workflow's history, decoded: what anyone who can read Temporal sees of it. */
export async function historyText(env: TestWorkflowEnvironment, workflowId: string): Promise<string> {
  const history = JSON.parse(historyToJSON(await env.client.workflow.getHandle(workflowId).fetchHistory())) as unknown;
  const texts: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.data === 'string' && o.metadata) texts.push(Buffer.from(o.data, 'base64').toString('utf8'));
      Object.values(o).forEach(walk);
    }
  };
  walk(history);
  return texts.join('\n');
}
