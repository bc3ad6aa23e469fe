#!/usr/bin/env node
/**
 * The `paperlink` command. Every command has --help. Exit codes: 0 done, 1 something failed
 * that is not the caller's input, 2 the input was wrong (a template, data, an option).
 */
import cluster from 'node:cluster';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { MIN_PASSWORD } from './admin';
import { PaperlinkError, ValidationError } from './errors';
import { packageRoot } from './paths';
import { SingleBar, Presets } from 'cli-progress';
import { readRows, renderBatch } from './batch';
import { ConfigError, loadConfig } from './config';
import { sqliteFile } from './db';
import { ALL_SCOPES, type KeyKind } from './keys';
import { publicView } from './links/app';
import { LinkKeyring, linkKeyring } from './links/keyring';
import { MAX_PAGE } from './pagination';
import { line, runDoctor } from './doctor';
import { createLog, logFormatOf, type Log } from './log';
import { startCluster, startServer } from './serve';
import { createService, packageVersion, type Service } from './service';
import {
  folderAssets,
  loadTemplateFile,
  renderTemplate,
  TEMPLATE_FILE,
  variables,
  type RenderWarning,
} from './templates';
import { createRenderer } from './templates/pool';
import { printer } from './templates/html';
import { converter } from './templates/docx';
import { checkAvailable, PDF_STANDARDS, type PdfStandard } from './templates/standards';
import { normalizeValues } from './templates/values';

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stdin?: () => Promise<string>;
  /** Asks for a secret on the terminal without echoing it; absent when standard input is not a terminal. */
  askSecret?: (question: string) => Promise<string>;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_INPUT = 2;

const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  askSecret: process.stdin.isTTY
    ? (question) =>
        new Promise((resolve) => {
          process.stderr.write(question);
          const stdin = process.stdin;
          let typed = '';
          stdin.setRawMode(true);
          stdin.resume();
          stdin.setEncoding('utf8');
          const onData = (chunk: string) => {
            for (const ch of chunk) {
              if (ch === '\r' || ch === '\n' || ch === '\u0004') {
                stdin.setRawMode(false);
                stdin.pause();
                stdin.off('data', onData);
                process.stderr.write('\n');
                return resolve(typed);
              }
              if (ch === '\u0003') process.exit(130);
              typed = ch === '\u007f' ? typed.slice(0, -1) : typed + ch;
            }
          };
          stdin.on('data', onData);
        })
    : undefined,
};

/** Prints an error the way every command does, and returns its exit code. */
export function report(err: unknown, io: Io): number {
  if (err instanceof PaperlinkError) {
    io.stderr(`error (${err.code}): ${err.message}\n`);
    for (const d of err.details) if (d.message !== err.message) io.stderr(`  ${d.field}: ${d.message}\n`);
    return err instanceof ValidationError ? EXIT_INPUT : EXIT_FAILED;
  }
  io.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT_FAILED;
}

async function readData(file: string | undefined, io: Io): Promise<Record<string, string>> {
  if (file === undefined) return {};
  let text: string;
  if (file === '-') {
    if (!io.stdin) throw new ValidationError('No standard input to read --data from.');
    text = await io.stdin();
  } else {
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new ValidationError(`Cannot read the data file ${file} (${(err as NodeJS.ErrnoException).code}).`, [
        { field: '--data', message: 'cannot be read' },
      ]);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(`The data file ${file} is not valid JSON: ${(err as Error).message}`, [
      { field: '--data', message: 'is not valid JSON' },
    ]);
  }
  return normalizeValues(parsed, 'data');
}

