/**
 * `paperlink worker`: a Temporal worker running Paperlink's workflows and activities; the worker
 * itself is workflows/worker.ts.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { createLog, logFormatOf } from '../log';
import { DATA_DIR_HELP, logged, warningsThrough, type Io, type SetExit } from './shared';

export function addWorkerCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('worker')
    .description(
      'Run a Temporal worker: Paperlink\'s workflows and activities on task queue "paperlink", against the shared PostgreSQL database (run `paperlink serve` with ENGINE=temporal beside it). SIGTERM stops it gracefully.',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('-q, --task-queue <name>', 'task queue to poll (env TEMPORAL_TASK_QUEUE, default paperlink)')
    .addHelpText(
      'after',
      '\nEnvironment: DATABASE_URL (postgres://…, required), STORAGE (database or s3 with S3_BUCKET, S3_ENDPOINT…, or one DATA_DIR every machine mounts), TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE (default default), TEMPORAL_TASK_QUEUE, TEMPORAL_API_KEY, TEMPORAL_TLS (true|false), TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (mTLS), TEMPORAL_TLS_CA, TEMPORAL_WORKER_VERSIONING (true|false, default false) with TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_BUILD_ID, TEMPORAL_PAYLOAD_KEYS (payloads encrypted in history), TEMPORAL_SEARCH_ATTRIBUTES (true|false), SMTP_URL, MAIL_FROM, PUBLIC_URL. See the README, "Running on Temporal"; a worker of your own runs the same with Paperlink\'s plugin (docs/temporal.md, "In your own worker").',
    )
    .action(async (opts: { dataDir?: string; taskQueue?: string }) => {
      const log = createLog(logFormatOf(process.env, process.stdout.isTTY), io.stderr);
      warningsThrough(log, io);
      await logged(io, setExit, async () => {
        const config = loadConfig(process.env, { dataDir: opts.dataDir });
        if (opts.taskQueue) config.temporal.taskQueue = opts.taskQueue;
        const { runWorker } = await import('../../workflows/worker');
        await runWorker(config, { log });
      });
    });
}
