// `npm run bench -- faults`: a mixed load (letters by POST /v1/generate, postcards by the intake,
// each with an Idempotency-Key and retried with it until answered 2xx) with a webhook subscribed to
// every event, while five faults strike in turn: a process killed -9 twice, Temporal stopped,
// PostgreSQL restarted, the S3 server stopped. On real Temporal (the CLI's dev server, its state on
// disk; `ENGINE=temporal paperlink serve` and two `paperlink worker`s), PostgreSQL and S3 (s3proxy),
// and the same on the embedded engine with two `serve` processes on one PostgreSQL. Counted after
// everything settled: what was answered 2xx and is missing (lost), what was made or delivered twice
// (doubled), and each event's delivery latency (received minus written), outside and inside the
// fault windows. CPU ms per acknowledged request from /proc (every process of the service).
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { cpuMs, start } = require('./processes');
const { freePort, freshDatabase, restartPostgres, startPostgres, stopPostgres } = require('../scripts/throwaway-pg');
const { pauseS3, runS3, startS3, stopS3 } = require('../scripts/s3proxy');

const CLI_VERSION = 'v1.5.1';
const temporalCli = path.join(os.homedir(), '.cache', 'paperlink-temporal', CLI_VERSION, 'temporal');
const cliJs = path.resolve(__dirname, '..', 'dist/src/cli.js');
/** How long the load runs; the faults come at fixed fractions of it. */
const SECONDS = Number(process.env.BENCH_FAULTS_SECONDS ?? 180);
/** How long Temporal and S3 stay stopped. */
const OUTAGE_MS = 20_000;
/** Letters by clients that each wait for their answer; postcards at a steady rate the service renders as they come (a flood beyond it only grows a backlog). */
const CLIENTS = { generate: 2 };
const POSTCARDS_PER_S = Number(process.env.BENCH_FAULTS_POSTCARDS_PER_S ?? 3);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (line) => process.stderr.write(`    ${line}\n`);

async function listening(port) {
  for (let i = 0; i < 600; i++) {
    const up = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true))).on('error', () => r(false));
    });
    if (up) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on ${port}`);
}

/** The CLI's dev server with its state in a file, so that a stop and start keeps every workflow. */
async function temporalServer() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-faults-temporal-'));
  const t = { address: `127.0.0.1:${port}`, child: undefined, cpu: 0 };
  t.start = async () => {
    t.child = spawn(
      temporalCli,
      [
        'server',
        'start-dev',
        '--headless',
        '--port',
        String(port),
        '--db-filename',
        path.join(dir, 'temporal.db'),
        '--log-level',
        'error',
      ],
      { stdio: 'ignore' },
    );
    await listening(port);
  };
  t.stop = async () => {
    t.cpu += cpuMs(t.child.pid);
    const exited = new Promise((r) => t.child.once('exit', r));
    t.child.kill('SIGKILL');
    await exited;
  };
  t.remove = () => fs.rmSync(dir, { recursive: true, force: true });
  await t.start();
  return t;
}

/** s3proxy, stopped (killed) and started again over the same folder and port. */
async function s3Server() {
  const s3 = await startS3();
  s3.stop = () => pauseS3(s3);
  s3.start = () => runS3(s3);
  return s3;
}

/** A webhook receiver: the first time each event arrived, and how often each came. */
async function receiver() {
  const first = new Map();
  const times = new Map();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        const e = JSON.parse(body);
        if (!first.has(e.id)) first.set(e.id, { at: Date.now(), created: Date.parse(e.created_at), type: e.type });
        times.set(e.id, (times.get(e.id) ?? 0) + 1);
      } catch {
        // not an event
      }
      res.end('ok');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, first, times, close: () => server.close() };
}

/** A process of the service that can be killed -9 and started again as it was; its CPU counted across lives. */
function restartable(args, env, ready) {
  const p = { cpu: 0, child: undefined };
  p.start = async () => {
    if (ready === 'listening') p.child = (await start(args, env)).child;
    else
      p.child = await new Promise((resolve, reject) => {
        const child = spawn(process.execPath, args, {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        const read = (c) => {
          out += c;
          if (out.includes(ready)) resolve(child);
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out.slice(-2000)}`)));
      });
    // a process killed on purpose is started again by the fault; one that dies by itself is a finding
    const child = p.child;
    child.once('exit', (code, signal) => {
      if (!child.stopping) log(`a process exited by itself (${code ?? signal})`);
    });
  };
  /** Ends the process with `signal` (SIGKILL: the fault; SIGTERM: the end of the run); its CPU so far is kept. */
  const end = async (signal) => {
    p.cpu += cpuMs(p.child.pid);
    p.child.stopping = true;
    const exited = new Promise((r) => p.child.once('exit', r));
    p.child.kill(signal);
    await exited;
  };
  p.kill = () => end('SIGKILL');
  p.stop = () => end('SIGTERM');
  p.cpuNow = () => p.cpu + (p.child && p.child.exitCode === null ? cpuMs(p.child.pid) : 0);
  return p;
}