function size(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

export function buildProgram(io: Io, setExit: (code: number) => void): Command {
  const program = new Command('paperlink')
    .description('Generate PDF documents from templates, share them by Magic Link, take postcard requests.')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('render')
    .description('Render one document from a template and a JSON file of values.')
    .argument(
      '<template>',
      'an XML template, an HTML template (Liquid), a Word .docx or a fillable PDF; assets are read from its folder',
    )
    .option('-d, --data <file>', 'JSON object of merge values ("-" reads standard input)')
    .option('-o, --out <file>', 'where to write the PDF (default: the template name with .pdf, in the current folder)')
    .addOption(standardOption())
    .addHelpText(
      'after',
      '\nExample:\n  paperlink render examples/letter/letter.xml --data examples/letter/sample.json --out letter.pdf\n\nExit codes: 0 written, 2 the template or the data is wrong (all missing variables are listed), 1 other failures.',
    )
    .action(async (template: string, opts: { data?: string; out?: string; pdfStandard?: PdfStandard }) => {
      const t = await loadTemplateFile(template);
      const values = await readData(opts.data, io);
      const warnings: RenderWarning[] = [];
      const pdf = await renderTemplate(t, values, { warnings, standard: opts.pdfStandard });
      for (const w of warnings) io.stderr(`warning: ${w.code}: ${w.message}\n`);
      const out = opts.out ?? `${path.basename(template).replace(/\.[^.]+$/, '')}.pdf`;
      fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
      fs.writeFileSync(out, pdf);
      io.stdout(`Wrote ${out} (${size(pdf.length)})\n`);
      setExit(EXIT_OK);
    });

  program
    .command('variables')
    .description(
      'Print a template\'s variables, in order of first use; an optional one (written {{name | default: "…"}}) with its default.',
    )
    .argument(
      '<template>',
      'an XML template, an HTML template, a Word .docx or a fillable PDF, or a folder holding one',
    )
    .option('--json', 'print {"required": [...], "optional": {"name": "default", ...}} instead of one name a line')
    .addHelpText('after', '\nExample output:\n  first_name\n  company (optional, default "")')
    .action(async (template: string, opts: { json?: boolean }) => {
      const t = await loadTemplateFile(template);
      const names = variables(t);
      if (opts.json)
        io.stdout(
          `${JSON.stringify({ required: names.filter((n) => !Object.hasOwn(t.defaults, n)), optional: t.defaults })}\n`,
        );
      else
        io.stdout(
          names
            .map((n) =>
              Object.hasOwn(t.defaults, n) ? `${n} (optional, default ${JSON.stringify(t.defaults[n])})\n` : `${n}\n`,
            )
            .join(''),
        );
      setExit(EXIT_OK);
    });

  program
    .command('examples')
    .description('Render the example templates shipped with Paperlink, with their sample values.')
    .option('-o, --out <dir>', 'folder to write the PDFs to', 'out')
    .action(async (opts: { out: string }) => {
      const root = path.join(packageRoot(), 'examples');
      fs.mkdirSync(opts.out, { recursive: true });
      for (const name of fs.readdirSync(root).sort()) {
        const dir = path.join(root, name);
        const template = fs.readdirSync(dir).find((f) => TEMPLATE_FILE.test(f));
        if (!template) continue;
        const t = await loadTemplateFile(path.join(dir, template));
        const sample = path.join(dir, 'sample.json');
        const values = fs.existsSync(sample) ? await readData(sample, io) : {};
        const out = path.join(opts.out, `${name}.pdf`);
        try {
          fs.writeFileSync(out, await renderTemplate(t, values));
        } catch (err) {
          // an HTML or Word example where Chromium or LibreOffice is missing: the others are still made
          if ((err as { code?: string }).code !== 'format_unavailable') throw err;
          io.stderr(`Skipped ${name}: ${(err as Error).message}\n`);
          continue;
        }
        io.stdout(`Wrote ${out}\n`);
      }
      setExit(EXIT_OK);
    });

  addServiceCommands(program, io, setExit);
  return program;
}

/** --pdf-standard, as `pdf_standard` of a generate request. */
function standardOption(): Option {
  return new Option(
    '--pdf-standard <standard>',
    'make the PDF meet a standard: PDF/A (archiving) and/or PDF/UA (accessibility); XML templates meet all, HTML and Word the PDF/A levels',
  ).choices(PDF_STANDARDS);
}

const DATA_DIR_HELP = 'folder of the SQLite database and stored documents (env DATA_DIR, default ./data)';

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/**
 * Node's own warnings (a deprecation, the AWS SDK's notice about Node 20) said through `log`
 * under LOG_FORMAT=json, instead of as Node's plain lines on standard error.
 */
function warningsThrough(log: Log, io: Io): void {
  // only for the process's own output: the CLI run in a test's process leaves its warnings alone
  if (io !== processIo || logFormatOf(process.env, process.stdout.isTTY) !== 'json') return;
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) =>
    log(`${w.name}: ${w.message}`, { level: 'warn', ...(w.code ? { code: w.code } : {}) }),
  );
}

