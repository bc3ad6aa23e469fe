/**
 * `paperlink worker`: a Temporal worker on task queue `paperlink` (TEMPORAL_TASK_QUEUE) that runs
 * Paperlink's workflows and activities against the shared PostgreSQL database. SIGTERM or SIGINT
 * stops polling, lets running activities finish, and exits.
 *
 * To run our workflows in a worker of your own, give it the plugin (./plugin.ts):
 *   Worker.create({ …, plugins: [await createPaperlinkPlugin()] })
 */
import { makeTelemetryFilterString, NativeConnection, Runtime, Worker, type LogLevel } from '@temporalio/worker';
import type { LogMetadata, Logger } from '@temporalio/common';
import type { Log, LogLevel as OurLevel } from '../src/log';
import { requirePostgres, type Config } from '../src/config';
import { packageVersion } from '../src/service';
import type { Client } from '@temporalio/client';
import { noWorkerDeployments, unreachable } from './client';
import { createPaperlinkPlugin } from './plugin';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { tracing } from '../src/tracing';

/**
 * Worker Versioning: a worker registers as one build of the deployment, and the server sends each
 * workflow's tasks to the build it belongs to. Every workflow auto-upgrades: it moves to the
 * current build at its next task, so a change to a workflow still goes behind patched() (replay
 * tests prove it). No workflow is pinned: a behavior named in workflow code makes the server
 * refuse the tasks of an unversioned worker (a server without Worker Deployments, a worker of
 * one's own), and our workflows must run on both.
 */
export function deploymentOptions(version: WorkerDeploymentVersion) {
  return { version, useWorkerVersioning: true as const, defaultVersioningBehavior: 'AUTO_UPGRADE' as const };
}

/** Whether the server has Worker Deployments (Temporal Server 1.27 and later, Temporal Cloud). */
export async function hasWorkerDeployments(client: Client, namespace: string): Promise<boolean> {
  try {
    await client.workflowService.listWorkerDeployments({ namespace, pageSize: 1 });
    return true;
  } catch (err) {
    if (noWorkerDeployments(err)) return false;
    throw err;
  }
}

/** The build new workflows go to now (none before the first is made current). */
export async function currentBuild(
  client: Client,
  namespace: string,
  deploymentName: string,
): Promise<string | undefined> {
  try {
    const { workerDeploymentInfo } = await client.workflowService.describeWorkerDeployment({
      namespace,
      deploymentName,
    });
    return workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId || undefined;
  } catch (err) {
    if ((err as { code?: number }).code === 5) return undefined; // NOT_FOUND: no worker has polled yet
    throw err;
  }
}

/** Sends new workflows (and the next tasks of AUTO_UPGRADE ones) to `version`: a rollout's last step. */
export async function makeCurrent(client: Client, namespace: string, version: WorkerDeploymentVersion): Promise<void> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity: 'paperlink worker',
  });
}

/**
 * The first build of a deployment is made current by its worker (nothing runs until one is); a
 * later one waits beside the current one for the operator to make it current. Says what it did.
 */
