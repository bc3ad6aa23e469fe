// Postcard intake: accepted postcards per second (202 after a durable, grouped commit) under 50
// concurrent clients, against a bare Node http server that parses the same JSON and answers 202
// without storing anything, in the same run. Both servers run in their own process.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { paperlink, serve, start, stop } = require('./processes');
const { FLOOR, floorEnv, LEAN, leanEnv } = require('./floor');

const CONNECTIONS = 50;
const SECONDS = 10;

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
  const lean = await start(['-e', LEAN], leanEnv(dataDir, 'postcard'));
  try {
    const load = (target) =>
      autocannon({
        url: target,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections: CONNECTIONS,
        duration: SECONDS,
      });
    process.stderr.write(`  bare node http, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await autocannon({
      url: `${bare.url}/postcards`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: CONNECTIONS,
      duration: 2,
    });
    const base = await load(`${bare.url}/postcards`);
    process.stderr.write(`  the durable floor, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await autocannon({
      url: `${floor.url}/postcards`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: CONNECTIONS,
      duration: 2,
    });
    const least = await load(`${floor.url}/postcards`);
    process.stderr.write(`  the lean complete intake, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await autocannon({
      url: `${lean.url}/postcards`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: CONNECTIONS,
      duration: 2,
    });
    const leanest = await load(`${lean.url}/postcards`);
    if (leanest.non2xx) throw new Error(`the lean server answered ${leanest.non2xx} requests with non-2xx`);
    process.stderr.write(`  POST /postcards, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
    await autocannon({
      url: `${url}/postcards`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: CONNECTIONS,
      duration: 2,
    });
    const ours = await load(`${url}/postcards`);
    if (ours.non2xx || ours.errors) throw new Error(`${ours.non2xx} answers were not 2xx, ${ours.errors} errors`);
    const rate = (r) => r['2xx'] / r.duration;
    report.section(`Postcard intake: POST /postcards, ${CONNECTIONS} concurrent clients (SQLite, synchronous=FULL)`);
    report.line(
      "Each request is checked (token, every rule, the template's required variables), committed durably in a group with the requests of the same moment, and only then answered 202; rendering runs afterwards in the same process (a one-line template, two at a time). The baseline is a bare Node `http` server that parses the same JSON and answers 202 without storing anything. Both run in their own process.",
    );
    report.line('');
    report.table(
      ['what', 'requests/s', 'p50 latency', 'p99 latency'],
      [
        [
          '(a) bare node http, parse and 202',
          rate(base).toFixed(0),
          `${base.latency.p50} ms`,
          `${base.latency.p99} ms`,
        ],
        ['(b) Paperlink accepted postcards', rate(ours).toFixed(0), `${ours.latency.p50} ms`, `${ours.latency.p99} ms`],
        [
          '(c) the floor: bare http + one grouped durable insert, no checks',
          rate(least).toFixed(0),
          `${least.latency.p50} ms`,
          `${least.latency.p99} ms`,
        ],
        [
          "(d) lean complete: token, every rule, the template's variables, insert on our database, raw statements, bare http, no rendering",
          rate(leanest).toFixed(0),
          `${leanest.latency.p50} ms`,
          `${leanest.latency.p99} ms`,
        ],
      ],
    );
    report.line(
      `ratio (d)/(a): ${(rate(leanest) / rate(base)).toFixed(2)} — the same checks and insert with nothing around them, and no rendering; **(b)/(d): ${(rate(ours) / rate(leanest)).toFixed(2)}** (target >= 0.8)`,
    );
    report.line(`ratio (b)/(a): ${(rate(ours) / rate(base)).toFixed(2)}; ${ours['2xx']} postcards accepted`);
    report.line(
      `ratio (c)/(a): ${(rate(least) / rate(base)).toFixed(2)} — what any durable intake keeps of the bare rate here; (b)/(c): ${(rate(ours) / rate(least)).toFixed(2)}`,
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