/**
 * Runs a long-lived command (serve, worker) whose failure to start is said in its log's format:
 * under LOG_FORMAT=json one JSON line on standard error with the error's code, cause chain and
 * details, like everything else the process writes; as `report` says it otherwise. The exit code
 * is `report`'s either way.
 */
async function logged(io: Io, setExit: (code: number) => void, run: () => Promise<void>): Promise<void> {
  try {
    await run();
    setExit(EXIT_OK);
  } catch (err) {
    if (logFormatOf(process.env, process.stdout.isTTY) === 'pretty') throw err;
    const code = err instanceof PaperlinkError ? err.code : undefined;
    createLog('json', io.stderr)(
      `error${code ? ` (${code})` : ''}: ${err instanceof Error ? err.message : String(err)}`,
      { level: 'fatal', err },
    );
    setExit(err instanceof ValidationError ? EXIT_INPUT : EXIT_FAILED);
  }
}

function addServiceCommands(program: Command, io: Io, setExit: (code: number) => void): void {
  /**
   * Opens the service's database (as `serve` would, from the environment and --data-dir), runs
   * `fn`, closes it. Says on standard error which database that is, and when it was made just now:
   * a command run in the wrong folder would otherwise work on a new, empty database unnoticed.
   */
  async function withService<T>(opts: { dataDir?: string }, fn: (s: Service) => Promise<T>): Promise<T> {
    const config = loadConfig(process.env, { dataDir: opts.dataDir });
    const sqlite = config.databaseUrl ? undefined : path.resolve(sqliteFile(config.dataDir));
    const fresh = sqlite !== undefined && !fs.existsSync(sqlite);
    const service = await createService(config);
    io.stderr(
      sqlite
        ? `Database: SQLite at ${sqlite}${fresh ? ' (none was there: created now; give --data-dir or DATA_DIR if the server uses another)' : ''}\n`
        : `Database: PostgreSQL at ${service.database.location}\n`,
    );
    try {
      return await fn(service);
    } finally {
      await service.close();
    }
  }

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

  /** `paperlink serve` once its options are read. */
  const serve = async (processes: number, opts: { port?: number; host?: string; dataDir?: string }, log: Log) => {
    const worker = cluster.isWorker;
    const config = loadConfig(process.env, { port: opts.port, host: opts.host, dataDir: opts.dataDir });
    // listening before the server is up: a stop asked for while it starts happens once it has
    let server: { close(): Promise<void> } | undefined;
    let stopping = false;
    const close = (s: NonNullable<typeof server>) =>
      s.close().then(
        () => process.exit(0),
        () => process.exit(1),
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
  };

  program
    .command('doctor')
    .description(
      'Check that this machine, with this configuration, can do what the service does: the database, the document storage, the link keys, mail, Temporal (with ENGINE=temporal), the sandbox, and a small document of each template format (XML, PDF forms, HTML, Word) rendered as a generate renders it.',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('--json', 'print the checks as one JSON array ({name, outcome, says, fix}) instead of a line each')
    .addHelpText(
      'after',
      '\nEach check prints one line: ok, warn (works without it: e.g. Word templates refused where LibreOffice is missing; a database behind this build), FAIL (with what to fix), or skip.\nIt reads the same environment as `paperlink serve` (DATA_DIR, DATABASE_URL, STORAGE, SMTP_URL, ENGINE, CHROMIUM_PATH, TEMPLATE_SANDBOX, …). It runs no migration and makes no database; it writes a probe row (kept, overwritten each time) and a probe file (deleted), and, as `serve` would at its start, the link key file and its fingerprint where there are none yet and the outbox folder.\n\nExit codes: 0 nothing failed, 1 a check failed.',
    )
    .action(async (opts: { dataDir?: string; json?: boolean }) => {
      const config = loadConfig(process.env, { dataDir: opts.dataDir });
      if (!opts.json)
        io.stdout(
          `Checking Paperlink ${packageVersion()} on this machine (ENGINE=${config.engine}, DATA_DIR=${config.dataDir}):\n`,
        );
      const checks = await runDoctor(config, opts.json ? undefined : (c) => io.stdout(line(c)));
      const failed = checks.filter((c) => c.outcome === 'fail').length;
      if (opts.json) io.stdout(`${JSON.stringify(checks, null, 2)}\n`);
      else io.stdout(failed ? `${failed} check${failed === 1 ? '' : 's'} failed.\n` : 'Nothing failed.\n');
      setExit(failed ? EXIT_FAILED : EXIT_OK);
    });

  program
    .command('codec-server')
    .description(
      "Serve Temporal's codec-server protocol (POST /encode, /decode) with the keys of TEMPORAL_PAYLOAD_KEYS, so that Temporal's UI and CLI show Paperlink's encrypted payloads. It decrypts whatever it is given: keep it where only the people allowed to read them reach it.",
    )
    .option('-p, --port <port>', 'port to listen on', '8888')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--origin <url>', "the Temporal UI's origin, allowed by CORS (e.g. http://localhost:8233)")
    .option(
      '--allow-host <list>',
      'comma-separated host:port names it is reached by besides its address (others are refused)',
    )
    .addHelpText(
      'after',
      '\nEnvironment: TEMPORAL_PAYLOAD_KEYS (k2:<base64>,k1:<base64>; required). In the UI: Settings, Data Encoder, this address. With the CLI: temporal workflow show --codec-endpoint http://127.0.0.1:8888. See docs/temporal.md, "Encrypted payloads".',
    )
    .action(async (opts: { port: string; host: string; origin?: string; allowHost?: string }) => {
      const config = loadConfig(process.env);
      const { codecServer, payloadCodec } = await import('../workflows/codec');
      const codec = payloadCodec(config.temporal);
      if (!codec)
        throw new ConfigError(
          'TEMPORAL_PAYLOAD_KEYS is not set: there is nothing to decode. Give it the keys your workers encrypt with.',
        );
      const server = codecServer(
        codec,
        opts.origin,
        (opts.allowHost ?? '')
          .split(',')
          .map((h) => h.trim())
          .filter(Boolean),
      );
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(Number(opts.port), opts.host, resolve);
      });
      io.stderr(`paperlink codec-server: listening on http://${opts.host}:${opts.port}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => server.close(() => resolve());
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      setExit(EXIT_OK);
    });

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
        const { runWorker } = await import('../workflows/worker');
        await runWorker(config, { log });
      });
    });

  const kindOf = (k: string): KeyKind => {
    if (k !== 'postcard' && k !== 'api')
      throw new ValidationError('--kind is postcard or api.', [
        { field: '--kind', message: 'must be postcard or api' },
      ]);
    return k;
  };
  /**
   * create, list and revoke under `parent`: `keys` always works on API keys; `tokens` takes
   * --kind (postcard by default).
   */
  const credentialCommands = (parent: Command, fixed: KeyKind | undefined, what: string) => {
    const withKind = (c: Command) => (fixed ? c : c.option('-k, --kind <kind>', 'postcard or api', 'postcard'));
    const kind = (opts: { kind?: string }) => fixed ?? kindOf(opts.kind ?? 'postcard');
    const createHint = (k: KeyKind) =>
      fixed ? 'npx paperlink keys create --name NAME' : `npx paperlink tokens create --kind ${k} --name NAME`;
    withKind(parent.command('create'))
      .description(`Make a new ${what} and print it. It is shown only this once; only its hash is stored.`)
      .requiredOption('-n, --name <name>', 'who or what uses it, e.g. "n8n production" or "website form"')
      .option(
        '-s, --scope <scopes...>',
        `API keys: what it may do, space- or comma-separated (default: everything): ${ALL_SCOPES.join(', ')}`,
      )
      .option('-d, --data-dir <dir>', DATA_DIR_HELP)
      .action(async (opts: { name: string; kind?: string; dataDir?: string; scope?: string[] }) => {
        const scopes = opts.scope?.flatMap((x) => x.split(','));
        const { secret, key } = await withService(opts, (s) => s.keys.create(kind(opts), opts.name, scopes));
        io.stdout(`${secret}\n`);
        io.stderr(
          `Created ${key.kind === 'api' ? 'key' : `${key.kind} token`} ${key.id} (${key.name})${key.kind === 'api' ? ` with the scopes ${key.scopes.join(', ')}` : ''}. Keep it secret: it cannot be shown again.\n`,
        );
        setExit(EXIT_OK);
      });
    withKind(parent.command('list'))
      .description(`List ${what}s: name, prefix, scopes (API keys), created, last used, revoked.`)
      .option('-d, --data-dir <dir>', DATA_DIR_HELP)
      .option('--json', 'print JSON')
      .action(async (opts: { kind?: string; dataDir?: string; json?: boolean }) => {
        const k = kind(opts);
        const list = await withService(opts, (s) => s.keys.list(k));
        if (opts.json) io.stdout(`${JSON.stringify(list, null, 2)}\n`);
        else if (!list.length)
          io.stdout(`No ${k === 'api' ? 'API keys' : `${k} tokens`} yet. Make one with: ${createHint(k)}\n`);
        else
          io.stdout(
            table([
              ['ID', 'NAME', 'PREFIX', ...(k === 'api' ? ['SCOPES'] : []), 'CREATED', 'LAST USED', 'REVOKED'],
              ...list.map((x) => [
                x.id,
                x.name,
                x.prefix,
                ...(k === 'api' ? [x.scopes.length === ALL_SCOPES.length ? 'all' : x.scopes.join(',')] : []),
                x.created_at,
                x.last_used_at ?? 'never',
                x.revoked_at ?? '',
              ]),
            ]),
          );
        setExit(EXIT_OK);
      });
    withKind(parent.command('revoke <id-or-prefix>'))
      .description(`Revoke one ${what} by its id or prefix (as \`list\` shows them). Requests with it get 401 at once.`)
      .option('-d, --data-dir <dir>', DATA_DIR_HELP)
      .action(async (idOrPrefix: string, opts: { kind?: string; dataDir?: string }) => {
        const key = await withService(opts, (s) => s.keys.revoke(idOrPrefix, kind(opts)));
        io.stdout(`Revoked ${key.id} (${key.name}).\n`);
        setExit(EXIT_OK);
      });
  };
  credentialCommands(
    program.command('keys').description('Create, list and revoke API keys (sent in the X-Service-API-Token header).'),
    'api',
    'API key',
  );
  credentialCommands(
    program
      .command('tokens')
      .description('Credentials of every kind: postcard tokens (the api_token of postcard requests) and API keys.'),
    undefined,
    'token',
  );

  const templates = program.command('templates').description('Manage the templates stored in the service.');
  templates
    .command('list')
    .description('List stored templates with their variables.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('--json', 'print JSON')
    .action(async (opts: { dataDir?: string; json?: boolean }) => {
      const page = await withService(opts, (s) => s.templates.list({ limit: MAX_PAGE }));
      if (opts.json) io.stdout(`${JSON.stringify(page.data, null, 2)}\n`);
      else
        io.stdout(
          table([
            ['ID', 'NAME', 'FORMAT', 'VARIABLES'],
            ...page.data.map((t) => [t.id, t.name, t.format, t.variables.join(', ')]),
          ]),
        );
      setExit(EXIT_OK);
    });
  templates
    .command('add <file>')
    .description(
      'Store a template (an XML layout template, an HTML document with Liquid, a Word .docx, or a fillable PDF); the images, CSS and fonts it names are read from its folder.',
    )
    .option('-n, --name <name>', 'the template name (default: the name in the template, or the file name)')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (file: string, opts: { name?: string; dataDir?: string }) => {
      let source: Uint8Array;
      try {
        source = new Uint8Array(fs.readFileSync(file));
      } catch (err) {
        throw new ValidationError(`Cannot read ${file} (${(err as NodeJS.ErrnoException).code}).`, [
          { field: 'file', message: 'cannot be read' },
        ]);
      }
      const t = await withService(opts, (s) =>
        s.templates.create({
          source,
          name: opts.name ?? path.basename(file).replace(/\.[^.]+$/, ''),
          assets: folderAssets(path.dirname(file)),
        }),
      );
      io.stdout(`${t.id}\n`);
      io.stderr(`Stored "${t.name}" (${t.format}); variables: ${t.variables.join(', ') || 'none'}.\n`);
      setExit(EXIT_OK);
    });
  templates
    .command('remove <id>')
    .description('Delete a stored template. Documents made from it stay.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (id: string, opts: { dataDir?: string }) => {
      await withService(opts, (s) => s.templates.remove(id));
      io.stdout(`Deleted ${id}.\n`);
      setExit(EXIT_OK);
    });

  const apps = program
    .command('apps')
    .description('Set up the apps of the service (the Magic Link app, the storage app).');
  const magic = apps
    .command('magic-link')
    .description('The Magic Link app: where links point, who e-mails come from, how recipients prove who they are.');
  magic
    .command('setup')
    .description(
      'Set up (or change) the Magic Link app. Options left out keep their value; the first setup starts from the defaults.',
    )
    .option('--public-url <url>', 'the address recipients reach this service at (links are PUBLIC_URL/l/…)')
    .option('--organization <name>', 'the organisation named on the pages and e-mails')
    .option('--sender-name <name>', 'who the e-mails say shared the document')
    .option('--sender-email <address>', 'the sender address shown to recipients')
    .option('--accent-color <hex>', 'colour of buttons, e.g. #1F6FEB')
    .option('--logo-url <url>', 'an https URL or data: URI of a logo')
    .option('--auth-types <list>', 'comma-separated: email, social')
    .option(
      '--from-json <file>',
      'read every setting from a JSON file (the body of PUT /v1/apps/magic_link, with oidc_providers)',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: Record<string, string | undefined>) => {
      let body: Record<string, unknown> = {};
      if (opts.fromJson) {
        try {
          body = JSON.parse(fs.readFileSync(opts.fromJson, 'utf8')) as Record<string, unknown>;
        } catch (err) {
          throw new ValidationError(`Cannot read ${opts.fromJson} as JSON: ${(err as Error).message}`, [
            { field: '--from-json', message: 'is not a JSON file' },
          ]);
        }
      }
      const flags: [string, string][] = [
        ['publicUrl', 'public_url'],
        ['organization', 'organization_name'],
        ['senderName', 'sender_name'],
        ['senderEmail', 'sender_email'],
        ['accentColor', 'accent_color'],
        ['logoUrl', 'logo_url'],
      ];
      for (const [flag, field] of flags) if (opts[flag] !== undefined) body[field] = opts[flag];
      if (opts.authTypes) body.auth_types = opts.authTypes.split(',').map((x) => x.trim());
      const saved = await withService({ dataDir: opts.dataDir }, (s) => s.apps.magicLink.put(body));
      io.stdout(`${JSON.stringify(publicView(saved), null, 2)}\n`);
      setExit(EXIT_OK);
    });
  magic
    .command('show')
    .description('Print the Magic Link app settings (provider secrets are not shown).')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: { dataDir?: string }) => {
      const app = await withService(opts, (s) => s.apps.magicLink.require());
      io.stdout(`${JSON.stringify(publicView(app), null, 2)}\n`);
      setExit(EXIT_OK);
    });

  const storageApp = apps
    .command('storage')
    .description('The storage app: how long documents are kept when a generate request gives no retain_for.');
  storageApp
    .command('setup')
    .description(
      'Set how long documents are kept by default: then a document is deleted with its PDF, and its Magic Links end.',
    )
    .requiredOption('--retain-for <span>', 'a number and a unit, 30m, 12h or 90d; or "none": until deleted')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText('after', '\nExample:\n  paperlink apps storage setup --retain-for 90d')
    .action(async (opts: { retainFor: string; dataDir?: string }) => {
      const m = /^(\d{1,9})\s*(m|min|minutes?|h|hours?|d|days?)$/i.exec(opts.retainFor.trim());
      if (!m && opts.retainFor.trim().toLowerCase() !== 'none')
        throw new ValidationError(
          `--retain-for takes a span like 30m, 12h or 90d, or "none"; not "${opts.retainFor}".`,
          [{ field: '--retain-for', message: 'is not a span', code: 'invalid' }],
        );
      const unit = m && ({ m: 'minutes', h: 'hours', d: 'days' } as const)[m[2][0].toLowerCase() as 'm' | 'h' | 'd'];
      const saved = await withService({ dataDir: opts.dataDir }, (s) =>
        s.apps.storage.put({ retain_for: m && unit ? { [unit]: Number(m[1]) } : null }),
      );
      io.stdout(`${JSON.stringify(saved, null, 2)}\n`);
      setExit(EXIT_OK);
    });
  storageApp
    .command('show')
    .description('Print the storage settings.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: { dataDir?: string }) => {
      io.stdout(`${JSON.stringify(await withService(opts, (s) => s.apps.storage.get()), null, 2)}\n`);
      setExit(EXIT_OK);
    });

  const secrets = program
    .command('secrets')
    .description(
      'The keys Magic Link URLs are derived with, kept outside the database (DATA_DIR/secrets/link-token-keys, or LINK_TOKEN_KEYS).',
    );
  secrets
    .command('rotate')
    .description(
      'Add a new current key: new links and resends use it; every live link keeps its URL (each link remembers its key). With LINK_TOKEN_KEYS set, prints the new entry to append there on every process instead.',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText('after', '\nExample:\n  paperlink secrets rotate --data-dir /var/lib/paperlink')
    .action(async (opts: { dataDir?: string }) => {
      await withService(opts, async (s) => {
        const keyring = linkKeyring(s.config);
        if (s.config.linkTokenKeys === undefined) {
          const key = keyring.rotate();
          io.stdout(
            `Added the Magic Link key ${key.id} to ${keyring.where}; new links use it, live links keep their URLs.\n`,
          );
          return;
        }
        const key = LinkKeyring.next(keyring.all());
        io.stdout(`${key.id}:${key.key.toString('base64')}\n`);
        io.stderr(
          'Append that entry (after a comma) to LINK_TOKEN_KEYS on every process, then restart them: the last key is the current one. Keep the old entries: live links need them.\n',
        );
      });
      setExit(EXIT_OK);
    });

  const admin = program
    .command('admin')
    .description("The web app's operator sign-in (the web app is at PUBLIC_URL/app; an API key also signs in).");
  admin
    .command('set-password')
    .description(
      `Set or change the operator password of the web app (at least ${MIN_PASSWORD} characters). Asks for it on a terminal; otherwise reads the first line of standard input. Signs out every operator session. Only a scrypt hash is stored.`,
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText(
      'after',
      '\nExamples:\n  paperlink admin set-password\n  printf %s "$PAPERLINK_ADMIN_PASSWORD" | paperlink admin set-password',
    )
    .action(async (opts: { dataDir?: string }) => {
      let password: string;
      if (io.askSecret) {
        password = await io.askSecret('New operator password: ');
        if ((await io.askSecret('Repeat it: ')) !== password)
          throw new ValidationError('The two passwords differ; nothing was changed.', [
            { field: 'password', message: 'does not match its repetition', code: 'mismatch' },
          ]);
      } else if (io.stdin) {
        password = (await io.stdin()).split(/\r?\n/)[0];
      } else {
        throw new ValidationError('Give the password on standard input.', [
          { field: 'password', message: 'is required', code: 'required' },
        ]);
      }
      await withService(opts, (s) => s.operators.setPassword(password));
      io.stderr('Operator password set. Sign in at PUBLIC_URL/app with it (or with an API key).\n');
      setExit(EXIT_OK);
    });

  program
    .command('generate')
    .description(
      'Render one PDF per row of a CSV or JSON Lines file, into a folder, with a progress bar and a summary of failures.',
    )
    .requiredOption('-t, --template <id-or-file>', 'a stored template id (tmpl_…) or a template file')
    .requiredOption('--data <file>', 'rows.csv (header = variable names) or rows.jsonl (one JSON object per line)')
    .requiredOption('-o, --out <dir>', 'folder for row-0001.pdf, row-0002.pdf, …')
    .option(
      '-c, --concurrency <n>',
      `documents rendered at once, each on a render thread (default: the number of cores, here ${os.availableParallelism()})`,
      (v) => Number(v),
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addOption(standardOption())
    .addHelpText(
      'after',
      '\nExample:\n  paperlink generate --template tmpl_example_letter --data people.csv --out letters\n\nExit codes: 0 every row written, 2 some rows failed (the others are written), 1 other failures.',
    )
    .action(
      async (opts: {
        template: string;
        data: string;
        out: string;
        concurrency?: number;
        dataDir?: string;
        pdfStandard?: PdfStandard;
      }) => {
        opts.concurrency ??= os.availableParallelism();
        if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1 || opts.concurrency > 64) {
          throw new ValidationError('--concurrency must be a whole number from 1 to 64.', [
            { field: '--concurrency', message: 'must be 1 to 64' },
          ]);
        }
        const rows = await readRows(opts.data);
        const template = fs.existsSync(opts.template)
          ? await loadTemplateFile(opts.template)
          : await withService(opts, (s) => s.templates.load(opts.template));
        checkAvailable(template.kind, opts.pdfStandard);
        const started = Date.now();
        const bar = new SingleBar(
          {
            format: 'Rendering [{bar}] {value}/{total} rows | {eta_formatted} left',
            stream: process.stderr,
            noTTYOutput: !process.stderr.isTTY,
            notTTYSchedule: 2000,
          },
          Presets.shades_classic,
        );
        bar.start(rows.length, 0);
        const renderer = createRenderer({ threads: Math.min(opts.concurrency, rows.length || 1) });
        let result;
        try {
          result = await renderBatch(template, rows, opts.out, {
            concurrency: opts.concurrency,
            onRow: () => bar.increment(),
            renderer,
            standard: opts.pdfStandard,
          });
        } finally {
          bar.stop();
          await renderer.close();
        }
        io.stdout(
          `${result.written.length} of ${rows.length} rows rendered into ${opts.out} in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`,
        );
        if (result.failures.length) {
          io.stdout(`${result.failures.length} failed:\n`);
          for (const f of result.failures) io.stdout(`  row ${f.row}: ${f.reason}\n`);
        }
        setExit(result.failures.length ? EXIT_INPUT : EXIT_OK);
      },
    );
}

/** Runs the CLI with the given arguments (without `node` and the script) and returns the exit code. */
export async function main(args: string[], io: Io = processIo): Promise<number> {
  let code = EXIT_OK;
  const program = buildProgram(io, (c) => (code = c));
  try {
    await program.parseAsync(args, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
        return EXIT_OK;
      // commander already printed what was wrong with the command line
      return EXIT_INPUT;
    }
    return report(err, io);
  } finally {
    // a command that printed an HTML or Word template started a browser or LibreOffice, which would keep the process alive
    await printer.close();
    await converter.close();
  }
}

if (require.main === module) {
  // `paperlink … | head` closes the pipe early: that is the reader's choice, not an error
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  // a worker of `serve --processes N` that failed (to bind its port, say) ends at once: its channel to
  // the primary would keep it alive, and the primary waits for it to end to stop the cluster
  const end = (code: number) => {
    process.exitCode = code;
    if (code !== EXIT_OK && cluster.isWorker) process.exit(code);
  };
  main(process.argv.slice(2)).then(end, (err) => end(report(err, processIo)));
}