const serveArgs = (dataDir, port) => [cliJs, 'serve', '--port', String(port), '--data-dir', dataDir];

function percentile(xs, q) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

async function side(label, pg, s3, temporal) {
  const { Client } = require('pg');
  const { CreateBucketCommand, S3Client } = require('@aws-sdk/client-s3');
  const bucket = `faults-${label}-${crypto.randomBytes(4).toString('hex')}`;
  const s3client = new S3Client({
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey },
  });
  await s3client.send(new CreateBucketCommand({ Bucket: bucket }));
  s3client.destroy();
  const databaseUrl = await freshDatabase(pg.url, `paperlink_faults_${label}`);
  const env = {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_POSTCARDS: '0',
    DATABASE_URL: databaseUrl,
    STORAGE: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: s3.endpoint,
    AWS_ACCESS_KEY_ID: s3.accessKey,
    AWS_SECRET_ACCESS_KEY: s3.secretKey,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LINK_TOKEN_KEYS: `k1:${crypto.randomBytes(32).toString('base64')}`,
    ...(temporal
      ? { ENGINE: 'temporal', TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: `faults-${label}` }
      : {}),
  };
  const dirs = [];
  const dir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), `paperlink-faults-${label}-`));
    dirs.push(d);
    return d;
  };
  // the API processes (each on a port of its own, kept across restarts) and Temporal's workers
  const apis = [];
  for (let i = 0; i < (temporal ? 1 : 2); i++) {
    const port = await freePort();
    const p = restartable(serveArgs(dir(), port), env, 'listening');
    p.url = `http://127.0.0.1:${port}`;
    await p.start();
    apis.push(p);
  }
  const workers = [];
  if (temporal)
    for (let i = 0; i < 2; i++) {
      const w = restartable([cliJs, 'worker', '--data-dir', dir()], env, 'paperlink worker: polling');
      await w.start();
      workers.push(w);
    }
  const processes = [...apis, ...workers];
  const { paperlink } = require('./processes');
  const key = paperlink(['keys', 'create', '--name', 'bench'], dirs[0], env).split('\n').pop();
  const token = paperlink(['tokens', 'create', '--kind', 'postcard', '--name', 'bench'], dirs[0], env)
    .split('\n')
    .pop();
  const rx = await receiver();
  const hook = await fetch(`${apis[0].url}/v1/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-api-token': key },
    body: JSON.stringify({ url: rx.url, events: ['*'] }),
  });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${await hook.text()}`);
  const letter = {
    template_id: 'tmpl_example_letter',
    merge_parameters: JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'examples/letter/sample.json'), 'utf8')),
    destinations: { inkit_storage: {} },
  };
  const postcard = {
    api_token: token,
    template_id: 'tmpl_example_postcard',
    ...JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'examples/postcard/sample.json'), 'utf8')),
  };

  const acked = { documents: new Map(), postcards: new Set() };
  const answers = new Map();
  let next = 0;
  /** Sends one request until it is answered 2xx (the same Idempotency-Key each time), to the API processes in turn. */
  const send = async (url, body, headers, deadline) => {
    const idem = crypto.randomUUID();
    for (;;) {
      const api = apis[next++ % apis.length];
      const sent = Date.now();
      const res = await fetch(`${api.url}${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idem, ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      }).catch((err) => {
        if ((answers.get('no answer') ?? 0) < 3)
          log(`${url}: no answer after ${Date.now() - sent} ms: ${err.cause?.message ?? err.message}`);
      });
      const status = res ? res.status : 'no answer';
      answers.set(status, (answers.get(status) ?? 0) + 1);
      if (res && res.status < 300) return res.json();
      if (res && res.status < 500 && ![409, 429].includes(res.status))
        throw new Error(`${url}: ${res.status} ${await res.text()}`);
      await res?.text().catch(() => undefined);
      if (Date.now() > deadline) return undefined;
      await sleep(500);
    }
  };
  const t0 = Date.now();
  const end = t0 + SECONDS * 1000;
  const cpu0 = processes.reduce((n, p) => n + p.cpuNow(), 0);
  const load = [
    ...Array.from({ length: CLIENTS.generate }, async () => {
      while (Date.now() < end) {
        const r = await send('/v1/generate', letter, { 'x-service-api-token': key }, end + 300_000);
        if (r) acked.documents.set(r.id, r.document_id);
      }
    }),
    (async () => {
      // open loop: one postcard every 1/POSTCARDS_PER_S s, whatever the answers (each retried by its own sender)
      const sending = [];
      for (let n = 0; Date.now() < end; n++) {
        sending.push(send('/postcards', postcard, {}, end + 300_000).then((r) => r && acked.postcards.add(r.id)));
        await sleep(Math.max(0, t0 + ((n + 1) * 1000) / POSTCARDS_PER_S - Date.now()));
      }
      await Promise.all(sending);
    })(),
  ];
  // the faults, in turn, each with its window (from its start until the part is back)
  const windows = [];
  const at = (fraction) => sleep(Math.max(0, t0 + fraction * SECONDS * 1000 - Date.now()));
  const fault = async (name, down, up, pause = 0) => {
    const from = Date.now();
    await down();
    if (pause) await sleep(pause);
    await up();
    windows.push({ name, from, to: Date.now() });
    log(`${name}: ${((Date.now() - from) / 1000).toFixed(1)} s`);
  };
  const faults = (async () => {
    if (process.env.BENCH_FAULTS_NONE) return;
    if (temporal) {
      await at(0.1);
      await fault(
        'a worker killed -9 and started again',
        () => workers[0].kill(),
        () => workers[0].start(),
        2000,
      );
      await at(0.25);
      await fault(
        'the API process killed -9 and started again',
        () => apis[0].kill(),
        () => apis[0].start(),
        2000,
      );
      await at(0.4);
      await fault(
        'Temporal stopped',
        () => temporal.stop(),
        () => temporal.start(),
        OUTAGE_MS,
      );
    } else {
      await at(0.1);
      await fault(
        'one serve killed -9 and started again',
        () => apis[0].kill(),
        () => apis[0].start(),
        2000,
      );
      await at(0.25);
      await fault(
        'the other serve killed -9 and started again',
        () => apis[1].kill(),
        () => apis[1].start(),
        2000,
      );
    }
    await at(0.55);
    await fault(
      'PostgreSQL restarted',
      () => restartPostgres(pg),
      async () => undefined,
    );
    await at(0.7);
    await fault(
      'S3 stopped',
      () => s3.stop(),
      () => s3.start(),
      OUTAGE_MS,
    );
  })();
  await Promise.all([...load, faults]);
  const loadEnd = Date.now();
  log(`load done: ${acked.documents.size} documents, ${acked.postcards.size} postcards acknowledged`);

  // settled: every postcard rendered or failed, every event delivered (or 5 minutes)
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const settleBy = Date.now() + 300_000;
  let events;
  for (;;) {
    const open = Number((await db.query(`select count(*) from postcards where status = 'received'`)).rows[0].count);
    events = (await db.query('select id, created_at from events')).rows;
    const undelivered = events.filter((e) => !rx.first.has(e.id)).length;
    if ((open === 0 && undelivered === 0) || Date.now() > settleBy) break;
    await sleep(1000);
  }
  const settled = Date.now();
  const cpu = processes.reduce((n, p) => n + p.cpuNow(), 0) - cpu0;
  const docs = (await db.query('select id, render_id from documents')).rows;
  const docIds = new Set(docs.map((d) => d.id));
  const perRender = new Map();
  for (const d of docs) perRender.set(d.render_id, (perRender.get(d.render_id) ?? 0) + 1);
  const cards = new Map((await db.query('select id, status from postcards')).rows.map((r) => [r.id, r.status]));
  await db.end();
  const lost = {
    documents: [...acked.documents.values()].filter((id) => !docIds.has(id)).length,
    postcards: [...acked.postcards].filter((id) => !['rendered', 'failed'].includes(cards.get(id))).length,
    events: events.filter((e) => !rx.first.has(e.id)).length,
  };
  const doubled = {
    documents: [...perRender.values()].filter((n) => n > 1).length,
    events: [...rx.times.values()].filter((n) => n > 1).length,
  };
  const failedCards = [...acked.postcards].filter((id) => cards.get(id) === 'failed').length;
  const inside = [];
  const outside = [];
  for (const [, e] of rx.first) {
    const latency = e.at - e.created;
    (windows.some((w) => e.created >= w.from && e.created <= w.to) ? inside : outside).push(latency);
  }
  for (const p of processes) await p.stop().catch(() => undefined);
  rx.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  const units = acked.documents.size + acked.postcards.size;
  return {
    label,
    processes: temporal ? '1 serve, 2 workers' : '2 serve',
    acked,
    units,
    lost,
    doubled,
    failedCards,
    events: events.length,
    inside,
    outside,
    windows,
    answers,
    loadS: (loadEnd - t0) / 1000,
    settleS: (settled - loadEnd) / 1000,
    cpuMsPerUnit: cpu / Math.max(1, units),
  };
}

async function run(report) {
  if (!fs.existsSync(temporalCli))
    throw new Error(`no Temporal CLI at ${temporalCli}: bash scripts/temporal-install.sh`);
  const pg = await startPostgres();
  const s3 = await s3Server();
  const temporal = await temporalServer();
  const sides = [];
  try {
    for (const engine of (process.env.BENCH_FAULTS_ENGINES ?? 'temporal,embedded').split(',')) {
      process.stderr.write(`  ${engine}…\n`);
      sides.push(await side(engine, pg, s3, engine === 'temporal' ? temporal : undefined));
    }
  } finally {
    await temporal.stop().catch(() => undefined);
    temporal.remove();
    stopS3(s3);
    stopPostgres(pg);
  }
  report.section('Faults under a mixed load: nothing lost, nothing doubled, webhooks delivered');
  report.line(
    `${SECONDS} s of letters (POST /v1/generate, stored in S3, ${CLIENTS.generate} clients) and postcards (${POSTCARDS_PER_S} a second, each sent whatever the answers to the others), each request sent with an Idempotency-Key until answered 2xx, a webhook subscribed to every event; PostgreSQL, s3proxy and (on Temporal) the CLI's dev server with its state on disk. The faults, in turn: a process killed -9 twice (Temporal: a worker, then the API process; embedded: each of two serve processes), Temporal stopped ${OUTAGE_MS / 1000} s, PostgreSQL restarted, S3 stopped ${OUTAGE_MS / 1000} s. Counted once everything settled. Webhooks are at least once (docs/webhooks.md): an event whose POST a killed process made before recording it is sent again, and counted as received twice. Delivery latency: the first receipt of an event minus its created_at; "inside" an event written during a fault's window.`,
  );
  report.line('');
  const ms = (x) => (Number.isNaN(x) ? '–' : `${(x / 1000).toFixed(1)} s`);
  report.table(
    [
      'engine',
      'processes',
      'acknowledged (letters + postcards)',
      'lost',
      'made twice (documents) / received twice (events)',
      'events delivered',
      'delivery p50 / p99 outside',
      'p50 / p99 / max inside',
      'settled after load',
      'CPU ms per request',
    ],
    sides.map((s) => [
      s.label,
      s.processes,
      `${s.acked.documents.size} + ${s.acked.postcards.size}`,
      `${s.lost.documents} documents, ${s.lost.postcards} postcards, ${s.lost.events} events`,
      `${s.doubled.documents} / ${s.doubled.events}`,
      `${s.events - s.lost.events} of ${s.events}`,
      `${ms(percentile(s.outside, 0.5))} / ${ms(percentile(s.outside, 0.99))}`,
      `${ms(percentile(s.inside, 0.5))} / ${ms(percentile(s.inside, 0.99))} / ${ms(s.inside.length ? Math.max(...s.inside) : NaN)}`,
      `${s.settleS.toFixed(0)} s`,
      s.cpuMsPerUnit.toFixed(0),
    ]),
  );
  for (const s of sides)
    report.line(
      `${s.label}: faults ${s.windows.map((w) => `${w.name} (${((w.to - w.from) / 1000).toFixed(1)} s)`).join('; ')}. Answers: ${[...s.answers].map(([k, v]) => `${k} ×${v}`).join(', ')}. Postcards failed (rendered as failed, a final state): ${s.failedCards}.`,
    );
}

module.exports = { run };
