#!/usr/bin/env node
// examples/temporal-app as an engineer builds and runs it: Paperlink packed with `npm pack` and
// installed from the tarball into a copy of the project, type-checked with the project's own
// tsconfig (strict, no skipLibCheck), then run against a real Temporal dev server and PostgreSQL:
// `paperlink apps magic-link setup`, the engineer's worker (Paperlink's plugin, no `paperlink
// worker` anywhere), and their `npm start`, whose workflow generates a contract as a child, waits
// for the link to expire and records the outcome with an activity of its own.
// Ends with "N passed, N failed". KEEP=1 keeps the work folder.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { startPostgres, stopPostgres, freshDatabase, freePort } = require('./throwaway-pg');

const { check, run, sleep, finish } = require('./checks');

const root = path.resolve(__dirname, '..');

/** The temporal CLI scripts/temporal-install.sh built (or one on PATH). */
function temporalCli() {
  const version = process.env.TEMPORAL_CLI_VERSION || 'v1.5.1';
  const cached = path.join(os.homedir(), '.cache', 'paperlink-temporal', version);
  if (fs.existsSync(path.join(cached, '.complete'))) return path.join(cached, 'temporal');
  const found = run('sh', ['-c', 'command -v temporal']).stdout.trim();
  if (found) return found;
  throw new Error('no temporal CLI: run bash scripts/temporal-install.sh');
}

/** A child process whose output is kept; resolves once a line matches `ready`. */
function start(cmd, args, opts, ready, ms = 120_000) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  let out = '';
  const up = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready within ${ms / 1000} s:\n${out}`)), ms);
    const read = (c) => {
      out += c.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}):\n${out}`));
    });
  });
  return { child, up, output: () => out };
}

/** Whether something accepts connections on the port within two minutes. */
async function listening(port) {
  for (let i = 0; i < 240; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return true;
    await sleep(500);
  }
  return false;
}

async function main(work) {
  const packed = run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root });
  if (!check('npm pack of the service', packed.status === 0, packed.stderr)) return;
  const tarball = path.join(work, JSON.parse(packed.stdout)[0].filename);

  const app = path.join(work, 'temporal-app');
  fs.cpSync(path.join(root, 'examples/temporal-app'), app, {
    recursive: true,
    filter: (src) => !/node_modules|[/\\]dist$/.test(src),
  });
  console.log('     (installing the example with Paperlink from its tarball)');
  const installed = run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: app });
  if (!check('npm install of the example with the tarball', installed.status === 0, installed.stderr)) return;
  const built = run('npm', ['run', 'build'], { cwd: app });
  check(
    'the example type-checks and builds with its own tsconfig (strict, no skipLibCheck)',
    built.status === 0 && !/skipLibCheck/.test(fs.readFileSync(path.join(app, 'tsconfig.json'), 'utf8')),
    built.stdout + built.stderr,
  );
  if (built.status !== 0) return;

  const pg = await startPostgres();
  const port = await freePort();
  const temporal = spawn(
    temporalCli(),
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'],
    { stdio: 'ignore' },
  );
  const children = [temporal];
  try {
    if (!check('the Temporal dev server listens', await listening(port), `port ${port}`)) return;
    const env = {
      ...process.env,
      NODE_OPTIONS: '',
      DATABASE_URL: await freshDatabase(pg.url, 'temporal_app'),
      DATA_DIR: path.join(app, 'data'),
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      TEMPORAL_TASK_QUEUE: 'contracts',
      // the worker and the engineer's client read each other's payloads only with the same keys
      TEMPORAL_PAYLOAD_KEYS: `k1:${require('node:crypto').randomBytes(32).toString('base64')}`,
      LOG_LEVEL: 'warn',
    };
    const setup = run(
      process.execPath,
      [path.join(app, 'node_modules/paperlink/dist/src/cli.js'), 'apps', 'magic-link', 'setup'],
      { cwd: app, env },
    );
    if (!check('`paperlink apps magic-link setup` on PostgreSQL', setup.status === 0, setup.stderr)) return;
    // the engineer's worker: no address in its code, TEMPORAL_ADDRESS is not the default
    const worker = start(
      process.execPath,
      ['dist/worker.js'],
      { cwd: app, env },
      /worker: polling task queue contracts/,
    );
    children.push(worker.child);
    const polling = await worker.up.then(
      () => true,
      (err) => err.message,
    );
    if (!check("the engineer's worker starts with Paperlink's plugin, at TEMPORAL_ADDRESS", polling === true, polling))
      return;
    console.log('     (npm start: the link expires a minute after it is made)');
    const started = run('npm', ['start', '--', 'order-1', 'ada@example.com'], { cwd: app, env, timeout: 240_000 });
    check(
      "the engineer's workflow generates a contract as a child, waits for its link, and ends with its outcome",
      started.status === 0 && /outcome: expired/.test(started.stdout),
      started.stdout + started.stderr + worker.output(),
    );
    const log = fs.existsSync(path.join(app, 'outcomes.log'))
      ? fs.readFileSync(path.join(app, 'outcomes.log'), 'utf8')
      : '';
    check("the engineer's own activity ran after Paperlink's workflows", /^order-1 doc_\w+ expired$/m.test(log), log);
    const outbox = path.join(env.DATA_DIR, 'outbox');
    const mails = fs.existsSync(outbox) ? fs.readdirSync(outbox) : [];
    const toAda = mails.filter((f) => /ada@example\.com/.test(fs.readFileSync(path.join(outbox, f), 'utf8')));
    check("the Magic Link was e-mailed by the engineer's worker", toAda.length >= 1, mails.join(', '));
    // a second start of the same order finds the first contract: no second render
    const again = run('npm', ['start', '--', 'order-1', 'ada@example.com'], { cwd: app, env, timeout: 60_000 });
    const lines = (
      fs.existsSync(path.join(app, 'outcomes.log')) ? fs.readFileSync(path.join(app, 'outcomes.log'), 'utf8') : ''
    )
      .trim()
      .split('\n');
    check(
      'the same order started again is the same workflow: one contract, one outcome',
      again.status === 0 && /outcome: expired/.test(again.stdout) && lines.length === 1,
      again.stdout + again.stderr + lines.join('\n'),
    );
  } finally {
    for (const c of children.reverse()) c.kill('SIGTERM');
    await sleep(1000);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    stopPostgres(pg);
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-temporal-app-'));
main(work)
  .catch((err) => check('the example run completed', false, err instanceof Error ? err.stack : String(err)))
  .finally(() => {
    if (!process.env.KEEP) fs.rmSync(work, { recursive: true, force: true });
    else console.log('kept', work);
    finish();
  });
