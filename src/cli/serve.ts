/**
 * `paperlink serve`: the HTTP API, in this process or in a cluster of --processes: its options, and
 * how SIGINT or SIGTERM stops it. What starts the service is in src/serve.ts.
 */
import cluster from 'node:cluster';
import os from 'node:os';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config';
import { createLog, logFormatOf, type Log } from '../log';
import { startCluster, startServer } from '../serve';
import { DATA_DIR_HELP, EXIT_FAILED, logged, warningsThrough, type Io, type SetExit } from './shared';

export function addServeCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('serve')
    .description('Run the HTTP API (what `npm start` runs). Configuration comes from environment variables; flags win.')
    .option('-p, --port <port>', 'TCP port (env PORT, default 3000)', (v) => Number(v))
    .option('--host <host>', 'interface to listen on (env HOST, default 127.0.0.1; 0.0.0.0 for every interface)')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option(
      '--processes <n>',
      `processes answering on the port, each using a core (env PROCESSES, default: the number of cores, here ${os.availableParallelism()}; 1: this process alone)`,
      (v) => Number(v),
    )
    .addHelpText(
      'after',
      '\nEnvironment: PORT, HOST, DATA_DIR, DATABASE_URL (postgres://…), STORAGE (filesystem|database|s3; s3 with S3_BUCKET, S3_PREFIX, S3_REGION, S3_ENDPOINT, S3_FORCE_PATH_STYLE and the AWS credentials), BODY_LIMIT (e.g. 10mb), PUBLIC_URL, LOG_LEVEL, LOG_FORMAT (json|pretty), SMTP_URL, MAIL_FROM, POSTCARD_PATH, PROCESSES, SHUTDOWN_TIMEOUT_MS, ENGINE (embedded|temporal; temporal needs DATABASE_URL and the TEMPORAL_* settings of `paperlink worker --help`). See the README.',
    )
    .action(async (opts: { port?: number; host?: string; dataDir?: string; processes?: number }) => {
      // one format for everything this process says, its failure to start too
      const log = createLog(logFormatOf(process.env, process.stdout.isTTY), io.stdout);
      warningsThrough(log, io);
      await logged(io, setExit, async () => {
        const processes = opts.processes ?? Number(process.env.PROCESSES || os.availableParallelism());
        if (!Number.isInteger(processes) || processes < 1 || processes > 256)
          throw new ConfigError(
            `--processes (PROCESSES) must be a whole number from 1 to 256, not ${JSON.stringify(opts.processes ?? process.env.PROCESSES)}.`,
          );
        await serve(processes, opts, log);
      });
    });
}

/** `paperlink serve` once its options are read. */
async function serve(processes: number, opts: { port?: number; host?: string; dataDir?: string }, log: Log) {
  const worker = cluster.isWorker;
  const config = loadConfig(process.env, { port: opts.port, host: opts.host, dataDir: opts.dataDir });
  // listening before the server is up: a stop asked for while it starts happens once it has
  let server: { close(): Promise<void> } | undefined;
  let stopping = false;
  const close = (s: NonNullable<typeof server>) =>
    s.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log(`Stopping failed: ${err instanceof Error ? err.message : String(err)}`, { level: 'error', err });
        process.exit(EXIT_FAILED);
      },
    );
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (!worker) log('Stopping…');
    if (server) void close(server);
    // whatever hangs (a disk that refuses every write, a database that does not answer), the
    // process ends: requests get SHUTDOWN_TIMEOUT_MS, the background work as long again; what
    // it still holds is taken over by the other processes, or at the next start
    setTimeout(() => {
      log(
        `Not stopped within ${(2 * config.shutdownTimeoutMs) / 1000} s (twice SHUTDOWN_TIMEOUT_MS): exiting now. What this process held is taken over by the others or at the next start.`,
        { level: 'error' },
      );
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(EXIT_FAILED);
    }, 2 * config.shutdownTimeoutMs).unref();
  };
  // on, not once: Ctrl-C under npm start reaches this process from the terminal and from npm (stop
  // ignores the second), where a second signal with no handler would end it at once
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (processes > 1 && !worker) {
    const running = await startCluster(config, processes, log);
    server = { close: () => running.stop() };
  } else {
    server = await startServer(config, log, { worker });
  }
  if (stopping) void close(server);
}
