// `npm run bench -- temporal`: the same work through a real Temporal server (the CLI's dev server,
// `paperlink worker` beside `ENGINE=temporal paperlink serve`) and through the embedded engine
// (`paperlink serve`), both on one throwaway PostgreSQL with documents in the database, on this
// machine: POST /v1/generate (a letter, stored) by 4 clients, and postcard intake (202s, then
// every postcard rendered). For each: the rate, and CPU ms per document of each part (the service's
// processes, the Temporal server, PostgreSQL), so the price of Temporal's durability is a figure.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { cpuMs, paperlink, serve, stop } = require('./processes');
const { freePort, freshDatabase, startPostgres, stopPostgres } = require('../scripts/throwaway-pg');

const CLI_VERSION = 'v1.5.1';
const temporalCli = path.join(os.homedir(), '.cache', 'paperlink-temporal', CLI_VERSION, 'temporal');
const cliJs = path.resolve(__dirname, '..', 'dist/src/cli.js');
const DOCUMENTS = Number(process.env.BENCH_TEMPORAL_DOCUMENTS ?? 200);
const POSTCARDS = Number(process.env.BENCH_TEMPORAL_POSTCARDS ?? 300);
const CLIENTS = 4;
const HELD = Number(process.env.BENCH_TEMPORAL_HELD ?? 100_000);

async function startTemporal() {
  const port = await freePort();
  const child = spawn(
    temporalCli,
    ['server', 'start-dev', '--headless', '--port', String(port), '--log-level', 'error'],
    {
      stdio: 'ignore',
    },
  );
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true))).on('error', () => r(false));
    });
    if (up) return { child, address: `127.0.0.1:${port}` };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('the Temporal dev server did not start');
}

/** `paperlink worker`; resolves once it polls. */
function worker(dataDir, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliJs, 'worker', '--data-dir', dataDir], {
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const read = (c) => {
      out += c;
      if (out.includes('paperlink worker: polling')) resolve(child);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => reject(new Error(`worker exited with ${code}: ${out}`)));
  });
}

/** Runs `fn` `total` times, `clients` at once; the wall ms it took. */
async function pool(total, clients, fn) {
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) await fn(next++);
    }),
  );
  return performance.now() - t;
}

