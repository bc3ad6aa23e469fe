/**
 * `paperlink doctor`: whether this machine, with this configuration, can do what the service
 * promises. Each check does the real thing, as the service would, and says what to do when it
 * fails: a small document of each template format rendered on a render thread (in the sandbox,
 * under the render budget), the database reached and its schema current, a row and a file written
 * where the service writes (and deleted again), the link keys read and matched with the database,
 * the mail server signed in to, Temporal's task queue polled. It changes nothing the service
 * relies on: it runs no migration (a database behind this build is a warning: `serve` migrates it),
 * and makes no database where there is none. The greeting of `serve` runs the format checks too
 * (checkFormats, on the service's render threads), so it says a format works only once it has
 * rendered one.
 */
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import type { Config } from './config';
import fs from 'node:fs';
import { openDatabase, sqliteFile, type Database } from './db';
import { isDiskFailure } from './outage';
import { linkKeyring } from './links/keyring';
import { checkKeys } from './links/tokens';
import { createMailer } from './mail';
import { openStorage, probeWrites } from './storage';
import { folderAssets } from './templates';
import { createRenderer, type Renderer } from './templates/pool';
import { exampleFile, exampleSample, type EXAMPLE_IDS } from './templates/store';
import { chromiumPath } from './templates/chromium';
import { officePaths } from './templates/docx';
import { sandboxStatus } from './templates/sandbox';
import { PaperlinkError } from './errors';

export type Outcome = 'ok' | 'warn' | 'fail' | 'skip';

export interface Check {
  /** What was checked: `database`, `storage`, `link keys`, `mail`, `temporal`, `sandbox`, or a template format. */
  name: string;
  outcome: Outcome;
  /** What was found. */
  says: string;
  /** What to do about it, when it is not ok. */
  fix?: string;
}

/**
 * The words of a failure that say why, for an operator: each error of the chain by its first line
 * (an answer meant for clients that carries its cause is left for the cause), then what a program
 * printed as errors (playwright puts the browser's output after "Browser logs:", `[err] …`).
 */
export function why(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof PaperlinkError && e.cause instanceof Error) continue;

    const text = e.message.replace(/\u001b\[[0-9;]*m/g, '');
    parts.push(text.split('\n')[0]);
    for (const m of text.matchAll(/\[err\]\s*(.+)$/gm)) parts.push(m[1].trim());
  }
  return [...new Set(parts.filter(Boolean))].slice(0, 4).join(' / ').slice(0, 600);
}

/** A fillable PDF form of one field, made here: no example of one ships with the package. */
async function smallForm(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([300, 100]);
  doc.getForm().createTextField('name').addToPage(page, { x: 20, y: 40, width: 200, height: 24 });
  return doc.save();
}

/** Loads and renders a template on `renderer`, timed; what it says on success. */
async function rendered(
  renderer: Renderer,
  source: Uint8Array,
  values: Record<string, string>,
  what: string,
  folder?: string,
): Promise<string> {
  const started = process.hrtime.bigint();
  const template = await renderer.load(source, { assets: folder ? folderAssets(folder) : undefined });
  const pdf = await renderer.render(template, values);
  const ms = Number((process.hrtime.bigint() - started) / 1_000_000n);
  return `rendered ${what} (${Math.round(pdf.length / 1024)} KB) in ${ms} ms`;
}

/** Renders one of the bundled examples with its sample values. */
const renderExample = (renderer: Renderer, name: keyof typeof EXAMPLE_IDS) =>
  rendered(
    renderer,
    new Uint8Array(fs.readFileSync(exampleFile(name))),
    exampleSample(name),
    'the example letter',
    path.dirname(exampleFile(name)),
  );

/**
 * A small document of each template format, rendered as a generate renders it: the bundled
 * examples (the XML letter, the HTML letter, the Word letter) and a one-field PDF form. A format
 * whose program is missing is a warning (its templates are refused with `422 format_unavailable`);
 * one whose program is there and does not print is a failure.
 */
