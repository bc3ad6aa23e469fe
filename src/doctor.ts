/**
 * `paperlink doctor`: whether this machine, with this configuration, can do what the service
 * promises. Each check does the real thing, as the service would, and says what to do when it
 * fails: a small document of each template format rendered (in the sandbox, under the render
 * budget), the database migrated and written, the document storage written, read and deleted, the
 * link keys read and matched with the database, the mail server signed in to, Temporal reached.
 * The greeting of `serve` runs the format checks too (checkFormats), so it says a format works
 * only once it has rendered one.
 */
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import type { Config } from './config';
import { openDatabase, probeWrite, type Database } from './db';
import { isDiskFailure } from './outage';
import { linkKeyring } from './links/keyring';
import { checkKeys } from './links/tokens';
import { createMailer } from './mail';
import { packageRoot } from './paths';
import { openStorage } from './storage';
import { loadTemplate, loadTemplateFile, renderTemplate, type TemplateSummary } from './templates';
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

const example = (name: string) => path.join(packageRoot(), 'examples', name);

/** A fillable PDF form of one field, made here: no example of one ships with the package. */
async function smallForm(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([300, 100]);
  doc.getForm().createTextField('name').addToPage(page, { x: 20, y: 40, width: 200, height: 24 });
  return doc.save();
}

/** Renders `template` with `values`, timed; what it says on success. */
async function rendered(template: TemplateSummary, values: Record<string, string>, what: string): Promise<string> {
  const started = process.hrtime.bigint();
  const pdf = await renderTemplate(template, values);
  const ms = Number((process.hrtime.bigint() - started) / 1_000_000n);
  return `rendered ${what} (${Math.round(pdf.length / 1024)} KB) in ${ms} ms`;
}

const sample = async (name: string) =>
  JSON.parse(
    await import('node:fs/promises').then((fs) => fs.readFile(path.join(example(name), 'sample.json'), 'utf8')),
  ) as Record<string, string>;

/**
 * A small document of each template format, rendered as a generate renders it: the bundled
 * examples (the XML letter, the HTML letter, the Word letter) and a one-field PDF form. A format
 * whose program is missing is a warning (its templates are refused with `422 format_unavailable`);
 * one whose program is there and does not print is a failure.
 */
export async function checkFormats(): Promise<Check[]> {
  const format = async (name: string, run: () => Promise<string>, fix: string): Promise<Check> => {
    try {
      return { name, outcome: 'ok', says: await run() };
    } catch (err) {
      return { name, outcome: 'fail', says: why(err), fix };
    }
  };
  const checks = [
    await format(
      'XML',
      async () => rendered(await loadTemplateFile(example('letter')), await sample('letter'), 'the example letter'),
      'report it: XML templates need nothing but Paperlink',
    ),
    await format(
      'PDF forms',
      async () => rendered(await loadTemplate(await smallForm()), { name: 'Paperlink' }, 'a one-field form'),
      'report it: PDF forms need nothing but Paperlink',
    ),
  ];
  const chromium = await chromiumPath();
  checks.push(
    chromium
      ? await format(
          'HTML',
          async () =>
            `${await rendered(await loadTemplateFile(example('letter-html')), await sample('letter-html'), 'the example letter')} with Chromium at ${chromium}`,
          `Chromium at ${chromium} does not print here. Set CHROMIUM_PATH to a browser program that runs (the program itself, not a launcher script), or install Chromium (Debian: apt-get install chromium). If it prints with TEMPLATE_SANDBOX=off, the sandbox is what stops it: check that bubblewrap works (bwrap --unshare-all --ro-bind /usr /usr -- /usr/bin/true).`,
        )
      : {
          name: 'HTML',
          outcome: 'warn',
          says: 'no Chromium: HTML templates are refused (422 format_unavailable)',
          fix: 'install Chromium (Debian: apt-get install chromium; or npm install @sparticuz/chromium), or set CHROMIUM_PATH',
        },
  );
  const office = officePaths();
  checks.push(
    office
      ? await format(
          'Word',
          async () =>
            `${await rendered(await loadTemplateFile(example('letter-docx')), await sample('letter-docx'), 'the example letter')} with LibreOffice at ${office.soffice}`,
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

/** The database: opened and migrated as `serve` does, and written to. */
async function checkDatabase(config: Config): Promise<{ check: Check; database?: Database }> {
  let database: Database;
  try {
    database = await openDatabase({
      databaseUrl: config.databaseUrl,
      sqlitePath: path.join(config.dataDir, 'paperlink.db'),
    });
  } catch (err) {
    return {
      check: failed(
        'database',
        err,
        config.databaseUrl
          ? 'check that PostgreSQL runs and DATABASE_URL (host, port, user, password, database) is right'
          : `check that ${config.dataDir} (DATA_DIR) can be written`,
      ),
    };
  }
  try {
    await probeWrite(database.db);
    return {
      check: {
        name: 'database',
        outcome: 'ok',
        says: `${database.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} at ${database.location}: migrated, takes writes`,
      },
      database,
    };
  } catch (err) {
    return {
      check: failed('database', err, 'check that the database takes writes (not a read-only replica)'),
      database,
    };
  }
}

/** The document storage: a small file written, read back and deleted where documents go. */
async function checkStorage(config: Config, database: Database): Promise<Check> {
  const storage = openStorage(config, database.db);
  const key = `paperlink-doctor-${process.pid}`;
  try {
    await storage.check?.();
    const bytes = new Uint8Array(64 * 1024).fill(7);
    await storage.put(key, bytes);
    const back = await storage.get(key);
    if (!back || Buffer.compare(Buffer.from(back), Buffer.from(bytes)) !== 0)
      throw new Error('what was read back is not what was written');
    await storage.delete(key);
    return { name: 'storage', outcome: 'ok', says: `${storage.location}: writes, reads and deletes` };
  } catch (err) {
    return failed(
      'storage',
      err,
      config.storage === 's3'
        ? 'check S3_BUCKET, S3_ENDPOINT, S3_REGION and the AWS credentials'
        : `check that ${storage.location} can be written`,
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
    add({ name: 'storage', outcome: 'skip', says: 'needs the database' });
    add({ name: 'link keys', outcome: 'skip', says: 'needs the database' });
  }
  add(await checkMail(config));
  add(await checkTemporal(config));
  add(checkSandbox());
  for (const format of await checkFormats()) add(format);
  return checks;
}

/** A check as a line (and its fix on the next), as `paperlink doctor` prints it. */
export function line(check: Check): string {
  const head = `${check.outcome === 'fail' ? 'FAIL' : check.outcome.padEnd(4)}  ${check.name.padEnd(10)}  ${check.says}\n`;
  return check.fix ? `${head}${' '.repeat(18)}fix: ${check.fix}\n` : head;
}
