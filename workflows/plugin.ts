/**
 * Paperlink in a Temporal worker of your own: one plugin registers Paperlink's activities and
 * workflows with your worker, connects it where Paperlink's settings say (TEMPORAL_ADDRESS, TLS,
 * API key), and runs Paperlink's background work (webhook delivery, the hand-over of what Temporal
 * has not heard of, retention) for as long as the worker runs. `paperlink worker` is this plugin
 * on a worker of Paperlink's own.
 *
 *   const paperlink = await createPaperlinkPlugin();          // DATABASE_URL, TEMPORAL_ADDRESS, … as for the API
 *   const connection = await NativeConnection.connect(paperlink.connectionOptions);
 *   const worker = await Worker.create({
 *     connection, namespace: paperlink.namespace, taskQueue: paperlink.taskQueue,
 *     workflowsPath: require.resolve('./workflows'),           // yours, with `export * from 'paperlink/workflows/workflows'`
 *     plugins: [paperlink],
 *   });
 *   await worker.run();                                       // the service closes when its last worker stops
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
import type { OpenTelemetryPluginOptions } from '@temporalio/interceptors-opentelemetry';
import { ConfigError, loadConfig, requirePostgres, type Config } from '../src/config';
import { StartupError, type PaperlinkError } from '../src/errors';
import { createService, type Service } from '../src/service';
import { createActivities } from './activities';
import { connectClient, connectionOptions, noWorkerDeployments, TemporalEngine } from './client';
import { startTracing, temporalInterceptors, tracing, workflowSpans } from '../src/tracing';
import { paperlinkDataConverter } from './codec';
import { flowIds, type Log } from '../src/log';
import { serveMetrics, type MetricsServer } from '../src/metrics';

/** Paperlink's workflows module: a worker's `workflowsPath` when it has none of its own. */
export const workflowsPath = require.resolve('./workflows');

export interface PaperlinkPluginOptions {
  /** Paperlink's settings (default: loadConfig(), from the environment as for the API). */
  config?: Config;
  /** Where Paperlink says what it does (default: stderr). */
  log?: Log;
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
    if (noWorkerDeployments(err)) return undefined;
    throw err;
  }
}

/**
 * A worker that would poll for nothing: its task queue's workflow tasks go to a build of a Worker
 * Deployment this worker is not part of (an unversioned worker beside versioned ones, or another
 * deployment's). Thrown when the worker is made rather than leaving it to wait silently.
 */
export function starvedError(
  taskQueue: string,
  routed: { deploymentName: string; buildId: string },
  own: { deploymentName: string } | undefined,
): PaperlinkError | undefined {
  if (own?.deploymentName === routed.deploymentName) return undefined; // a build of the same deployment: it is made current, or waits to be
  return new StartupError(
    'temporal_task_queue_versioned',
    `Task queue "${taskQueue}" sends its workflow tasks to build ${routed.buildId} of Worker Deployment "${routed.deploymentName}", so this ${own ? `worker of deployment "${own.deploymentName}"` : 'unversioned worker'} would get none. Poll a task queue of your own (TEMPORAL_TASK_QUEUE, for the API too), or register as a build of "${routed.deploymentName}" (workerDeploymentOptions), or stop that deployment's versioning: docs/temporal.md, "Versioning in a mixed fleet".`,
  );
}

/**
 * With tracing on (OTEL_*; src/tracing.ts), the worker runs under Temporal's OpenTelemetry
 * interceptors: a workflow's run continues the trace its start carried, each activity is a span
 * of it, and Paperlink's own spans (the render, the store, the e-mail) are children of the
 * activity's. The workflow's spans, made in its sandbox, reach this process's span processor.
 * A worker already under those interceptors (an OpenTelemetryPlugin of your own) is left as it is.
 * A worker made from a prebuilt workflowBundle gets the activities' spans only: the workflow's
 * interceptors are bundled (docs/tracing.md).
 */
function traced<T extends WorkerOptions | ReplayWorkerOptions>(options: T): T {
  const on = tracing();
  if (!on) return options;
  const otel = temporalInterceptors();
  const module = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');
  const yours = (options as { plugins?: { name: string }[] }).plugins?.some((p) => p.name === 'OpenTelemetryPlugin');
  if (yours || options.interceptors?.workflowModules?.includes(module)) return options;
  const plugin = new otel.OpenTelemetryPlugin({
    // the sandbox's spans come in the shape of the SDK it bundles (src/tracing.ts workflowSpans)
    spanProcessor: workflowSpans(on.processor) as unknown as OpenTelemetryPluginOptions['spanProcessor'],
    resource: on.resource,
  });
  return ('activities' in options ? plugin.configureWorker(options) : plugin.configureReplayWorker(options)) as T;
}

/**
 * Registers Paperlink with a Temporal worker (`plugins` of NativeConnection.connect or
 * Worker.create). Made by createPaperlinkPlugin(), which opens Paperlink's service.
 */
export class PaperlinkPlugin implements WorkerPlugin, NativeConnectionPlugin, ClientPlugin {
  readonly name = 'paperlink';
  private closing: Promise<void> | undefined;
  /** The workers running now with this plugin. */
  private readonly running = new Set<Worker>();
  /** Options this plugin configured already (a second registration of the same plugin passes them through). */
  private readonly configured = new WeakSet<WorkerOptions>();