export async function checkFormats(renderer: Renderer): Promise<Check[]> {
  const format = async (name: string, run: () => Promise<string>, fix: string): Promise<Check> => {
    try {
      return { name, outcome: 'ok', says: await run() };
    } catch (err) {
      return { name, outcome: 'fail', says: why(err), fix };
    }
  };
  const checks = [
    await format('XML', () => renderExample(renderer, 'letter'), 'report it: XML templates need nothing but Paperlink'),
    await format(
      'PDF forms',
      async () => rendered(renderer, await smallForm(), { name: 'Paperlink' }, 'a one-field form'),
      'report it: PDF forms need nothing but Paperlink',
    ),
  ];
  const chromium = await chromiumPath();
  checks.push(
    chromium
      ? await format(
          'HTML',
          async () => `${await renderExample(renderer, 'letter_html')} with Chromium at ${chromium}`,
          `Chromium at ${chromium} does not print here. Set CHROMIUM_PATH to a browser program that runs (the program itself, not a launcher script), or install Chromium (Debian: apt-get install chromium-headless-shell). If it prints with TEMPLATE_SANDBOX=off, the sandbox is what stops it: check that bubblewrap works (bwrap --unshare-all --ro-bind /usr /usr -- /usr/bin/true).`,
        )
      : {
          name: 'HTML',
          outcome: 'warn',
          says: 'no Chromium: HTML templates are refused (422 format_unavailable)',
          fix: 'install Chromium (Debian: apt-get install chromium-headless-shell; or npm install @sparticuz/chromium), or set CHROMIUM_PATH',
        },
  );
  const office = officePaths();
  checks.push(
    office
      ? await format(
          'Word',
          async () => `${await renderExample(renderer, 'letter_docx')} with LibreOffice at ${office.soffice}`,
          `LibreOffice at ${office.soffice} does not convert here. Check that it runs (${office.soffice} --headless --version) with ${office.python} and its uno module, or set LIBREOFFICE_PATH and LIBREOFFICE_PYTHON. If it converts with TEMPLATE_SANDBOX=off, the sandbox is what stops it.`,
        )
      : {
          name: 'Word',
          outcome: 'warn',
          says: 'no LibreOffice: Word templates are refused (422 format_unavailable)',
          fix: 'install it (Debian: apt-get install libreoffice-writer-nogui python3-uno), or set LIBREOFFICE_PATH and LIBREOFFICE_PYTHON',
        },
  );
  return checks;
}

/** The sandbox around Chromium and LibreOffice: a warning where they print without one. */
function checkSandbox(): Check {
  try {
    const status = sandboxStatus();
    return {
      name: 'sandbox',
      outcome: /^sandbox: NONE/.test(status) ? 'warn' : 'ok',
      says: status.replace(/^sandbox: /, ''),
    };
  } catch (err) {
    return { name: 'sandbox', outcome: 'fail', says: why(err) };
  }
}

/** A failure of the machinery as a check: what to do when the disk is full, or else `fix`. */
function failed(name: string, err: unknown, fix: string): Check {
  const full = isDiskFailure(err);
  return {
    name,
    outcome: 'fail',
    says: why(err),
    fix: full ? 'the disk is full or read-only: free space there, or mount it read-write' : fix,
  };
}

/**
 * The database: reached, and its schema what this build needs. Nothing is migrated or made: a
 * database behind this build, or none yet, is a warning (`serve` migrates or makes it at its start),
 * and the checks that need the schema are skipped.
 */
async function checkDatabase(config: Config): Promise<{ check: Check; database?: Database }> {
  if (!config.databaseUrl && !fs.existsSync(sqliteFile(config.dataDir)))
    return {
      check: {
        name: 'database',
        outcome: 'warn',
        says: `no database yet at ${sqliteFile(config.dataDir)}: \`paperlink serve\` makes it at its first start`,
        fix: 'start `paperlink serve` once (or give the DATA_DIR the server uses), then check again',
      },
    };
  let database: Database;
  try {
    database = await openDatabase({
      databaseUrl: config.databaseUrl,
      sqlitePath: sqliteFile(config.dataDir),
      migrate: false,
    });
  } catch (err) {
    return {
      check: failed(
        'database',
        err,
        config.databaseUrl
          ? 'check that PostgreSQL runs and DATABASE_URL (host, port, user, password, database) is right'
          : `check that ${config.dataDir} (DATA_DIR) can be read and written`,
      ),
    };
  }
  const where = `${database.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} at ${database.location}`;
  if (database.pending) {
    await database.close();
    return {
      check: {
        name: 'database',
        outcome: 'warn',
        says: `${where} is ${database.pending} migration${database.pending === 1 ? '' : 's'} behind this build; nothing was changed`,
        fix: '`paperlink serve` of this build migrates it at its start; stop the older servers on it first',
      },
    };
  }
  return {
    check: { name: 'database', outcome: 'ok', says: `${where}: answers, its schema is this build's` },
    database,
  };
}

/** Writes where the service writes: a row of the database, and a file where documents go, read back and deleted. */
async function checkStorage(config: Config, database: Database): Promise<Check> {
  const storage = openStorage(config, database.db);
  try {
    await storage.check?.();
    await probeWrites(database.db, storage);
    return { name: 'storage', outcome: 'ok', says: `${storage.location} and the database take writes` };
  } catch (err) {
    return failed(
      'storage',
      err,
      config.storage === 's3'
        ? 'check S3_BUCKET, S3_ENDPOINT, S3_REGION and the AWS credentials'
        : `check that ${storage.location} and the database can be written`,
    );
  } finally {
    storage.close?.();
  }
}

