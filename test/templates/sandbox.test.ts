/**
 * The barrier around Chromium and LibreOffice (sandbox.ts): what a program in it can reach, and
 * that the printing programs really run in it. Where bubblewrap does not work (no user
 * namespaces), these are skipped and the service says so at start; CI installs it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument, PDFName, PDFStream } from 'pdf-lib';
import { convertDocx, converter } from '../../src/templates/docx';
import { printer } from '../../src/templates/html';
import { loadTemplate, renderTemplate } from '../../src/templates';
import { sandboxAvailable, sandboxed } from '../../src/templates/sandbox';
import { processTree } from '../../src/templates/watch';
import { listener, linkedPicture, secretFiles, type Listener } from '../support/hostile';
import { readPdf } from '../support/pdf';
import { tempDir } from '../support/tmp';

const available = sandboxAvailable();
const inSandbox = available ? describe : describe.skip;

/** Every process under this one, with its network namespace. */
function descendants(): { pid: number; args: string; net: string }[] {
  return processTree(process.pid)
    .slice(1)
    .flatMap((pid) => {
      try {
        const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ');
        return [{ pid, args, net: fs.readlinkSync(`/proc/${pid}/ns/net`) }];
      } catch {
        return []; // gone meanwhile
      }
    });
}

inSandbox('a program in the sandbox', () => {
  const secret = secretFiles();
  const own = tempDir('paperlink-sandbox-');
  let probe: Listener;
  beforeAll(async () => (probe = await listener()));
  afterAll(() => probe.close());

  it('reaches no local service, reads no file of the server, sees none of its environment, and writes only its own folder', () => {
    const script = `
import os, socket
def attempt(f):
    try: f(); return "yes"
    except Exception: return "no"
print("connect", attempt(lambda: socket.create_connection(("127.0.0.1", ${probe.port}), timeout=2)))
print("read", attempt(lambda: open(${JSON.stringify(secret.file)}).read()))
print("passwd", attempt(lambda: open("/etc/passwd").read()))
print("env", os.environ.get("PAPERLINK_TEST_SECRET", "none"))
print("write", attempt(lambda: open(${JSON.stringify(path.join(own, 'out.txt'))}, "w").write("x")))
print("uid", os.getuid())
`;
    const { command, args } = sandboxed('/usr/bin/python3', ['-c', script], { writable: [own] });
    const run = spawnSync(command, args, {
      encoding: 'utf8',
      env: { ...process.env, PAPERLINK_TEST_SECRET: secret.text },
      timeout: 20_000,
    });
    expect(run.stderr).toBe('');
    expect(
      Object.fromEntries(
        run.stdout
          .trim()
          .split('\n')
          .map((l) => l.split(' ')),
      ),
    ).toEqual({
      connect: 'no',
      read: 'no',
      passwd: 'no',
      env: 'none',
      write: 'yes',
      uid: '65534',
    });
    expect(fs.readFileSync(path.join(own, 'out.txt'), 'utf8')).toBe('x');
    expect(probe.connections()).toBe(0);
  });
});

inSandbox('LibreOffice and Chromium in the sandbox', () => {
  const secret = secretFiles();
  let probe: Listener;
  beforeAll(async () => (probe = await listener()));
  afterAll(async () => {
    await probe.close();
    await converter.close();
    await printer.close();
  });

  it('LibreOffice fetches no linked picture and embeds no local file, even when the upload check is bypassed', async () => {
    for (const target of [`${probe.url}/probe.png`, `file://${secret.picture}`]) {
      // converted as it is: the upload's check (docxparts.ts) would refuse it, the sandbox is the second barrier
      const pdf = await convertDocx(linkedPicture(target), { timeoutMs: 30_000 });
      const doc = await PDFDocument.load(pdf);
      const images = doc.context
        .enumerateIndirectObjects()
        .filter(([, o]) => o instanceof PDFStream && o.dict.get(PDFName.of('Subtype')) === PDFName.of('Image'));
      expect(images).toEqual([]);
    }
    expect(probe.connections()).toBe(0);
  });

  it('runs both in a network namespace of their own, as every process they start', async () => {
    const html = await loadTemplate('<!doctype html><html><body><p>{{ name }}</p></body></html>');
    expect((await readPdf(await renderTemplate(html, { name: 'sandboxed' }))).text).toContain('sandboxed');
    await convertDocx(linkedPicture('https://example.com/x.png'), { timeoutMs: 30_000 });
    const ours = fs.readlinkSync('/proc/self/ns/net');
    const printing = descendants().filter((p) => /chrom|soffice/.test(p.args) && !/^\S*bwrap /.test(p.args));
    expect(printing.map((p) => p.args.split(' ')[0])).toEqual(
      expect.arrayContaining([expect.stringMatching(/chrom/), expect.stringMatching(/soffice/)]),
    );
    expect(printing.filter((p) => p.net === ours)).toEqual([]);
  });
});
