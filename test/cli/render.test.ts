import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../support/cli';
import { root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { tempDir } from '../support/tmp';

const dir = tempDir();
const letter = path.join(root, 'examples/letter/letter.xml');
const sample = path.join(root, 'examples/letter/sample.json');

describe('paperlink render', () => {
  it('renders a template with a JSON data file into a PDF', async () => {
    const out = path.join(dir, 'letter.pdf');
    const r = await cli(['render', letter, '--data', sample, '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(out);
    const pdf = await readPdf(fs.readFileSync(out));
    expect(pdf.text).toContain('Dr. Eleanor Vance');
  });

  it('makes the PDF meet --pdf-standard, and refuses one the template cannot meet or that does not exist', async () => {
    const out = path.join(dir, 'archived.pdf');
    const r = await cli(['render', letter, '--data', sample, '--out', out, '--pdf-standard', 'PDF/A-3b+PDF/UA-1']);
    expect(r.code).toBe(0);
    const xmp = fs.readFileSync(out).toString('latin1');
    expect(xmp).toContain('<pdfaid:part>3</pdfaid:part>');
    expect(xmp).toContain('<pdfuaid:part>1</pdfuaid:part>');
    const html = path.join(root, 'examples/letter-html/letter.html');
    const htmlSample = path.join(root, 'examples/letter-html/sample.json');
    const refused = await cli([
      'render',
      html,
      '--data',
      htmlSample,
      '--out',
      path.join(dir, 'x.pdf'),
      '--pdf-standard',
      'PDF/UA-1',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('standard_unavailable');
    const unknown = await cli(['render', letter, '--data', sample, '--pdf-standard', 'PDF/A-1b']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/PDF\/A-2b/);
  });

  it('reads the data from standard input with --data -', async () => {
    const out = path.join(dir, 'stdin.pdf');
    const tpl = path.join(dir, 'hello.xml');
    fs.writeFileSync(tpl, '<document><body><p>Hello {{name}}</p></body></document>');
    const r = await cli(['render', tpl, '--data', '-', '--out', out], JSON.stringify({ name: 'Ada', extra: 3 }));
    expect(r.code).toBe(0);
    expect((await readPdf(fs.readFileSync(out))).text).toBe('Hello Ada');
  });

  it('prints a warning for text that does not fit its box, and still writes the PDF', async () => {
    const out = path.join(dir, 'overflow.pdf');
    const tpl = path.join(dir, 'box.xml');
    fs.writeFileSync(tpl, '<document><body><p x="36" y="36" width="100" height="20">{{note}}</p></body></document>');
    const r = await cli(
      ['render', tpl, '--data', '-', '--out', out],
      JSON.stringify({ note: 'too long for the box '.repeat(20) }),
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^warning: text_overflow: The text of note needs \d+ lines/m);
    expect(fs.existsSync(out)).toBe(true);
  });

  it('exits with 2 and lists every missing variable at once', async () => {
    const data = path.join(dir, 'partial.json');
    fs.writeFileSync(data, JSON.stringify({ date: 'today', subject: 'x' }));
    const r = await cli(['render', letter, '--data', data, '--out', path.join(dir, 'never.pdf')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('missing_variables');
    for (const name of ['recipient_name', 'recipient_address', 'salutation', 'body', 'sender_name'])
      expect(r.stderr).toContain(name);
    expect(fs.existsSync(path.join(dir, 'never.pdf'))).toBe(false);
  });

  it('exits with 2 on a broken template, a missing file and data that is not JSON', async () => {
    const broken = path.join(dir, 'broken.xml');
    fs.writeFileSync(broken, '<document><body><p>x</body></document>');
    expect((await cli(['render', broken])).code).toBe(2);
    expect((await cli(['render', path.join(dir, 'nope.xml')])).code).toBe(2);
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{ not json');
    const r = await cli(['render', letter, '--data', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('not valid JSON');
  });

  it('exits with 2 on an unknown option or command', async () => {
    expect((await cli(['render', letter, '--colour', 'red'])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
  });
});

describe('paperlink variables', () => {
  it('prints the variables in order of first use, the optional ones with their default, or as JSON', async () => {
    const r = await cli(['variables', path.join(root, 'examples/postcard/postcard.xml')]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').slice(0, 2)).toEqual([
      'first_name (optional, default "")',
      'last_name (optional, default "")',
    ]);
    expect(r.stdout.split('\n')).toContain('address_line_1');
    const j = await cli(['variables', '--json', letter]);
    const parsed = JSON.parse(j.stdout);
    expect(parsed.required[0]).toBe('recipient_name');
    expect(parsed.optional).toEqual({ recipient_company: '', enclosure: '' });
  });

  it('takes a folder holding one template, and says which file to give when a folder holds none or several', async () => {
    const r = await cli(['variables', path.join(root, 'examples/postcard')]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').slice(0, 1)).toEqual(['first_name (optional, default "")']);
    const folder = fs.mkdtempSync(path.join(dir, 'folder-'));
    const none = await cli(['variables', folder]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('template_invalid');
    fs.copyFileSync(path.join(root, 'examples/postcard/postcard.xml'), path.join(folder, 'a.xml'));
    fs.copyFileSync(path.join(root, 'examples/postcard/postcard.xml'), path.join(folder, 'b.xml'));
    const several = await cli(['variables', folder]);
    expect(several.code).not.toBe(0);
    expect(several.stderr).toContain('template_invalid');
    expect(several.stderr).toContain(path.join(folder, 'a.xml'));
  });
});

describe('paperlink --help', () => {
  it.each([[[]], [['render']], [['variables']], [['examples']]])('describes %j', async (cmd) => {
    const r = await cli([...cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: paperlink/);
  });

  it('describes every command, each option with its default said once', async () => {
    const root = (await cli(['--help'])).stdout;
    const commands = [...root.slice(root.indexOf('Commands:')).matchAll(/^ {2}([a-z-]+) /gm)]
      .map((m) => m[1])
      .filter((c) => c !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['serve', 'generate', 'keys', 'worker']));
    for (const c of commands) {
      const r = await cli([c, '--help']);
      expect(r.code).toBe(0);
      // an option's text, folded over lines, ends before the next option starts
      const options = r.stdout.split(/\n(?= {2}-)/);
      for (const o of options) expect(`${c}: ${o}`).not.toMatch(/\(default:[\s\S]*\(default:/);
    }
  });
});

describe('the installed paperlink binary', () => {
  it('sets its exit code: 0 when written, 2 when variables are missing', () => {
    const bin = path.join(root, 'dist/src/cli.js');
    const ok = spawnSync(
      process.execPath,
      [bin, 'render', letter, '--data', sample, '--out', path.join(dir, 'bin.pdf')],
      { encoding: 'utf8' },
    );
    expect(ok.status).toBe(0);
    const missing = spawnSync(process.execPath, [bin, 'render', letter, '--out', path.join(dir, 'bin2.pdf')], {
      encoding: 'utf8',
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('recipient_name');
  });
});