export async function adoptVersion(
  client: Client,
  namespace: string,
  version: WorkerDeploymentVersion,
  tries = 30,
): Promise<string> {
  for (let i = 0; ; i++) {
    const current = await currentBuild(client, namespace, version.deploymentName);
    if (current === version.buildId)
      return `build ${version.buildId} is the current build of ${version.deploymentName}`;
    if (current)
      return `build ${current} is current; this build ${version.buildId} waits beside it until you make it current: temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}`;
    try {
      await makeCurrent(client, namespace, version);
      return `build ${version.buildId} made current: the first build of deployment ${version.deploymentName}`;
    } catch (err) {
      // the server has not seen this build's pollers yet
      if (i + 1 >= tries) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

export { createActivities } from './activities';
/** The workflow file to give `Worker.create({ workflowsPath })` (or `bundleWorkflowCode`). */
export { workflowsPath, createPaperlinkPlugin, PaperlinkPlugin, type PaperlinkPluginOptions } from './plugin';

/** Temporal's levels, lowest first. */
const SDK_LEVELS: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/**
 * The Temporal SDK's log (the worker's own messages, Core's forwarded ones, workflow.log and
 * activity loggers) written through Paperlink's, at `level` and above: one line each in the
 * process's LOG_FORMAT, its metadata (workflow and activity ids, task queue) as fields, an error in
 * it with its cause chain.
 */
export class SdkLogger implements Logger {
  constructor(
    private readonly out: Log,
    private readonly level: LogLevel,
  ) {}

  log(level: LogLevel, message: string, meta: LogMetadata = {}): void {
    if (SDK_LEVELS.indexOf(level) < SDK_LEVELS.indexOf(this.level)) return;
    const fields: Record<string, unknown> = {};
    let err: unknown;
    for (const [k, v] of Object.entries(meta)) {
      // the SDK names the error `error` or `failure`; the log's `err` carries its causes
      if (v instanceof Error && err === undefined) err = v;
      else fields[k] = v;
    }
    this.out(`temporal: ${message}`, {
      ...fields,
      ...(err === undefined ? {} : { err }),
      level: level.toLowerCase() as OurLevel,
    });
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

export interface WorkerOptions {
  log?: Log;
  /** Stops the worker when aborted (besides SIGTERM and SIGINT). */
  signal?: AbortSignal;
}

export async function runWorker(config: Config, options: WorkerOptions = {}): Promise<void> {
  const log = options.log ?? ((line: string) => console.error(line));
  requirePostgres(config, 'paperlink worker');
  // the SDK's own log at LOG_LEVEL, but its start-up chatter (the workflow bundle's build report)
  // only at debug: `paperlink worker: polling …` says it is up
  const level: Record<Config['logLevel'], LogLevel> = {
    trace: 'TRACE',
    debug: 'DEBUG',
    info: 'WARN',
    warn: 'WARN',
    error: 'ERROR',
    fatal: 'ERROR',
    silent: 'ERROR',
  };
  const sdkLevel = level[config.logLevel];
  const coreLevel: LogLevel =
    config.logLevel === 'trace'
      ? 'TRACE'
      : SDK_LEVELS.indexOf(sdkLevel) > SDK_LEVELS.indexOf('WARN')
        ? sdkLevel
        : 'WARN';
  let installed = false;
  try {
    Runtime.install({
      logger: new SdkLogger(log, sdkLevel),
      // Core's own messages (the Rust side) forwarded to that logger too, not printed to stderr by it
      telemetryOptions: {
        logging: {
          forward: {},
          // Core's (and its libraries', `other`) at WARN and above as before: their DEBUG is every
          // HTTP/2 frame; lower only at LOG_LEVEL=trace
          filter: makeTelemetryFilterString({ core: coreLevel, other: coreLevel }),
        },
      },
    });
    installed = true;
  } catch {
    // installed already (a worker of one's own in the same process): its logger stays
  }
  try {
    await work(config, log, options);
  } finally {
    // the runtime this installed, shut down: its signal handlers and native threads would keep a
    // worker that failed to start alive, deaf to SIGTERM
    if (installed) await Runtime.instance().shutdown();
  }
}

async function work(config: Config, log: Log, options: WorkerOptions): Promise<void> {
  const t = config.temporal;
  // Paperlink's worker is the plugin an engineer's worker takes, on a worker of its own
  const paperlink = await createPaperlinkPlugin({ config, log });
  let connection: NativeConnection | undefined;
  const metrics = paperlink.metrics;
  const traces = tracing() && paperlink.service.config.tracing?.destination;
  try {
    connection = await NativeConnection.connect(paperlink.connectionOptions).catch((err: unknown) => {
      throw unreachable(t, err);
    });
    const client = paperlink.client;
    const version = { deploymentName: t.deploymentName, buildId: t.buildId ?? packageVersion() };
    const versioned = t.versioning && (await hasWorkerDeployments(client, t.namespace));
    if (t.versioning && !versioned)
      log(
        'paperlink worker: this Temporal server has no Worker Deployments: running unversioned (a workflow change then relies on patched() alone; docs/temporal.md)',
      );
    const worker = await Worker.create({
      connection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      workerDeploymentOptions: versioned ? deploymentOptions(version) : undefined,
      plugins: [paperlink],
    });
    const stop = () => {
      log('paperlink worker: stopping (running activities finish first)');
      worker.shutdown();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    options.signal?.addEventListener('abort', stop, { once: true });
    log(
      `paperlink worker: polling task queue "${t.taskQueue}" in namespace "${t.namespace}" at ${t.address}${versioned ? ` as build ${version.buildId} of deployment ${version.deploymentName}` : ''}${metrics ? `; metrics at ${metrics.url}` : ''}${traces ? `; traces to ${traces}` : ''}`,
      {
        version: packageVersion(),
        ...(metrics ? { metrics: metrics.url } : {}),
        ...(traces ? { traces } : {}),
        engine: 'temporal',
        temporal: { address: t.address, namespace: t.namespace, task_queue: t.taskQueue },
        ...(versioned ? { deployment: version.deploymentName, build_id: version.buildId } : {}),
      },
    );
    const running = worker.run();
    if (versioned)
      void adoptVersion(client, t.namespace, version).then(
        (said) => log(`paperlink worker: ${said}`),
        (err: unknown) =>
          log(`paperlink worker: could not read deployment ${version.deploymentName}: ${(err as Error).message}`, {
            err,
            deployment: version.deploymentName,
            build_id: version.buildId,
          }),
      );
    try {
      await running;
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    }
    log('paperlink worker: stopped');
  } finally {
    await paperlink.close();
    await connection?.close();
  }
}
