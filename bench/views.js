// Magic Link views: GET /l/<token> with a session cookie, each one counted atomically in SQLite,
// under 50 concurrent clients, against a bare Node http server answering the same route with a
// page of the same size, in the same run. Both servers run in their own process.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { paperlink, paired, serve, start, stop } = require('./processes');
const { FLOOR, floorEnv, LEAN, leanEnv } = require('./floor');

const root = path.resolve(__dirname, '..');
const CONNECTIONS = 50;
const SECONDS = 10;
// ours and the lean server: rounds in turns (see paired)
const ROUND = 4;
const ROUNDS = 5;

const BARE = `
const http = require('node:http');
const page = Buffer.from(process.env.PAGE, 'base64');
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/l/')) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(page);
  } else { res.writeHead(404); res.end(); }
});
server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

function load(url, headers, seconds = SECONDS) {
  return autocannon({ url, headers, connections: CONNECTIONS, duration: seconds });
}

/**
 * A view is counted once per viewing session (reloads within it are the same view), so each request
 * comes from a recipient of its own: sessions made in the database as a right code makes them,
 * one cookie per request, never used twice.
 */
function sessions(dataDir, linkId, n) {
  const crypto = require('node:crypto');
  const SQLite = require('../dist/src/db/sqlite-module').default;
  const db = new SQLite(path.join(dataDir, 'paperlink.db'));
  const insert = db.prepare(
    'insert into link_sessions (token_hash, link_id, email, created_at, expires_at, view_until) values (?, ?, ?, ?, ?, null)',
  );
  const now = new Date();
  const until = new Date(now.getTime() + 12 * 3600 * 1000).toISOString();
  const cookies = [];
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const token = crypto.randomBytes(24).toString('base64url');
      insert.run(
        crypto.createHash('sha256').update(token).digest('hex'),
        linkId,
        'bench@example.com',
        now.toISOString(),
        until,
      );
      cookies.push(`paperlink_link=${token}`);
    }
  })();
  db.close();
  let next = 0;
  return (url, seconds = SECONDS) =>
    autocannon({
      url,
      connections: CONNECTIONS,
      duration: seconds,
      requests: [
        { setupRequest: (req) => ({ ...req, headers: { ...req.headers, cookie: cookies[next++ % cookies.length] } }) },
      ],
    });
}

/** Signs in to the link at `link` (a path) the way a recipient does: asks for a code, reads it from the outbox, types it. Resolves with the session's cookie. */
async function signIn(url, dataDir, link) {
  await fetch(`${url}${link}/code`, { method: 'POST', redirect: 'manual' });
  const outbox = path.join(dataDir, 'outbox');
  const code = fs
    .readdirSync(outbox)
    .map((f) => /Your code is (\d{6})/.exec(fs.readFileSync(path.join(outbox, f), 'utf8')))
    .find(Boolean)[1];
  const verified = await fetch(`${url}${link}/verify`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `code=${code}`,
  });
  return verified.headers.get('set-cookie').split(';')[0];
}

/** A Magic Link to a postcard with a million views, signed in as its recipient: what a view request sends. */
async function signedInView(url, dataDir, key) {
  const headers = { 'x-service-api-token': key, 'content-type': 'application/json' };
  const values = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8'));
  const made = await (
    await fetch(`${url}/v1/generate`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        template_id: 'tmpl_example_postcard',
        merge_parameters: values,
        destinations: {
          inkit_storage: { name: 'bench' },
          magic_link: { recipient_email: 'bench@example.com', expire_after_n_views: 1000000 },
        },
      }),
    })
  ).json();
  const link = new URL(made.destinations.magic_link.url).pathname;
  const cookie = await signIn(url, dataDir, link);
  const sample = await fetch(`${url}${link}`, { headers: { cookie } });
  if (sample.status !== 200) throw new Error(`a view answered ${sample.status}`);
  return { made, link, cookie, page: Buffer.from(await sample.text()) };
}

async function run(report) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-views-'));
  const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir);
  const { child, url } = await serve(dataDir);
  let bare;
  let floor;
  let lean;
  try {
    const headers = { 'x-service-api-token': key, 'content-type': 'application/json' };
    const { made, link, page } = await signedInView(url, dataDir, key);
    const views = sessions(dataDir, made.magic_link_piece_id, 1_000_000);

    bare = await start(['-e', BARE], { PAGE: page.toString('base64') });
    process.stderr.write(`  bare node http, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await load(`${bare.url}${link}`, {});
    const base = await load(`${bare.url}${link}`, {});
    floor = await start(['-e', FLOOR], floorEnv(dataDir, 'view', page));
    process.stderr.write(`  the durable floor, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await load(`${floor.url}${link}`, {});
    const least = await load(`${floor.url}${link}`, {});
    lean = await start(['-e', LEAN], await leanEnv(dataDir, 'view', page));
    process.stderr.write(
      `  the lean complete view and ours, in turns, ${ROUNDS} rounds of ${ROUND} s each, ${CONNECTIONS} clients…\n`,
    );
    await views(`${lean.url}${link}`, 2);
    await views(`${url}${link}`, 2);
    const compared = await paired(
      { pid: child.pid, load: () => views(`${url}${link}`, ROUND) },
      { pid: lean.child.pid, load: () => views(`${lean.url}${link}`, ROUND) },
      ROUNDS,
    );
    const ours = compared.ours.result;
    const leanest = compared.baseline.result;
    if (
      compared.all.ours.some((r) => r.result.non2xx || r.result.errors) ||
      base.non2xx ||
      compared.all.baseline.some((r) => r.result.non2xx)
    )
      throw new Error('some views were not answered 2xx');
    const counted = (await (await fetch(`${url}/v1/magic_links/${made.magic_link_piece_id}`, { headers })).json())
      .views_used;

    const rate = (r) => r['2xx'] / r.duration;
    report.section(`Magic Link views: authenticated GET /l/<token>, ${CONNECTIONS} concurrent clients (SQLite)`);
    report.line(
      `Each view comes from a recipient session of its own (a reload within a view is not counted again, so each request uses a fresh session, made in the database beforehand), checks the session, starts its view and counts it with two conditional UPDATEs, and renders the viewer page (${(page.length / 1024).toFixed(1)} KB). The baseline is a bare Node \`http\` server answering the same route with the same page, no checks. Both run in their own process; autocannon drives them from this one.`,
    );
    report.line('');
    report.table(
      ['what', 'requests/s', 'p50 latency', 'p99 latency', 'CPU µs/request'],
      [
        [
          '(a) bare node http, same page',
          rate(base).toFixed(0),
          `${base.latency.p50} ms`,
          `${base.latency.p99} ms`,
          '–',
        ],
        [
          '(b) Paperlink authenticated views',
          rate(ours).toFixed(0),
          `${ours.latency.p50} ms`,
          `${ours.latency.p99} ms`,
          compared.ours.cpuUs.toFixed(0),
        ],
        [
          '(c) the floor: bare http + one grouped durable count and log, no checks',
          rate(least).toFixed(0),
          `${least.latency.p50} ms`,
          `${least.latency.p99} ms`,
          '–',
        ],
        [
          '(d) lean complete: the same lookups and writes as (b) on a copy of our database, raw statements, bare http',
          rate(leanest).toFixed(0),
          `${leanest.latency.p50} ms`,
          `${leanest.latency.p99} ms`,
          compared.baseline.cpuUs.toFixed(0),
        ],
      ],
    );
    report.line(
      `ratio (d)/(a): ${(rate(leanest) / rate(base)).toFixed(2)} — the same lookups and writes with nothing around them (no framework, no query builder, no events); **(b)/(d): ${compared.ratio.toFixed(2)}** (target >= 0.8; the median of ${ROUNDS} rounds taken in turns: ${compared.ratios.map((r) => r.toFixed(2)).join(', ')}); (b) and (d) rows are each one's median round`,
    );
    report.line(
      `ratio (c)/(a): ${(rate(least) / rate(base)).toFixed(2)} — what any durable view count keeps of the bare rate here; (b)/(c): ${(rate(ours) / rate(least)).toFixed(2)}`,
    );
    report.line(`ratio (b)/(a): ${(rate(ours) / rate(base)).toFixed(2)}; views counted in the database: ${counted}`);
  } finally {
    if (bare) await stop(bare.child);
    if (floor) await stop(floor.child);
    if (lean) await stop(lean.child);
    await stop(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

module.exports = { run, signedInView, signIn, sessions, BARE };
