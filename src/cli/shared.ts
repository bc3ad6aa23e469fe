/**
 * What every command of the CLI shares: the input and output it is given (`Io`), the exit codes,
 * how an error is printed (`report`), the options several commands take (--data-dir,
 * --pdf-standard), reading --data, the table listings print, opening the service's database
 * (`withService`), and how a long-lived command says it failed to start (`logged`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Option } from 'commander';
import { loadConfig } from '../config';
import { sqliteFile } from '../db';
import { PaperlinkError, ValidationError } from '../errors';
import { createLog, logFormatOf, type Log } from '../log';
import { createService, type Service } from '../service';
import { PDF_STANDARDS } from '../templates/standards';
import { normalizeValues } from '../templates/values';

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

/** Takes a command's exit code; the last one set is what the process ends with. */
export type SetExit = (code: number) => void;

/** The process's own standard output, error and input: what `main` is given when no test gives its own. */
export const processIo: Io = {
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

/** The JSON object of merge values that --data names ("-": standard input); none without it. */
export async function readData(file: string | undefined, io: Io): Promise<Record<string, string>> {
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

/** --pdf-standard, as `pdf_standard` of a generate request. */
export function standardOption(): Option {
  return new Option(
    '--pdf-standard <standard>',
    'make the PDF meet a standard: PDF/A (archiving) and/or PDF/UA (accessibility); XML templates meet all, HTML and Word the PDF/A levels',
  ).choices(PDF_STANDARDS);
}

export const DATA_DIR_HELP = 'folder of the SQLite database and stored documents (env DATA_DIR, default ./data)';

/** Rows as columns padded to their widest cell, the first row the heading. */
export function table(rows: string[][]): string {
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
export function warningsThrough(log: Log, io: Io): void {
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
export async function logged(io: Io, setExit: SetExit, run: () => Promise<void>): Promise<void> {
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

/**
 * Opens the service's database (as `serve` would, from the environment and --data-dir), runs
 * `fn`, closes it. Says on standard error which database that is, and when it was made just now:
 * a command run in the wrong folder would otherwise work on a new, empty database unnoticed.
 */
export async function withService<T>(io: Io, opts: { dataDir?: string }, fn: (s: Service) => Promise<T>): Promise<T> {
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
