import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { cli } from '../support/cli';
import { eventually } from '../support/eventually';
import { root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { cliJs, serveProcess } from '../support/serve';
import { tempDir } from '../support/tmp';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('paperlink keys', () => {
  const dataDir = tempDir();

  it('creates a key shown once, lists it by name and prefix, and revokes it', async () => {
    const made = await cli(['keys', 'create', '--name', 'n8n production', '--data-dir', dataDir]);
    expect(made.code).toBe(0);
    // which database, and that it was made just now (a command run in the wrong folder shows it)
    expect(made.stderr).toContain(
      `Database: SQLite at ${path.resolve(dataDir, 'paperlink.db')} (none was there: created now`,
    );
    const secret = made.stdout.trim();
    expect(secret).toMatch(/^plk_[0-9A-Za-z]{40,}$/);

    const listed = await cli(['keys', 'list', '--json', '--data-dir', dataDir]);
    expect(listed.stderr).toBe(`Database: SQLite at ${path.resolve(dataDir, 'paperlink.db')}\n`);
    const keys = JSON.parse(listed.stdout) as { id: string; name: string; prefix: string; revoked_at: string | null }[];
    expect(keys).toEqual([
      expect.objectContaining({ name: 'n8n production', prefix: secret.slice(0, 12), revoked_at: null }),
    ]);
    expect(listed.stdout).not.toContain(secret);
    const table = await cli(['keys', 'list', '--data-dir', dataDir]);
    expect(table.stdout).toContain('n8n production');
    expect(table.stdout).toContain('never');

    expect((await cli(['keys', 'revoke', keys[0].prefix, '--data-dir', dataDir])).code).toBe(0);
    const after = JSON.parse((await cli(['keys', 'list', '--json', '--data-dir', dataDir])).stdout);
    expect(after[0].revoked_at).not.toBeNull();
  });

  const lockDir = tempDir();
  it('refuses a second server on one SQLite data dir, naming the first, and takes over the lock of a killed one', async () => {
    const dir = lockDir;
    const first = await serveProcess(dir, {});
    try {
      const second = spawnSync(process.execPath, [cliJs, 'serve', '--port', '0', '--data-dir', dir], {
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '' },
        timeout: 60_000,
      });
      expect(second.status).toBe(1);
      expect(second.stderr).toContain('data_dir_in_use');
      expect(second.stderr).toContain(`process ${first.child.pid}`);
    } finally {
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
    }
    // its process is gone: the next server takes the lock over
    const next = await serveProcess(dir, {});
    next.child.kill('SIGTERM');
    expect(await new Promise((r) => next.child.once('exit', r))).toBe(0);
    expect(fs.existsSync(path.join(dir, 'paperlink.lock'))).toBe(false);
  }, 60_000);

  const bindDir = tempDir();
  it('exits 1 at once when its port is taken, every process with it, and leaves the data dir free', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      const failed = spawnSync(
        process.execPath,
        [cliJs, 'serve', '--port', String(port), '--processes', '2', '--data-dir', bindDir],
        { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 60_000 },
      );
      // (it hung before: a worker that failed to bind stayed alive, and so did the primary)
      expect(failed.status).toBe(1);
      expect(failed.stderr).toContain('EADDRINUSE');
    } finally {
      taken.close();
    }
    expect(fs.existsSync(path.join(bindDir, 'paperlink.lock'))).toBe(false);
    const next = await serveProcess(bindDir, {});
    next.child.kill('SIGTERM');
    expect(await new Promise((r) => next.child.once('exit', r))).toBe(0);
  }, 90_000);

  const formatsDirs = [tempDir(), tempDir()];
  it('says at start which template formats it can print, and how to get a missing one', async () => {
    const greeting = async (env: Record<string, string>) => {
      const s = await serveProcess(formatsDirs[env.LIBREOFFICE_PATH ? 1 : 0], env);
      s.child.kill('SIGTERM');
      await new Promise((r) => s.child.once('exit', r));
      return /templates: .*/.exec(s.output())?.[0];
    };
    const all = await greeting({});
    expect(all).toContain('HTML with Chromium at');
    expect(all).toContain('Word with LibreOffice at');
    const without = await greeting({
      CHROMIUM_PATH: '/nonexistent/chromium',
      LIBREOFFICE_PATH: '/nonexistent/soffice',
    });
    expect(without).toContain('not HTML: ');
    expect(without).toContain('apt-get install chromium');
    expect(without).toContain('not Word: ');
    expect(without).toContain('apt-get install libreoffice-writer-nogui python3-uno');
    // and where to learn more
    expect(without).toContain('npx paperlink doctor');
  }, 60_000);

  const scopedDir = tempDir();
  it('makes a key with scopes, lists them, and refuses a scope that does not exist', async () => {
    const dir = scopedDir;
    const made = await cli([
      'keys',
      'create',
      '--name',
      'renders',
      '--scope',
      'generate,documents:read',
      '--data-dir',
      dir,
    ]);
    expect(made.code).toBe(0);
    expect(made.stderr).toContain('with the scopes generate, documents:read');
    await cli(['keys', 'create', '--name', 'everything', '--data-dir', dir]);
    const keys = JSON.parse((await cli(['keys', 'list', '--json', '--data-dir', dir])).stdout) as {
      name: string;
      scopes: string[];
    }[];
    expect(keys.find((k) => k.name === 'renders')?.scopes).toEqual(['generate', 'documents:read']);
    expect(keys.find((k) => k.name === 'everything')?.scopes).toContain('admin');
    const table = (await cli(['keys', 'list', '--data-dir', dir])).stdout;
    expect(table).toMatch(/renders .*generate,documents:read/);
    expect(table).toMatch(/everything .* all /);
    const wrong = await cli(['keys', 'create', '--name', 'x', '--scope', 'documents:reed', '--data-dir', dir]);
    expect(wrong.code).toBe(2); // as every input the command refuses
    expect(wrong.stderr).toContain('validation_failed');
    expect(wrong.stderr).toContain('generate, documents:read, documents:write');
    // a blank list (an unset variable in a script) is refused, not taken for every scope
    for (const blank of ['', ' ', ',']) {
      const refused = await cli(['keys', 'create', '--name', 'blank', '--scope', blank, '--data-dir', dir]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('validation_failed');
    }
    const after = JSON.parse((await cli(['keys', 'list', '--json', '--data-dir', dir])).stdout) as { name: string }[];
    expect(after.map((k) => k.name)).not.toContain('blank');
  });

  it('says what is wrong: a missing name, an unknown key', async () => {
    expect((await cli(['keys', 'create', '--data-dir', dataDir])).code).toBe(2);
    const unknown = await cli(['keys', 'revoke', 'plk_nothing', '--data-dir', dataDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not_found');
  });
});

describe('paperlink templates', () => {
  const dataDir = tempDir();

  it('adds a template file with its images, lists it and removes it', async () => {
    const added = await cli([
      'templates',
      'add',
      path.join(root, 'examples/letter/letter.xml'),
      '--name',
      'My letter',
      '--data-dir',
      dataDir,
    ]);
    expect(added.code).toBe(0);
    const id = added.stdout.trim();
    expect(id).toMatch(/^tmpl_/);
    const list = JSON.parse((await cli(['templates', 'list', '--json', '--data-dir', dataDir])).stdout) as {
      id: string;
      name: string;
      variables: string[];
    }[];
    expect(list.find((t) => t.id === id)).toMatchObject({
      name: 'My letter',
      variables: expect.arrayContaining(['recipient_name']),
    });
    expect((await cli(['templates', 'remove', id, '--data-dir', dataDir])).code).toBe(0);
    expect((await cli(['templates', 'remove', id, '--data-dir', dataDir])).code).toBe(1);
  });

  it('refuses a broken template with exit code 2', async () => {
    const file = path.join(dataDir, 'broken.xml');
    fs.writeFileSync(file, '<document><body><p>oops</body></document>');
    const r = await cli(['templates', 'add', file, '--data-dir', dataDir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('template_invalid');
  });
});

describe('paperlink generate (batch)', () => {
  const dir = tempDir();
  const dataDir = path.join(dir, 'data');

  function csv(rows: Record<string, string>[], columns: string[]): string {
    const q = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
    return [columns.join(','), ...rows.map((r) => columns.map((c) => q(r[c] ?? '')).join(','))].join('\n') + '\n';
  }

  it('renders one PDF per CSV row and reports the bad rows with their reason', async () => {
    const columns = Object.keys(postcard);
    const rows = [postcard, { ...postcard, first_name: 'Zoë' }, { ...postcard, first_name: 'Third' }];
    const file = path.join(dir, 'rows.csv');
    fs.writeFileSync(file, csv(rows, columns));
    const good = await cli([
      'generate',
      '--template',
      'tmpl_example_postcard',
      '--data',
      file,
      '--out',
      path.join(dir, 'all'),
      '--data-dir',
      dataDir,
    ]);
    expect(good.code).toBe(0);
    expect(good.stdout).toContain('3 of 3 rows rendered');
    expect(fs.readdirSync(path.join(dir, 'all')).sort()).toEqual(['row-0001.pdf', 'row-0002.pdf', 'row-0003.pdf']);
    const second = await readPdf(fs.readFileSync(path.join(dir, 'all', 'row-0002.pdf')));
    expect(second.text).toContain('Zoë');
  });

  it('keeps going past bad JSON Lines rows and lists each failure by row', async () => {
    const file = path.join(dir, 'rows.jsonl');
    // address_line_1 is required by the template (what a postcard can leave out has a default)
    const missing = { ...postcard } as Record<string, unknown>;
    delete missing.address_line_1;
    fs.writeFileSync(
      file,
      [
        JSON.stringify(postcard),
        '{not json',
        JSON.stringify(missing),
        JSON.stringify({ ...postcard, extra: { nested: true } }),
        JSON.stringify(postcard),
      ].join('\n'),
    );
    const r = await cli([
      'generate',
      '--template',
      path.join(root, 'examples/postcard/postcard.xml'),
      '--data',
      file,
      '--out',
      path.join(dir, 'some'),
      '--concurrency',
      '3',
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('2 of 5 rows rendered');
    expect(r.stdout).toMatch(/row 2: .*JSON/);
    expect(r.stdout).toMatch(/row 3: missing_variables/);
    expect(r.stdout).toMatch(/row 4: validation_failed/);
    expect(fs.readdirSync(path.join(dir, 'some')).sort()).toEqual(['row-0001.pdf', 'row-0005.pdf']);
  });

  it('refuses an unknown template id and an unknown data file type', async () => {
    const file = path.join(dir, 'rows.csv');
    const unknown = await cli([
      'generate',
      '--template',
      'tmpl_nope',
      '--data',
      file,
      '--out',
      path.join(dir, 'x'),
      '--data-dir',
      dataDir,
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not_found');
    const txt = path.join(dir, 'rows.txt');
    fs.writeFileSync(txt, 'a');
    expect(
      (
        await cli([
          'generate',
          '--template',
          'tmpl_example_postcard',
          '--data',
          txt,
          '--out',
          path.join(dir, 'x'),
          '--data-dir',
          dataDir,
        ])
      ).code,
    ).toBe(2);
  });
});

describe('npm start, the way a new user meets it', () => {
  const dir = tempDir();
  let server: ChildProcess | undefined;
  afterAll(() => server?.kill('SIGTERM'));

  function start(dataDir: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [path.join(root, 'dist/src/cli.js'), 'serve', '--port', '0', '--data-dir', dataDir],
        // a new user meets it at a terminal, where LOG_FORMAT is pretty
        { env: { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'pretty' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      server = child;
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no first-start banner within 20 s:\n${out}`)), 20_000);
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('More keys:')) {
          clearTimeout(timer);
          resolve(out);
        }
      });
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}:\n${out}`)));
    });
  }

  it('prints a key and curl commands that work exactly as printed', async () => {
    const banner = await start(path.join(dir, 'data'));
    const commands = banner
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('curl '));
    expect(commands).toHaveLength(2);
    const made = spawnSync('bash', ['-c', commands[0]], { encoding: 'utf8', cwd: dir });
    expect(made.status).toBe(0);
    const answer = JSON.parse(made.stdout) as {
      document_id: string;
      destinations: { inkit_storage: { name: string } };
    };
    expect(answer.document_id).toMatch(/^doc_/);
    const download = spawnSync('bash', ['-c', commands[1].replace('DOCUMENT_ID', answer.document_id)], {
      encoding: 'utf8',
      cwd: dir,
    });
    expect(download.status).toBe(0);
    const file = path.join(dir, `${answer.destinations.inkit_storage.name}.pdf`);
    const pdf = await readPdf(fs.readFileSync(file));
    expect(pdf.text).toContain('Dr. Eleanor Vance');
  });

  it('prints a "More keys" command that runs where npm install left it', async () => {
    if (server) {
      server.kill('SIGTERM');
      await new Promise((r) => server!.once('exit', r));
    }
    const banner = await start(path.join(dir, 'more'));
    const line = banner.split('\n').find((l) => l.startsWith('More keys:'))!;
    const command = /^More keys: (.+?) {2,}/.exec(line)![1].replace('NAME', 'second');
    const made = spawnSync('bash', ['-c', `${command} --data-dir ${path.join(dir, 'more')}`], {
      encoding: 'utf8',
      cwd: root,
    });
    expect({ status: made.status, stderr: made.stderr }).toMatchObject({ status: 0 });
    expect(made.stdout.trim()).toMatch(/^plk_/);
    // npx runs the bin through a link it made once per path and keeps; a clean clone built at
    // that path again must leave the bin executable itself (npm chmods only when it links)
    const bin = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { bin: { paperlink: string } };
    expect(fs.statSync(path.join(root, bin.bin.paperlink)).mode & 0o111).toBe(0o111);
  });

  it('does not make another key on the next start', async () => {
    server?.kill('SIGTERM');
    await new Promise((r) => server!.once('exit', r));
    const banner = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [path.join(root, 'dist/src/cli.js'), 'serve', '--port', '0', '--data-dir', path.join(dir, 'data')],
        { env: { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'pretty' } },
      );
      server = child;
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('API reference')) setTimeout(() => resolve(out), 300);
      });
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    });
    expect(banner).not.toContain('plk_');
    expect(banner).not.toContain('curl');
  });
});

