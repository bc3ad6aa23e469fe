// Postcard intake: accepted postcards per second (202 after a durable, grouped commit) under 50
// concurrent clients, against a bare Node http server that parses the same JSON and answers 202
// without storing anything, in the same run. Both servers run in their own process.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { cpuMs, paired, paperlink, serve, start, stop } = require('./processes');
const SQLite = require('../dist/src/db/sqlite-module').default;
const { FLOOR, floorEnv, LEAN, leanEnv } = require('./floor');

const CONNECTIONS = 50;
const SECONDS = 10;
// ours and the lean server: rounds in turns (see paired)
const ROUND = 4;
const ROUNDS = 5;
// how long the rendering of what was accepted is watched after the load
const DRAIN = 5;

const BARE = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    try { JSON.parse(body); } catch { res.writeHead(400); return res.end(); }
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end('{"id":"pc_01m82kzq5az78r9b7p2fxgxka8","status":"received"}');
  });
});
server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

async function run(report) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-postcards-'));
  const cli = (args) => paperlink(args, dataDir);
  cli(['keys', 'create', '--name', 'bench']);
  const token = cli(['tokens', 'create', '--kind', 'postcard', '--name', 'bench']);
  const tiny = path.join(dataDir, 'tiny.xml');
  fs.writeFileSync(
    tiny,
    '<document size="postcard-6x4"><body><p>Hello {{first_name}}, {{message}}</p></body></document>',
  );
  const templateId = cli(['templates', 'add', tiny]);
  const body = JSON.stringify({
    api_token: token,
    template_id: templateId,
    first_name: 'Jordan',
    last_name: 'Alvarez',
    email: 'jordan@example.com',
    address_line_1: '742 Evergreen Terrace',
    address_city: 'Springfield',
    address_state: 'OR',
    address_zip: '97477',
    address_country: 'US',
    source: 'bench',
    message: 'See you on the slopes',
  });
  const { child, url } = await serve(dataDir);
  const bare = await start(['-e', BARE]);
  const floor = await start(['-e', FLOOR], floorEnv(dataDir, 'postcard'));
  const lean = await start(['-e', LEAN], await leanEnv(dataDir, 'postcard'));
  try {
    const load = (target, seconds = SECONDS) =>
      autocannon({
        url: target,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections: CONNECTIONS,
        duration: seconds,
      });
    process.stderr.write(`  bare node http, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await load(`${bare.url}/postcards`, 2);
    const base = await load(`${bare.url}/postcards`);
    process.stderr.write(`  the durable floor, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await load(`${floor.url}/postcards`, 2);
    const least = await load(`${floor.url}/postcards`);
    process.stderr.write(
      `  the lean complete intake and POST /postcards, ${CONNECTIONS} clients, rounds of ${ROUND} s in turns…\n`,
    );
    await load(`${lean.url}/postcards`, 2);
    const warm = await load(`${url}/postcards`, 2);
    const compared = await paired(
      { pid: child.pid, load: () => load(`${url}/postcards`, ROUND) },
      { pid: lean.child.pid, load: () => load(`${lean.url}/postcards`, ROUND) },
      ROUNDS,
    );
    const ours = compared.ours.result;
    const leanest = compared.baseline.result;
    if (compared.all.baseline.some((r) => r.result.non2xx))
      throw new Error('the lean server answered requests with non-2xx');
    if (compared.all.ours.some((r) => r.result.non2xx || r.result.errors))
      throw new Error('some postcards were not answered 202');
    // what was accepted is rendered once the load is gone: the rate and cost of that, over DRAIN s
    const db = new SQLite(path.join(dataDir, 'paperlink.db'), { readonly: true });
    const count = (status) => db.prepare('select count(*) n from postcards where status = ?').get(status).n;
    // (the lean server writes into the same database: what ours accepted is what it answered 202)
    const accepted = [warm, ...compared.all.ours.map((r) => r.result)].reduce((n, r) => n + r['2xx'], 0);
    const rendered0 = count('rendered');
    const cpu0 = cpuMs(child.pid);
    process.stderr.write(`  rendering what was accepted, ${DRAIN} s…\n`);
    await new Promise((r) => setTimeout(r, DRAIN * 1000));
    const drained = count('rendered') - rendered0;
    const drainCpuMs = (cpuMs(child.pid) - cpu0) / Math.max(1, drained);
    db.close();

    const rate = (r) => r['2xx'] / r.duration;
    report.section(`Postcard intake: POST /postcards, ${CONNECTIONS} concurrent clients (SQLite, synchronous=FULL)`);
    report.line(
      "Each request is checked (token, every rule, the template's required variables), committed durably in a group with the requests of the same moment, and only then answered 202. Rendering runs afterwards in the same process; while requests keep it busy, postcards render one at a time with a pause before each (docs/postcards.md), and at full speed once the load drops. The baseline (a) is a bare Node `http` server that parses the same JSON and answers 202 without storing anything. Ours (b) and the lean complete intake (d) are measured in rounds taken in turns, the other server stopped meanwhile; the median round of each is shown. Every server runs in its own process.",
    );
    report.line('');
    const row = (what, r, cpuUs) => [
      what,
      rate(r).toFixed(0),
      `${r.latency.p50} ms`,
      `${r.latency.p99} ms`,
      cpuUs === undefined ? '–' : cpuUs.toFixed(0),
    ];
    report.table(
      ['what', 'requests/s', 'p50 latency', 'p99 latency', 'CPU µs/request'],
      [
        row('(a) bare node http, parse and 202', base),
        row('(b) Paperlink accepted postcards', ours, compared.ours.cpuUs),
        row('(c) the floor: bare http + one grouped durable insert, no checks', least),
        row(
          "(d) lean complete: token, every rule, the template's variables, insert on a copy of our database, raw statements, bare http, no rendering",
          leanest,
          compared.baseline.cpuUs,
        ),
      ],
    );
    report.line(
      `**(b)/(d): ${compared.ratio.toFixed(2)}** (target >= 0.8; the median of the rounds' ratios ${compared.ratios.map((r) => r.toFixed(2)).join(', ')}); (d)/(a): ${(rate(leanest) / rate(base)).toFixed(2)} — the same checks and insert with nothing around them, and no rendering`,
    );
    report.line(
      `(b)/(a): ${(rate(ours) / rate(base)).toFixed(2)}; (c)/(a): ${(rate(least) / rate(base)).toFixed(2)} — what any durable intake keeps of the bare rate here`,
    );
    report.line(
      `After the rounds: ${accepted} postcards accepted, ${rendered0} of them rendered during the load; then, with no load, ${(drained / DRAIN).toFixed(0)} postcards rendered per second (${drainCpuMs.toFixed(1)} CPU ms each, both render threads; RENDER_THREADS=${process.env.RENDER_THREADS ?? 'default'}).`,
    );
  } finally {
    await stop(bare.child);
    await stop(floor.child);
    await stop(lean.child);
    await stop(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

module.exports = { run, BARE };
