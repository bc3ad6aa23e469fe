/**
 * `paperlink worker`: a Temporal worker on task queue `paperlink` (TEMPORAL_TASK_QUEUE) that runs
 * Paperlink's workflows and activities against the shared PostgreSQL database. SIGTERM or SIGINT
 * stops polling, lets running activities finish, and exits.
 *
 * To register our workflows in a worker of your own:
 *   Worker.create({ workflowsPath, activities: createActivities(await createService(loadConfig())), taskQueue: 'paperlink' })
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel } from '@temporalio/worker';
import { requirePostgres, type Config } from '../src/config';
import { createService } from '../src/service';
import { createActivities } from './activities';
import { Client } from '@temporalio/client';
import type { Service } from '../src/service';
import { connectionOptions, TemporalEngine, unreachable } from './client';

/** The workflow file to give `Worker.create({ workflowsPath })` (or `bundleWorkflowCode`). */
export const workflowsPath = require.resolve('./workflows');

export { createActivities } from './activities';

export interface WorkerOptions {
  log?: (line: string) => void;
  /** Stops the worker when aborted (besides SIGTERM and SIGINT). */
  signal?: AbortSignal;
}

export async function runWorker(config: Config, options: WorkerOptions = {}): Promise<void> {
  const log = options.log ?? ((line: string) => console.error(line));
  requirePostgres(config, 'paperlink worker');
  const t = config.temporal;
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
  try {
    Runtime.install({ logger: new DefaultLogger(level[config.logLevel]) });
  } catch {
    // installed already (a worker of one's own in the same process): its logger stays
  }
  const connection = await NativeConnection.connect(connectionOptions(t)).catch((err: unknown) => {
    throw unreachable(t, err);
  });
  let service: Service | undefined;
  try {
    // the worker's own changes (a generated document, a link sent) wake the webhook workflow too
    const client = new Client({ connection, namespace: t.namespace });
    service = await createService(config, {
      log,
      runFlows: true,
      engine: (_activities, marks) =>
        new TemporalEngine(client, t.taskQueue, {
          marks,
          onError: (id, err) => log(`${id}: ${err instanceof Error ? err.message : String(err)}`),
        }),
    });
    const worker = await Worker.create({
      connection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      workflowsPath,
      activities: createActivities(service),
    });
    const stop = () => {
      log('paperlink worker: stopping (running activities finish first)');
      worker.shutdown();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    options.signal?.addEventListener('abort', stop, { once: true });
    log(`paperlink worker: polling task queue "${t.taskQueue}" in namespace "${t.namespace}" at ${t.address}`);
    try {
      await worker.run();
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    }
    log('paperlink worker: stopped');
  } finally {
    await service?.close(); // its engine closes the shared connection
    if (!service) await connection.close();
  }
}
