/**
 * `paperlink doctor` and the greeting of `serve`: each says a template format works only once it
 * has rendered a document with it, and says what to fix when something does not work.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import Database from '../../src/db/sqlite-module';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import type { Check } from '../../src/doctor';
import { chromiumPath } from '../../src/templates/chromium';
import { converter, officePaths } from '../../src/templates/docx';
import { printer } from '../../src/templates/html';
import { cli } from '../support/cli';
import { withEnv } from '../support/env';
import { eventually } from '../support/eventually';
import { serveProcess } from '../support/serve';
import { startSmtp } from '../support/smtp';
import { tempDir } from '../support/tmp';

const dir = tempDir('paperlink-doctor-');
/** A browser launcher that fails as Debian's did in the sandbox. */
const broken = path.join(dir, 'bin/start-browser');
fs.mkdirSync(path.dirname(broken), { recursive: true });
fs.writeFileSync(broken, '#!/bin/sh\necho "cannot open /etc/chromium.d/*: No such file" >&2\nexit 1\n', {
  mode: 0o755,
});

afterAll(async () => {
  await printer.close();
  await converter.close();
});

async function doctor(dataDir: string): Promise<{ code: number; checks: Map<string, Check> }> {
  const r = await cli(['doctor', '--json', '--data-dir', dataDir]);
  const checks = JSON.parse(r.stdout) as Check[];
  return { code: r.code, checks: new Map(checks.map((c) => [c.name, c])) };
}

/**
 * doctor where neither Chromium nor LibreOffice is (their formats then only warn, at once): for the
 * tests of what the service stands on, which need not start a browser and an office each time.
 */