async function side(label, pg, temporal) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `paperlink-bench-${label}-`));
  const env = {
    DATABASE_URL: await freshDatabase(pg.url, `paperlink_bench_${label}`),
    STORAGE: 'database',
    // the same Magic Link keys for the API and the worker, as on several machines
    LINK_TOKEN_KEYS: `k1:${require('node:crypto').randomBytes(32).toString('base64')}`,
    ...(temporal
      ? { ENGINE: 'temporal', TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: `bench-${label}` }
      : {}),
  };
  const api = await serve(dataDir, { env });
  const workerDir = fs.mkdtempSync(path.join(os.tmpdir(), `paperlink-bench-${label}-worker-`));
  const work = temporal ? await worker(workerDir, env) : undefined;
  const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir, env).split('\n').pop();
  const token = paperlink(['tokens', 'create', '--kind', 'postcard', '--name', 'bench'], dataDir, env)
    .split('\n')
    .pop();
  const letter = JSON.parse(fs.readFileSync(path.join(dataDir, 'first-request.json'), 'utf8'));
  const postcard = {
    api_token: token,
    template_id: 'tmpl_example_postcard',
    ...JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'examples/postcard/sample.json'), 'utf8')),
  };
  const pids = () => ({
    service: [api.child.pid, ...(work ? [work.pid] : [])].reduce((n, p) => n + cpuMs(p), 0),
    temporal: temporal ? cpuMs(temporal.child.pid) : 0,
    postgres: cpuMs(pg.pid),
  });
  const measure = async (what, n, fn, settled) => {
    const before = pids();
    const ms = await pool(n, CLIENTS, fn);
    const settle0 = performance.now();
    if (settled) while (!(await settled())) await new Promise((r) => setTimeout(r, 100));
    const total = ms + (performance.now() - settle0);
    const after = pids();
    const per = (k) => ((after[k] - before[k]) / n).toFixed(1);
    return {
      what,
      label,
      answered: n / (ms / 1000),
      done: n / (total / 1000),
      service: per('service'),
      temporal: per('temporal'),
      postgres: per('postgres'),
    };
  };
  const post = async (url, body, headers) => {
    const res = await fetch(`${api.url}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // warm up both paths (the worker's first workflow task bundles nothing, but connections open)
  for (let i = 0; i < 5; i++) await post('/v1/generate', letter, { 'x-service-api-token': key });
  const rows = [];
  rows.push(await measure('generate', DOCUMENTS, () => post('/v1/generate', letter, { 'x-service-api-token': key })));
  const ids = [];
  const rendered = async () => {
    const res = await fetch(`${api.url}/v1/postcards?status=received&limit=1`, {
      headers: { 'x-service-api-token': key },
    });
    return (await res.json()).data.length === 0;
  };
  rows.push(
    await measure(
      'postcard intake, until rendered',
      POSTCARDS,
      async () => ids.push((await post('/postcards', postcard)).id),
      rendered,
    ),
  );
  if (work) await stop(work);
  await stop(api.child);
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(workerDir, { recursive: true, force: true });
  return rows;
}

/** How long `ENGINE=temporal paperlink serve` takes to answer /readyz 200, from its spawn. */
async function readyIn(dataDir, env) {
  const t = performance.now();
  const api = await serve(dataDir, { env });
  for (;;) {
    const res = await fetch(`${api.url}/readyz`).catch(() => undefined);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = performance.now() - t;
  await stop(api.child);
  return ms;
}

/** A start of the API on Temporal with none and with HELD links Temporal has heard of (nothing marked). */
async function start(pg, temporal) {
  const { Client } = require('pg');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-start-'));
  const url = await freshDatabase(pg.url, 'paperlink_bench_start');
  const env = { DATABASE_URL: url, STORAGE: 'database', ENGINE: 'temporal', TEMPORAL_ADDRESS: temporal.address };
  await readyIn(dataDir, env); // migrates, makes its keys
  const none = await readyIn(dataDir, env);
  const db = new Client({ connectionString: url });
  await db.connect();
  await db.query(
    `INSERT INTO magic_links (id, document_id, token_hash, recipient_email, auth_email, auth_type, settings,
       views_used, status, send_attempts, created_at, sent_at, expires_at, token_generation)
     SELECT 'ml_held' || lpad(i::text, 7, '0'), 'doc_none', 'hash-' || i, 'a@example.com', 'a@example.com', 'email',
       '{}', 0, 'active', 1, '2026-11-26T00:00:00.000Z', '2026-11-26T00:00:00.000Z', '2026-12-06T00:00:00.000Z', 0
     FROM generate_series(1, $1) AS i`,
    [HELD],
  );
  await db.end();
  const held = await readyIn(dataDir, env);
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { none, held };
}

async function run(report) {
  if (!fs.existsSync(temporalCli))
    throw new Error(`no Temporal CLI at ${temporalCli}: bash scripts/temporal-install.sh`);
  const pg = await startPostgres();
  pg.pid = Number(fs.readFileSync(path.join(pg.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const temporal = await startTemporal();
  try {
    process.stderr.write('  embedded…\n');
    const embedded = await side('embedded', pg);
    process.stderr.write('  temporal…\n');
    const onTemporal = await side('temporal', pg, temporal);
    process.stderr.write('  a start on held links…\n');
    const ready = await start(pg, temporal);
    report.section('Temporal beside the embedded engine');
    report.line(
      `${DOCUMENTS} letters by POST /v1/generate (stored, ${CLIENTS} clients at once), then ${POSTCARDS} postcards posted by ${CLIENTS} clients and rendered; PostgreSQL (one throwaway server, documents in it) and one service process on each side, \`paperlink worker\` and the CLI's dev server (Temporal Server 1.29.1, its own SQLite) on Temporal's. CPU ms per document from /proc, per part; the dev server is one process, a production cluster spreads the same work over its services.`,
    );
    report.line('');
    report.table(
      ['work', 'engine', 'answered /s', 'done /s', 'CPU ms/doc: service', 'Temporal server', 'PostgreSQL'],
      [...embedded, ...onTemporal].map((r) => [
        r.what,
        r.label,
        r.answered.toFixed(1),
        r.done.toFixed(1),
        r.service,
        r.temporal,
        r.postgres,
      ]),
    );
    report.line(
      `A start of \`ENGINE=temporal paperlink serve\` until \`/readyz\` answers 200: ${(ready.none / 1000).toFixed(2)} s on a database with no link, ${(ready.held / 1000).toFixed(2)} s with ${HELD.toLocaleString('en')} active links Temporal has heard of (before this change: one workflow start per active link, in turn, before the first answer).`,
    );
  } finally {
    temporal.child.kill('SIGTERM');
    stopPostgres(pg);
  }
}

module.exports = { run };