  constructor(
    /** Paperlink's service: its database, storage, mailer and renderers, the API's own. */
    readonly service: Service,
    private readonly log: Log,
    /** Where `GET /metrics` answers for this process (METRICS_ADDRESS; src/metrics.ts), closed with the service. */
    readonly metrics?: MetricsServer,
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

  /** Where Paperlink's settings say to connect: `NativeConnection.connect(paperlink.connectionOptions)`. */
  get connectionOptions(): NativeConnectionOptions {
    return this.configureNativeConnection({});
  }

  /**
   * Adds Paperlink's activities and, when the worker has no workflows of its own, Paperlink's. Refuses
   * (before the worker is made, so nothing holds its connection):
   * - a worker on another task queue or namespace than Paperlink starts its workflows on: they
   *   would wait there for a worker that never comes (`invalid_configuration`);
   * - an activity of yours named like one of Paperlink's, which would replace it in Paperlink's
   *   own workflows (`invalid_configuration`);
   * - a worker whose task queue sends its tasks to a Worker Versioning build it is not part of
   *   (`temporal_task_queue_versioned`): it would poll for nothing.
   */
  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    if (this.configured.has(options)) return options; // registered twice (the connection's plugins and the worker's)
    const namespace = options.namespace ?? 'default';
    if (options.taskQueue !== this.taskQueue || namespace !== this.namespace)
      throw new ConfigError(
        `This worker polls task queue "${options.taskQueue}" in namespace "${namespace}", but Paperlink starts its workflows on "${this.taskQueue}" in "${this.namespace}": set TEMPORAL_TASK_QUEUE and TEMPORAL_NAMESPACE (for the API too) to your worker's, or give the worker taskQueue: paperlink.taskQueue, namespace: paperlink.namespace. Give the plugin to that worker's Worker.create, not to a connection other workers share.`,
      );
    const ours = createActivities(this.service);
    const yours = (options.activities ?? {}) as Record<string, unknown>;
    const clash = Object.keys(yours).filter((name) => name in ours);
    if (clash.length)
      throw new ConfigError(
        `Your activities ${clash.map((n) => `"${n}"`).join(', ')} have the names of Paperlink's, which its workflows call: rename yours.`,
      );
    const versioned = options.workerDeploymentOptions?.useWorkerVersioning
      ? { deploymentName: options.workerDeploymentOptions.version.deploymentName }
      : undefined;
    const routed = await routedTo(this.client, namespace, options.taskQueue);
    const starved = routed && starvedError(options.taskQueue, routed, versioned);
    if (starved) throw starved;
    const configured: WorkerOptions = traced({
      ...options,
      dataConverter: paperlinkDataConverter(this.temporal, options.dataConverter),
      activities: { ...yours, ...ours },
      ...(options.workflowsPath || options.workflowBundle ? {} : { workflowsPath }),
    });
    this.configured.add(configured);
    return configured;
  }

  /** A replay worker replays Paperlink's workflows when it has none of its own, and reads their payloads. */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const dataConverter = paperlinkDataConverter(this.temporal, options.dataConverter);
    return traced(
      options.workflowsPath || options.workflowBundle
        ? { ...options, dataConverter }
        : { ...options, dataConverter, workflowsPath },
    );
  }

  /** A client (`plugins` of `new Client`) reads and writes Paperlink's payloads; in a process that runs no worker, `paperlinkDataConverter` does the same without opening the service. */
  configureClient(options: ClientOptions): ClientOptions {
    return { ...options, dataConverter: paperlinkDataConverter(this.temporal, options.dataConverter) };
  }

  /** While the worker runs, Paperlink's background work runs; when the last worker running the plugin stops, the service closes. */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (this.running.has(worker)) return next(worker); // registered twice (the connection's plugins and the worker's)
    this.running.add(worker);
    try {
      await next(worker);
    } finally {
      this.running.delete(worker);
      if (this.running.size === 0) await this.close();
    }
  }

  /** The client Paperlink's service starts and signals workflows with (closed with the service). */
  get client(): Client {
    return (this.service.engine as TemporalEngine).client;
  }

  /** Closes Paperlink's service (the worker's end does it too); once. */
  close(): Promise<void> {
    this.closing ??= this.service
      .close()
      .then(() => this.metrics?.close())
      .then(() => this.log('paperlink: closed'));
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
  // before the client: its starts carry traces when tracing is on (src/tracing.ts)
  startTracing(config.tracing, log);
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
            searchAttributes: config.temporal.searchAttributes,
            ...parts,
            onError: (id, err) =>
              log(`${id}: ${err instanceof Error ? err.message : String(err)}`, { err, ...flowIds(id) }),
          }),
      },
    );
  } catch (err) {
    await client.connection.close();
    throw err;
  }
  // GET /metrics on a port of its own, in `paperlink worker` and in a worker of yours alike
  let metrics: MetricsServer | undefined;
  try {
    if (config.metrics) metrics = await serveMetrics(config.metrics);
  } catch (err) {
    await service.close();
    throw err;
  }
  return new PaperlinkPlugin(service, log, metrics);
}