const withoutPrinters = <T>(fn: () => Promise<T>) =>
  withEnv('CHROMIUM_PATH', '/nonexistent/chromium', () => withEnv('LIBREOFFICE_PATH', '/nonexistent/soffice', fn));

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('paperlink doctor', () => {
  it('renders a document of each format this machine has, checks what the service stands on, and exits 0', async () => {
    // a data dir a server has used (keys create makes and migrates its database, as serve does)
    expect((await cli(['keys', 'create', '--name', 'doctor', '--data-dir', path.join(dir, 'fine')])).code).toBe(0);
    const { code, checks } = await doctor(path.join(dir, 'fine'));
    expect([...checks.keys()]).toEqual([
      'database',
      'storage',
      'link keys',
      'mail',
      'temporal',
      'sandbox',
      'XML',
      'PDF forms',
      'HTML',
      'Word',
    ]);
    for (const name of ['database', 'storage', 'link keys', 'mail', 'XML', 'PDF forms'])
      expect(checks.get(name)).toMatchObject({ outcome: 'ok' });
    expect(checks.get('temporal')).toMatchObject({ outcome: 'skip' });
    // a format whose program is here has rendered a document; one whose program is missing is a warning
    expect(checks.get('HTML')!.outcome).toBe((await chromiumPath()) ? 'ok' : 'warn');
    expect(checks.get('Word')!.outcome).toBe(officePaths() ? 'ok' : 'warn');
    expect(checks.get('HTML')!.says).toMatch(/rendered|no Chromium/);
    expect(code).toBe(0);
    // the probe it wrote where documents go is gone again
    expect(
      fs
        .readdirSync(path.join(dir, 'fine/documents'))
        .flatMap((d) => fs.readdirSync(path.join(dir, 'fine/documents', d))),
    ).toEqual([]);
  });

  it('makes no database where there is none, and migrates none that is behind: a warning each', () =>
    withoutPrinters(async () => {
      const fresh = path.join(dir, 'fresh');
      const first = await doctor(fresh);
      expect(first.checks.get('database')).toMatchObject({ outcome: 'warn' });
      expect(first.checks.get('storage')).toMatchObject({ outcome: 'skip' });
      expect(fs.existsSync(path.join(fresh, 'paperlink.db'))).toBe(false);
      expect(first.code).toBe(0);

      // a database one migration behind this build, as after an upgrade before serve has started
      const behind = path.join(dir, 'behind');
      expect((await cli(['keys', 'create', '--name', 'doctor', '--data-dir', behind])).code).toBe(0);
      const db = new Database(path.join(behind, 'paperlink.db'));
      const last = db.prepare('SELECT name FROM paperlink_migrations ORDER BY name DESC LIMIT 1').get() as {
        name: string;
      };
      db.prepare('DELETE FROM paperlink_migrations WHERE name = ?').run(last.name);
      db.close();
      const { checks } = await doctor(behind);
      expect(checks.get('database')).toMatchObject({ outcome: 'warn' });
      expect(checks.get('database')!.says).toMatch(/1 migration behind/);
      const after = new Database(path.join(behind, 'paperlink.db'));
      expect(after.prepare('SELECT count(*) AS n FROM paperlink_migrations WHERE name = ?').get(last.name)).toEqual({
        n: 0,
      });
      after.close();
    }));

  it('fails the HTML check with what the browser said and what to set when Chromium does not start, and exits 1', async () => {
    await withEnv('CHROMIUM_PATH', broken, async () => {
      await printer.close();
      const { code, checks } = await doctor(path.join(dir, 'broken'));
      const html = checks.get('HTML')!;
      expect(html.outcome).toBe('fail');
      expect(html.says).toContain('cannot open /etc/chromium.d');
      expect(html.fix).toContain('CHROMIUM_PATH');
      expect(checks.get('XML')).toMatchObject({ outcome: 'ok' });
      expect(code).toBe(1);
    });
    await printer.close();
  });

  it('fails the database check when PostgreSQL does not answer, skipping what needs it', () =>
    withoutPrinters(async () => {
      const port = await closedPort();
      await withEnv('DATABASE_URL', `postgres://paperlink@127.0.0.1:${port}/paperlink`, async () => {
        const { code, checks } = await doctor(path.join(dir, 'nodb'));
        expect(checks.get('database')).toMatchObject({ outcome: 'fail' });
        expect(checks.get('database')!.fix).toContain('DATABASE_URL');
        expect(checks.get('storage')).toMatchObject({ outcome: 'skip' });
        expect(code).toBe(1);
      });
    }));

  it('signs in to the SMTP server of SMTP_URL, sending nothing, and fails when none answers', () =>
    withoutPrinters(async () => {
      const smtp = await startSmtp();
      try {
        await withEnv('SMTP_URL', smtp.url, async () => {
          const { checks } = await doctor(path.join(dir, 'mail'));
          expect(checks.get('mail')).toMatchObject({ outcome: 'ok' });
          expect(smtp.messages).toHaveLength(0);
        });
      } finally {
        await smtp.close();
      }
      await withEnv('SMTP_URL', `smtp://127.0.0.1:${await closedPort()}`, async () => {
        const { code, checks } = await doctor(path.join(dir, 'nomail'));
        expect(checks.get('mail')).toMatchObject({ outcome: 'fail' });
        expect(checks.get('mail')!.fix).toContain('SMTP_URL');
        expect(code).toBe(1);
      });
    }));

  it('has --help that says what each outcome means', async () => {
    const r = await cli(['doctor', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('FAIL');
    expect(r.stdout).toContain('Exit codes');
  });
});

describe("serve's greeting", () => {
  /** Resolves once `child` has exited (its browser and LibreOffice with it). */
  const stopped = (child: ChildProcess) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise((r) => child.once('exit', r));

  it('says which formats work only after rendering a document with each, and points at doctor for one that does not', async () => {
    const server = await serveProcess(path.join(dir, 'greet-broken'), { STARTUP_CHECK: 'true', CHROMIUM_PATH: broken });
    try {
      await eventually(async () => /does NOT work: .*\n/.test(server.output()), 'the format that failed', 60);
      const tried = /templates tried: ([^"\n]*)/.exec(server.output())![1];
      expect(tried).toContain('XML');
      expect(tried).not.toContain('HTML');
      expect(server.output()).toMatch(/HTML does NOT work: .*cannot open \/etc\/chromium\.d.*npx paperlink doctor/);
    } finally {
      server.child.kill('SIGTERM');
      await stopped(server.child);
    }
    // the greeting may take the minute its eventually() allows (a first render of each format, on a busy machine)
  }, 120_000);

  it('says every format it has works once each has rendered', async () => {
    const server = await serveProcess(path.join(dir, 'greet'), { STARTUP_CHECK: 'true' });
    try {
      await eventually(async () => /templates tried: .*\n/.test(server.output()), 'the formats tried', 60);
      const tried = /templates tried: ([^"\n]*)/.exec(server.output())![1];
      if (await chromiumPath()) expect(tried).toContain('HTML');
      if (officePaths()) expect(tried).toContain('Word');
      expect(server.output()).not.toContain('does NOT work');
    } finally {
      server.child.kill('SIGTERM');
      await stopped(server.child);
    }
    // the greeting may take the minute its eventually() allows (a first render of each format, on a busy machine)
  }, 120_000);
});
