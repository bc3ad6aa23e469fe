/**
 * Paperlink in a Temporal worker of your own: one plugin registers Paperlink's activities and
 * workflows with your worker, connects it where Paperlink's settings say (TEMPORAL_ADDRESS, TLS,
 * API key), and runs Paperlink's background work (webhook delivery, the hand-over of what Temporal
 * has not heard of, retention) for as long as the worker runs. `paperlink worker` is this plugin
 * on a worker of Paperlink's own.
 *
 *   const paperlink = await createPaperlinkPlugin();          // DATABASE_URL, TEMPORAL_ADDRESS, … as for the API
 *   const connection = await NativeConnection.connect({ plugins: [paperlink] });
 *   const worker = await Worker.create({
 *     connection, namespace: paperlink.namespace, taskQueue: paperlink.taskQueue,
 *     workflowsPath: require.resolve('./workflows'),           // yours, with `export * from 'paperlink/workflows/workflows'`
 *   });
 *   await worker.run();                                       // closes Paperlink's service when it ends
 *
 * A worker has one workflows module: yours re-exports ours (without one, the plugin gives ours).
 */
import type {
  NativeConnectionOptions,
  NativeConnectionPlugin,
  ReplayWorkerOptions,
  Worker,
  WorkerOptions,
  WorkerPlugin,
} from '@temporalio/worker';
import type { Client, ClientOptions, ClientPlugin } from '@temporalio/client';
import { loadConfig, requirePostgres, type Config } from '../src/config';
import { PaperlinkError } from '../src/errors';
import { createService, type Service } from '../src/service';
import { createActivities } from './activities';
import { connectClient, connectionOptions, TemporalEngine } from './client';
import { paperlinkDataConverter } from './codec';

/** Paperlink's workflows module: a worker's `workflowsPath` when it has none of its own. */
export const workflowsPath = require.resolve('./workflows');

export interface PaperlinkPluginOptions {
  /** Paperlink's settings (default: loadConfig(), from the environment as for the API). */
  config?: Config;
  /** Where Paperlink says what it does (default: stderr). */
  log?: (line: string) => void;
}

/** Where the server sends a task queue's workflow tasks under Worker Versioning: a deployment's build, or none (unversioned workers). */
export async function routedTo(
  client: Client,
  namespace: string,
  taskQueue: string,
): Promise<{ deploymentName: string; buildId: string } | undefined> {
  try {
    const r = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: 1 /* TASK_QUEUE_KIND_NORMAL */ },
      taskQueueType: 1 /* TASK_QUEUE_TYPE_WORKFLOW */,
    });
    const v = r.versioningInfo?.currentDeploymentVersion;
    return v?.deploymentName && v.buildId ? { deploymentName: v.deploymentName, buildId: v.buildId } : undefined;
  } catch (err) {
    // a server without Worker Deployments routes nothing by version
    if ([12, 9].includes((err as { code?: number }).code ?? -1)) return undefined;
    throw err;
  }
}

/**
 * A worker that would poll for nothing: its task queue's workflow tasks go to a build of a Worker
 * Deployment this worker is not part of (an unversioned worker beside versioned ones, or another
 * deployment's). Thrown at the worker's start rather than leaving it to wait silently.
 */
export function starvedError(
  taskQueue: string,
  routed: { deploymentName: string; buildId: string },
  own: { deploymentName: string } | undefined,
): PaperlinkError | undefined {
  if (own?.deploymentName === routed.deploymentName) return undefined; // a build of the same deployment: it is made current, or waits to be
  return new PaperlinkError(
    'temporal_task_queue_versioned',
    `Task queue "${taskQueue}" sends its workflow tasks to build ${routed.buildId} of Worker Deployment "${routed.deploymentName}", so this ${own ? `worker of deployment "${own.deploymentName}"` : 'unversioned worker'} would get none. Poll a task queue of your own (TEMPORAL_TASK_QUEUE, for the API too), or register as a build of "${routed.deploymentName}" (workerDeploymentOptions), or stop that deployment's versioning: docs/temporal.md, "Versioning in a mixed fleet".`,
  );
}

/**
 * Registers Paperlink with a Temporal worker (`plugins` of NativeConnection.connect or
 * Worker.create). Made by createPaperlinkPlugin(), which opens Paperlink's service.
 */
export class PaperlinkPlugin implements WorkerPlugin, NativeConnectionPlugin, ClientPlugin {
  readonly name = 'paperlink';
  private closing: Promise<void> | undefined;
  private running = false;

  constructor(
    /** Paperlink's service: its database, storage, mailer and renderers, the API's own. */
    readonly service: Service,
    private readonly log: (line: string) => void,
  ) {}

  private get temporal() {
    return this.service.config.temporal;
  }

