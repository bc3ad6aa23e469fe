/**
 * `paperlink worker`: a Temporal worker on task queue `paperlink` (TEMPORAL_TASK_QUEUE) that runs
 * Paperlink's workflows and activities against the shared PostgreSQL database. SIGTERM or SIGINT
 * stops polling, lets running activities finish, and exits.
 *
 * To register our workflows in a worker of your own:
 *   Worker.create({ workflowsPath, activities: createActivities(await createService(loadConfig())), taskQueue: 'paperlink' })
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { requirePostgres, type Config } from '../src/config';
import { createService } from '../src/service';
import { createActivities } from './activities';
import { connectionOptions, unreachable } from './client';

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
  const service = await createService(config, { log });
  let connection: NativeConnection | undefined;
  try {
    connection = await NativeConnection.connect(connectionOptions(t)).catch((err: unknown) => {
      throw unreachable(t, err);
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
    await connection?.close();
    await service.close();
  }
}