/** The keys Magic Link URLs are derived with: read, and the ones this database knows. */
async function checkLinkKeys(config: Config, database: Database): Promise<Check> {
  const keyring = linkKeyring(config);
  try {
    await checkKeys(database.db, keyring);
    const all = keyring.all();
    return {
      name: 'link keys',
      outcome: 'ok',
      says: `${all.length} key${all.length === 1 ? '' : 's'} from ${keyring.where} (${keyring.current().id} current), as this database knows them`,
    };
  } catch (err) {
    return failed('link keys', err, 'see docs/magic-links.md, "The keys behind the URLs"');
  }
}

/** Mail: the SMTP server signed in to (nothing sent), or the outbox folder writable. */
async function checkMail(config: Config): Promise<Check> {
  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    outbox: path.join(config.dataDir, 'outbox'),
  });
  try {
    await mailer.check();
    return config.smtpUrl
      ? {
          name: 'mail',
          outcome: 'ok',
          says: `the SMTP server at ${mailer.destination} takes a sign-in (nothing was sent)`,
        }
      : {
          name: 'mail',
          outcome: 'ok',
          says: `e-mails are written to ${mailer.destination}, not sent: set SMTP_URL to send them`,
        };
  } catch (err) {
    return failed('mail', err, 'check SMTP_URL: the host, the port, TLS (smtps:// for 465) and the user and password');
  } finally {
    mailer.close();
  }
}

/** Temporal, with ENGINE=temporal: the namespace reached, and a worker polling the task queue. */
async function checkTemporal(config: Config): Promise<Check> {
  if (config.engine !== 'temporal')
    return { name: 'temporal', outcome: 'skip', says: 'ENGINE=embedded: flows run in the serve processes' };
  const t = config.temporal;
  try {
    const { connectClient } = await import('../workflows/client');
    const client = await connectClient(t);
    try {
      await client.workflowService.describeNamespace({ namespace: t.namespace });
      const queue = await client.workflowService.describeTaskQueue({
        namespace: t.namespace,
        taskQueue: { name: t.taskQueue },
        taskQueueType: 1, // workflow tasks
      });
      const pollers = queue.pollers?.length ?? 0;
      return pollers
        ? {
            name: 'temporal',
            outcome: 'ok',
            says: `${t.address}, namespace ${t.namespace}: ${pollers} worker${pollers === 1 ? '' : 's'} polling task queue ${t.taskQueue}`,
          }
        : {
            name: 'temporal',
            outcome: 'warn',
            says: `${t.address}, namespace ${t.namespace}: no worker polls task queue ${t.taskQueue}, so generates wait`,
            fix: 'start `paperlink worker` with the same TEMPORAL_* settings',
          };
    } finally {
      await client.connection.close();
    }
  } catch (err) {
    return failed(
      'temporal',
      err,
      err instanceof PaperlinkError
        ? 'see the message'
        : 'check TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS or API key settings',
    );
  }
}

/** Every check, in order: what the service stands on, then each template format. */
export async function runDoctor(config: Config, progress: (check: Check) => void = () => undefined): Promise<Check[]> {
  const checks: Check[] = [];
  const add = (check: Check) => {
    checks.push(check);
    progress(check);
  };
  const { check, database } = await checkDatabase(config);
  add(check);
  if (database) {
    try {
      add(await checkStorage(config, database));
      add(await checkLinkKeys(config, database));
    } finally {
      await database.close();
    }
  } else {
    add({ name: 'storage', outcome: 'skip', says: 'needs the database, with its schema' });
    add({ name: 'link keys', outcome: 'skip', says: 'needs the database, with its schema' });
  }
  add(await checkMail(config));
  add(await checkTemporal(config));
  add(checkSandbox());
  // one render thread, with the service's budget, as a generate renders
  const renderer = createRenderer({ threads: 1, timeoutMs: config.renderTimeoutMs, memoryMb: config.renderMemoryMb });
  try {
    for (const format of await checkFormats(renderer)) add(format);
  } finally {
    await renderer.close();
  }
  return checks;
}

/** A check as a line (and its fix on the next), as `paperlink doctor` prints it. */
export function line(check: Check): string {
  const head = `${check.outcome === 'fail' ? 'FAIL' : check.outcome.padEnd(4)}  ${check.name.padEnd(10)}  ${check.says}\n`;
  return check.fix ? `${head}${' '.repeat(18)}fix: ${check.fix}\n` : head;
}
