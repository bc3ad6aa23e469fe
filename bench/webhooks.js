// Webhook fan-out: generate and Magic Link views on a server whose 300 subscriptions all point at a
// dead endpoint (connection refused) with a backlog of 30,000 pending deliveries, beside the same
// load on a server with no subscription, in turns. What a backlog may cost is delivery latency,
// not the API's.
'use strict';
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { paired, paperlink, serve, stop } = require('./processes');
const { signedInView, sessions } = require('./views');
const SQLite = require('../dist/src/db/sqlite-module').default;
const { freshDatabase, startPostgres, stopPostgres } = require('../scripts/throwaway-pg');

const SUBSCRIPTIONS = 300;
const BACKLOG_GENERATES = 100;
const CONNECTIONS = 16;
const ROUND = 4;
const ROUNDS = 3;

/** A port nothing listens on: every delivery to it is refused at once. */
async function deadPort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** A `paperlink serve` with `subscriptions` dead webhooks and their backlog; `databaseUrl`: on PostgreSQL (no views there). */
async function server(subscriptions, dead, databaseUrl) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-hooks-'));
  const on = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir, on);
  const tiny = path.join(dataDir, 'tiny.xml');
  fs.writeFileSync(tiny, '<document><body><p>Hello {{name}}</p></body></document>');
  const templateId = paperlink(['templates', 'add', tiny], dataDir, on);
  const { child, url } = await serve(dataDir, {
    env: {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_MAX_SUBSCRIPTIONS: String(SUBSCRIPTIONS),
      RENDER_THREADS: '1',
      ...on,
    },
  });
  const headers = { 'x-service-api-token': key, 'content-type': 'application/json' };
  for (let i = 0; i < subscriptions; i++) {
    const res = await fetch(`${url}/v1/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: `http://127.0.0.1:${dead}/hook/${i}`, events: '*' }),
    });
    if (res.status !== 201) throw new Error(`a subscription answered ${res.status}: ${await res.text()}`);
  }
  const body = JSON.stringify({
    template_id: templateId,
    merge_parameters: { name: 'Pat' },
    destinations: { inkit_storage: { name: 'bench' } },
  });
  for (let i = 0; i < BACKLOG_GENERATES; i++) {
    const res = await fetch(`${url}/v1/generate`, { method: 'POST', headers, body });
    if (res.status !== 201) throw new Error(`a generate answered ${res.status}`);
  }
  const view = databaseUrl ? undefined : await signedInView(url, dataDir, key);
  const views = view && sessions(dataDir, view.made.magic_link_piece_id, 200_000);
  const generate = (seconds) =>
    autocannon({
      url: `${url}/v1/generate`,
      method: 'POST',
      headers,
      body,
      connections: CONNECTIONS,
      duration: seconds,
    });
  return { child, url, dataDir, views: view && ((seconds) => views(`${url}${view.link}`, seconds)), generate };
}

function deliveries(dataDir) {
  const db = new SQLite(path.join(dataDir, 'paperlink.db'), { readonly: true });
  try {
    const count = (sql) => db.prepare(sql).get().n;
    return {
      pending: count("select count(*) as n from deliveries where status = 'pending'"),
      attempts: count('select count(*) as n from delivery_attempts'),
    };
  } finally {
    db.close();
  }
}

async function run(report) {
  await measure(report, 'SQLite');
  const pg = await startPostgres();
  try {
    await measure(report, 'PostgreSQL', () => freshDatabase(pg.url, 'paperlink_bench_hooks'));
  } finally {
    stopPostgres(pg);
  }
}

async function measure(report, backend, database = async () => undefined) {
  const dead = await deadPort();
  process.stderr.write(
    `  ${backend}: a server with ${SUBSCRIPTIONS} dead subscriptions and its backlog, and one with none…\n`,
  );
  const hooked = await server(SUBSCRIPTIONS, dead, await database());
  const plain = await server(0, dead, await database());
  const cpu0 = process.cpuUsage();
  try {
    const before = backend === 'SQLite' ? deliveries(hooked.dataDir) : undefined;
    await hooked.generate(1);
    await plain.generate(1);
    const rows = [];
    for (const [what, load] of [
      ['POST /v1/generate', (s) => s.generate(ROUND)],
      ...(hooked.views ? [['GET /l/<token> (signed-in view)', (s) => s.views(ROUND)]] : []),
    ]) {
      process.stderr.write(`  ${what}: ${ROUNDS} rounds of ${ROUND} s each, in turns…\n`);
      const compared = await paired(
        { pid: hooked.child.pid, load: () => load(hooked) },
        { pid: plain.child.pid, load: () => load(plain) },
        ROUNDS,
      );
      for (const [side, r] of [
        [`${SUBSCRIPTIONS} dead subscriptions`, compared.ours],
        ['no subscription (baseline)', compared.baseline],
      ])
        rows.push([
          what,
          side,
          (r.result['2xx'] / r.result.duration).toFixed(0),
          `${r.result.latency.p50} ms`,
          `${r.result.latency.p99} ms`,
          (r.cpuUs / 1000).toFixed(2),
          String(r.result.non2xx + r.result.errors),
        ]);
      rows.push([what, '**ratio**', `**${compared.ratio.toFixed(2)}**`, '', '', '', '']);
    }
    const after = before && deliveries(hooked.dataDir);
    report.section(`Webhook fan-out: ${SUBSCRIPTIONS} subscriptions to a dead endpoint (${backend})`);
    report.line(
      `One server holds ${SUBSCRIPTIONS} subscriptions to every event, all pointing at a port that refuses connections, and the backlog of ${BACKLOG_GENERATES} generates${before ? ` (${before.pending} deliveries pending when measuring began)` : ''}; the other has none. Both run \`paperlink serve\` (1 process, RENDER_THREADS=1) in their own process and take the same load in turns, ${CONNECTIONS} clients for generate (a one-line XML template, stored) and 50 for views, the other stopped meanwhile (bench/processes.js, paired). Ratio: the median over ${ROUNDS} rounds of requests/s with subscriptions ÷ without.`,
    );
    report.line('');
    report.table(['load', 'server', 'requests/s', 'p50', 'p99', 'CPU ms/request', 'non-2xx'], rows);
    if (after)
      report.line(
        `Deliveries meanwhile: ${after.attempts - before.attempts} attempts made (each refused), ${after.pending} pending at the end. Each generate on the subscribed server adds ${SUBSCRIPTIONS} deliveries.`,
      );
  } finally {
    for (const s of [hooked, plain]) {
      await stop(s.child);
      fs.rmSync(s.dataDir, { recursive: true, force: true });
    }
    void cpu0;
  }
}

module.exports = { run };