describe('paperlink serve logs', () => {
  const dirs = tempDir();
  let runs = 0;
  /**
   * `paperlink serve` on a terminal (a pty, through util-linux `script`) or not, with LOG_FORMAT
   * unset or set: what it wrote by the time its answer to GET /healthz was logged.
   */
  async function logsOfOneRequest(o: { terminal: boolean; format?: string }): Promise<string> {
    const dataDir = path.join(dirs, String(++runs));
    const args = [
      path.join(root, 'dist/src/cli.js'),
      'serve',
      '--port',
      '0',
      '--processes',
      '1',
      '--data-dir',
      dataDir,
    ];
    const env = { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: o.format };
    if (!o.format) delete env.LOG_FORMAT;
    const quoted = [process.execPath, ...args].map((a) => `'${a}'`).join(' ');
    const child = o.terminal
      ? spawn('script', ['-qfec', quoted, '/dev/null'], { env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(process.execPath, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    try {
      await eventually(async () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(out), `serve started:\n${out}`, 30);
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      await eventually(
        async () => /healthz[^\n]*(200|statusCode)|"statusCode":200/.test(out),
        `request logged:\n${out}`,
      );
      return out.replace(/\r\n/g, '\n');
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
    }
  }

  it('at a terminal, are one readable line per request', async () => {
    const out = await logsOfOneRequest({ terminal: true });
    expect(out).toMatch(/^\d\d:\d\d:\d\d {2}GET \/healthz → 200 in \d+ ms$/m);
    expect(out.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    expect(out.match(/\/healthz/g)).toHaveLength(1);
  });

  it('elsewhere, or with LOG_FORMAT=json, are JSON lines; LOG_FORMAT=pretty wins over the default', async () => {
    for (const logs of [
      await logsOfOneRequest({ terminal: false }),
      await logsOfOneRequest({ terminal: true, format: 'json' }),
    ]) {
      const json = logs
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; req?: { url?: string } });
      expect(json.find((l) => l.req?.url === '/healthz')).toBeDefined();
    }
    const pretty = await logsOfOneRequest({ terminal: false, format: 'pretty' });
    expect(pretty).toMatch(/^\d\d:\d\d:\d\d {2}GET \/healthz → 200 in \d+ ms$/m);
    // three servers started one after another, each trying every format at its start
  }, 90_000);
});

describe('paperlink apps magic-link', () => {
  const dataDir = tempDir();

  it('sets up the Magic Link app from flags, keeps what is not given, and shows it without secrets', async () => {
    expect((await cli(['apps', 'magic-link', 'show', '--data-dir', dataDir])).code).toBe(1);
    const first = await cli([
      'apps',
      'magic-link',
      'setup',
      '--public-url',
      'https://docs.acme.example',
      '--organization',
      'Acme',
      '--sender-email',
      'docs@acme.example',
      '--data-dir',
      dataDir,
    ]);
    expect(first.code).toBe(0);
    const file = path.join(dataDir, 'app.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        auth_types: ['email', 'social'],
        oidc_providers: [
          {
            id: 'google',
            name: 'Google',
            issuer: 'https://accounts.google.com',
            client_id: 'abc',
            client_secret: 'very-secret',
          },
        ],
      }),
    );
    const second = await cli([
      'apps',
      'magic-link',
      'setup',
      '--from-json',
      file,
      '--accent-color',
      '#123456',
      '--data-dir',
      dataDir,
    ]);
    expect(second.code).toBe(0);
    const shown = await cli(['apps', 'magic-link', 'show', '--data-dir', dataDir]);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      public_url: 'https://docs.acme.example',
      organization_name: 'Acme',
      accent_color: '#123456',
      auth_types: ['email', 'social'],
      oidc_providers: [{ id: 'google', client_secret_set: true }],
    });
    expect(shown.stdout).not.toContain('very-secret');
    const bad = await cli(['apps', 'magic-link', 'setup', '--accent-color', 'blue', '--data-dir', dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('accent_color');
  });
});

describe('paperlink apps storage', () => {
  const dataDir = tempDir();

  it('sets how long documents are kept by default, and back to until deleted; refuses what is not a span', async () => {
    const set = await cli(['apps', 'storage', 'setup', '--retain-for', '90d', '--data-dir', dataDir]);
    expect(set.code).toBe(0);
    expect(JSON.parse((await cli(['apps', 'storage', 'show', '--data-dir', dataDir])).stdout)).toMatchObject({
      retain_for: { days: 90 },
    });
    const bad = await cli(['apps', 'storage', 'setup', '--retain-for', 'soon', '--data-dir', dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--retain-for');
    // a span the service refuses (over 10 years) is refused with the service's field
    const long = await cli(['apps', 'storage', 'setup', '--retain-for', '4000d', '--data-dir', dataDir]);
    expect(long.code).toBe(2);
    expect(long.stderr).toContain('retain_for');
    expect((await cli(['apps', 'storage', 'setup', '--retain-for', 'none', '--data-dir', dataDir])).code).toBe(0);
    expect(JSON.parse((await cli(['apps', 'storage', 'show', '--data-dir', dataDir])).stdout).retain_for).toBeNull();
  });
});