  /** The namespace Paperlink's service starts workflows in (TEMPORAL_NAMESPACE): your worker's. */
  get namespace(): string {
    return this.temporal.namespace;
  }

  /** The task queue Paperlink's service starts workflows on (TEMPORAL_TASK_QUEUE): your worker's. */
  get taskQueue(): string {
    return this.temporal.taskQueue;
  }

  /** Fills in where to connect from Paperlink's settings; what the connection's options say stays. */
  configureNativeConnection(options: NativeConnectionOptions): NativeConnectionOptions {
    const ours = connectionOptions(this.temporal);
    return {
      ...options,
      address: options.address ?? ours.address,
      tls: options.tls ?? ours.tls,
      apiKey: options.apiKey ?? ours.apiKey,
    };
  }

  /**
   * Adds Paperlink's activities (yours win a name both have) and, when the worker has no workflows
   * of its own, Paperlink's. Refuses a worker on another task queue than the one Paperlink starts
   * its workflows on: they would wait there for a worker that never comes.
   */
  configureWorker(options: WorkerOptions): WorkerOptions {
    if (options.taskQueue !== this.taskQueue || (options.namespace ?? 'default') !== this.namespace)
      throw new PaperlinkError(
        'invalid_configuration',
        `This worker polls task queue "${options.taskQueue}" in namespace "${options.namespace ?? 'default'}", but Paperlink starts its workflows on "${this.taskQueue}" in "${this.namespace}": set TEMPORAL_TASK_QUEUE and TEMPORAL_NAMESPACE (for the API too) to your worker's, or give the worker taskQueue: paperlink.taskQueue, namespace: paperlink.namespace.`,
      );
    return {
      ...options,
      dataConverter: paperlinkDataConverter(this.temporal, options.dataConverter),
      activities: { ...createActivities(this.service), ...options.activities },
      ...(options.workflowsPath || options.workflowBundle ? {} : { workflowsPath }),
    };
  }

  /** A replay worker replays Paperlink's workflows when it has none of its own, and reads their payloads. */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const dataConverter = paperlinkDataConverter(this.temporal, options.dataConverter);
    return options.workflowsPath || options.workflowBundle
      ? { ...options, dataConverter }
      : { ...options, dataConverter, workflowsPath };
  }

  /** A client of yours (`plugins` of `new Client`, or one made on the plugin's connection) reads and writes Paperlink's payloads. */
  configureClient(options: ClientOptions): ClientOptions {
    return { ...options, dataConverter: paperlinkDataConverter(this.temporal, options.dataConverter) };
  }

  /**
   * Before the worker polls: refuses one whose task queue sends its tasks elsewhere (Worker
   * Versioning). While it runs, Paperlink's background work runs (it started with the service);
   * when it ends, the service closes.
   */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (this.running) return next(worker); // registered twice (the connection's plugins and the worker's)
    this.running = true;
    try {
      const versioned = worker.options.workerDeploymentOptions?.useWorkerVersioning
        ? { deploymentName: worker.options.workerDeploymentOptions.version.deploymentName }
        : undefined;
      const routed = await routedTo(this.client, this.namespace, worker.options.taskQueue);
      const starved = routed && starvedError(worker.options.taskQueue, routed, versioned);
      if (starved) throw starved;
      await next(worker);
    } finally {
      await this.close();
    }
  }

  /** The client Paperlink's service starts and signals workflows with (closed with the service). */
  get client(): Client {
    return (this.service.engine as TemporalEngine).client;
  }

  /** Closes Paperlink's service (the worker's end does it too); once. */
  close(): Promise<void> {
    this.closing ??= this.service.close().then(() => this.log('paperlink: closed'));
    return this.closing;
  }
}

/**
 * Opens Paperlink's service as a Temporal worker runs it (PostgreSQL, ENGINE=temporal: what its
 * workflows start, they start on TEMPORAL_TASK_QUEUE) and returns the plugin for your worker.
 * The service's background work (webhook delivery, the hand-over, retention) starts now.
 */
export async function createPaperlinkPlugin(options: PaperlinkPluginOptions = {}): Promise<PaperlinkPlugin> {
  const config = options.config ?? loadConfig();
  const log = options.log ?? ((line: string) => console.error(line));
  requirePostgres(config, 'Paperlink in a Temporal worker');
  // Temporal first: an unreachable server is said before the database is touched
  const client = await connectClient(config.temporal);
  let service: Service;
  try {
    service = await createService(
      { ...config, engine: 'temporal' },
      {
        log,
        runFlows: true,
        engine: (_activities, parts) =>
          new TemporalEngine(client, config.temporal.taskQueue, {
            ...parts,
            onError: (id, err) => log(`${id}: ${err instanceof Error ? err.message : String(err)}`),
          }),
      },
    );
  } catch (err) {
    await client.connection.close();
    throw err;
  }
  return new PaperlinkPlugin(service, log);
}
