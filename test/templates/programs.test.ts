/**
 * The programs that print templates, as users' machines have them: Chromium whoever packaged it
 * (Debian's `/usr/bin/chromium` is a shell script that reads /etc/chromium.d/, which the sandbox
 * does not give it), and what a client is told when Chromium or LibreOffice will not start —
 * `503 renderer_unavailable` with Retry-After, never a 500, and nothing stored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromiumPath, programBehind } from '../../src/templates/chromium';
import { converter } from '../../src/templates/docx';
import { printer } from '../../src/templates/html';
import { loadTemplate, renderTemplate } from '../../src/templates';
import { makeDocx } from '../support/docx';
import { withEnv } from '../support/env';
import { readPdf } from '../support/pdf';
import { testService, type TestService } from '../support/service';
import { tempDir } from '../support/tmp';

/** Whether a file starts as an ELF program does. */
const isElf = (file: string) =>
  fs
    .readFileSync(file)
    .subarray(0, 4)
    .equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
/** A program of the system's (an ELF executable) to stand in for a browser: nothing is run. */
const SOME_PROGRAM = fs.realpathSync('/bin/true');

function script(file: string, body: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe('programBehind()', () => {
  const dir = tempDir('paperlink-programs-');

  it('finds the browser program beside a launcher script, where Google puts it', () => {
    const launcher = script(path.join(dir, 'google/google-chrome'), 'exec "$(dirname "$0")/chrome" "$@"');
    fs.symlinkSync(SOME_PROGRAM, path.join(dir, 'google/chrome'));
    expect(programBehind(launcher)).toBe(path.join(fs.realpathSync(dir), 'google/chrome'));
  });

  it('takes a program, or a link to one, as given (a snap starts the browser by its link name)', () => {
    fs.symlinkSync(SOME_PROGRAM, path.join(dir, 'linked'));
    expect(programBehind(SOME_PROGRAM)).toBe(SOME_PROGRAM);
    expect(programBehind(path.join(dir, 'linked'))).toBe(path.join(dir, 'linked'));
  });

  it('starts a script it finds no program behind as it is (CHROMIUM_PATH names it)', () => {
    const own = script(path.join(dir, 'own/start-my-browser'), 'exec /opt/elsewhere/browser "$@"');
    expect(programBehind(own)).toBe(fs.realpathSync(own));
  });
});

// Debian's package (CI installs it and requires this: PAPERLINK_REQUIRE_DEBIAN_CHROMIUM=1)
const debian = fs.existsSync('/usr/bin/chromium') && !isElf('/usr/bin/chromium');
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
const required = process.env.PAPERLINK_REQUIRE_DEBIAN_CHROMIUM === '1';
(debian || required ? describe : describe.skip)("Debian's chromium package", () => {
  afterAll(() => printer.close());

  it('prints an HTML template through /usr/bin/chromium, its launcher script, in the sandbox where there is one', async () => {
    if (!debian)
      throw new Error(
        "Debian's chromium package is required here (PAPERLINK_REQUIRE_DEBIAN_CHROMIUM=1): apt-get install chromium",
      );
    await withEnv('CHROMIUM_PATH', '/usr/bin/chromium', async () => {
      expect(await chromiumPath()).toBe('/usr/lib/chromium/chromium');
      await printer.close();
      const t = await loadTemplate('<!doctype html><html><body><p>Printed for {{ name }}</p></body></html>');
      const read = await readPdf(await renderTemplate(t, { name: 'a Debian user' }));
      expect(read.text).toContain('Printed for a Debian user');
      await printer.close();
    });
    // and it is the Chromium the service finds by itself, unless CHROMIUM_PATH names another or
    // Debian's headless shell is there too
    if (!process.env.CHROMIUM_PATH && !fs.existsSync(HEADLESS_SHELL))
      expect(await chromiumPath()).toBe('/usr/lib/chromium/chromium');
  });

  it('prints with chromium-headless-shell, found before the desktop browser when both are installed', async () => {
    if (!fs.existsSync(HEADLESS_SHELL)) {
      if (required)
        throw new Error(
          "Debian's chromium-headless-shell package is required here (PAPERLINK_REQUIRE_DEBIAN_CHROMIUM=1): apt-get install chromium-headless-shell",
        );
      return;
    }
    const given = process.env.CHROMIUM_PATH;
    delete process.env.CHROMIUM_PATH;
    try {
      expect(await chromiumPath()).toBe(HEADLESS_SHELL);
      await printer.close();
      const t = await loadTemplate('<!doctype html><html><body><p>Printed for {{ name }}</p></body></html>');
      const read = await readPdf(await renderTemplate(t, { name: 'a headless shell' }));
      expect(read.text).toContain('Printed for a headless shell');
      await printer.close();
    } finally {
      if (given !== undefined) process.env.CHROMIUM_PATH = given;
    }
    // its launcher, named by CHROMIUM_PATH, is looked behind too
    await withEnv('CHROMIUM_PATH', '/usr/bin/chromium-headless-shell', async () => {
      expect(await chromiumPath()).toBe(HEADLESS_SHELL);
    });
  });
});

describe('a printer that will not start', () => {
  const dir = tempDir('paperlink-broken-');
  // a launcher that fails as Debian's did in the sandbox: a message on standard error, exit 1
  const broken = script(path.join(dir, 'bin/start-browser'), 'echo "cannot open /etc/chromium.d/*" >&2; exit 1');
  const office = script(path.join(dir, 'bin/office'), 'echo "cannot open display" >&2; exit 3');
  let t: TestService;
  beforeAll(async () => (t = await testService()));
  afterAll(async () => {
    await t.stop();
    await printer.close();
    await converter.close();
  });

  const upload = (payload: string | Buffer, type: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { 'x-service-api-token': t.key, 'content-type': type },
      payload,
    });
  const generate = (templateId: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key, 'content-type': 'application/json' },
      payload: {
        template_id: templateId,
        merge_parameters: { name: 'Pat' },
        destinations: { inkit_storage: { name: 'refused' } },
      },
    });
  const documents = async () =>
    (await t.app.inject({ method: 'GET', url: '/v1/documents', headers: { 'x-service-api-token': t.key } })).json<{
      data: unknown[];
    }>().data.length;

  it('answers an HTML generate 503 renderer_unavailable with Retry-After, naming the settings, and stores nothing', async () => {
    await withEnv('CHROMIUM_PATH', broken, async () => {
      await printer.close();
      const made = await upload('<!doctype html><html><body><p>{{ name }}</p></body></html>', 'text/html');
      expect(made.statusCode).toBe(201);
      const before = await documents();
      for (let attempt = 0; attempt < 2; attempt++) {
        const res = await generate(made.json<{ id: string }>().id);
        expect(res.statusCode).toBe(503);
        expect(res.json().error.code).toBe('renderer_unavailable');
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        // it names the setting that chooses the browser
        expect(res.json().error.message).toContain('CHROMIUM_PATH');
        // what the browser printed is for the operator's log, not for the client
        expect(res.body).not.toContain('/etc/chromium.d');
      }
      expect(await documents()).toBe(before);
    });
    await printer.close();
  });

  it('answers a Word generate 503 renderer_unavailable when LibreOffice exits at its start', async () => {
    await withEnv('LIBREOFFICE_PATH', office, async () => {
      await converter.close();
      const made = await upload(
        Buffer.from(makeDocx(['Dear {name},'])),
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      );
      expect(made.statusCode).toBe(201);
      const res = await generate(made.json<{ id: string }>().id);
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('renderer_unavailable');
      expect(res.json().error.message).toContain('LIBREOFFICE_PATH');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    });
    await converter.close();
  });
});
