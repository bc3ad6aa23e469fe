// More than one process: Magic Link views and postcard intake with `serve --processes 1` and
// `--processes 2`, on SQLite and on PostgreSQL, beside the bare Node http server of views.js and
// postcards.js (one process, nothing stored), in the same run. CPU ms per request counts every
// process of the server (primary and workers), from /proc. Then the held-work curve (held.js).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { paperlink, serve, start, stop, cpuMs } = require('./processes');
const { signedInView, BARE: BARE_VIEW } = require('./views');
const { BARE: BARE_INTAKE } = require('./postcards');
const { freshDatabase, startPostgres, stopPostgres } = require('../scripts/throwaway-pg');

const CONNECTIONS = 50;
const SECONDS = 10;

/** Load for SECONDS after a 2 s warm-up; requests/s, p99 and the server's CPU ms per request. */
async function measure(target, pid) {
  await autocannon({ ...target, connections: CONNECTIONS, duration: 2 });
  const before = pid ? cpuMs(pid) : 0;
  const r = await autocannon({ ...target, connections: CONNECTIONS, duration: SECONDS });
  if (r.non2xx || r.errors) throw new Error(`${target.url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  const rate = r['2xx'] / r.duration;
  return { rate, p99: r.latency.p99, cpu: pid ? (cpuMs(pid) - before) / r['2xx'] : undefined };
}

async function run(report) {
  const pg = await startPostgres();
  const rows = [];
  try {
    // the baselines: one bare process each
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-scale-'));
    const key = paperlink(['keys', 'create', '--name', 'bench'], dir);
    const first = await serve(dir);
    const view = await signedInView(first.url, dir, key);
    await stop(first.child);
    fs.rmSync(dir, { recursive: true, force: true });
    const intakeBody = (token, template) =>
      JSON.stringify({
        api_token: token,
        template_id: template,
        first_name: 'Jordan',
        last_name: 'Alvarez',
        address_line_1: '742 Evergreen Terrace',
        address_city: 'Springfield',
        address_state: 'OR',
        address_zip: '97477',
        address_country: 'US',
        message: 'See you on the slopes',
      });
    const bareView = await start(['-e', BARE_VIEW], { PAGE: view.page.toString('base64') });
    const bareIntake = await start(['-e', BARE_INTAKE]);
    try {
      process.stderr.write('  bare servers…\n');
      const bv = await measure({ url: `${bareView.url}${view.link}` }, bareView.child.pid);
      const bi = await measure(
        {
          url: `${bareIntake.url}/postcards`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: intakeBody('x', 'x'),
        },
        bareIntake.child.pid,
      );
      rows.push(['bare node http (1 process)', '–', fmt(bv), fmt(bi)]);
    } finally {
      await stop(bareView.child);
      await stop(bareIntake.child);
    }

    for (const backend of ['sqlite', 'postgres']) {
      for (const processes of [1, 2]) {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-scale-'));
        const env =
          backend === 'postgres'
            ? { DATABASE_URL: await freshDatabase(pg.url, 'paperlink_bench'), STORAGE: 'database' }
            : {};
        const cli = (args) => paperlink(args, dataDir, env);
        const apiKey = cli(['keys', 'create', '--name', 'bench']);
        const token = cli(['tokens', 'create', '--kind', 'postcard', '--name', 'bench']);
        const tiny = path.join(dataDir, 'tiny.xml');
        fs.writeFileSync(
          tiny,
          '<document size="postcard-6x4"><body><p>Hello {{first_name}}, {{message}}</p></body></document>',
        );
        const templateId = cli(['templates', 'add', tiny]);
        const server = await serve(dataDir, { processes, env });
        try {
          process.stderr.write(`  ${backend}, --processes ${processes}…\n`);
          const v = await signedInView(server.url, dataDir, apiKey);
          const views = await measure(
            { url: `${server.url}${v.link}`, headers: { cookie: v.cookie } },
            server.child.pid,
          );
          const intake = await measure(
            {
              url: `${server.url}/postcards`,
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: intakeBody(token, templateId),
            },
            server.child.pid,
          );
          rows.push([
            `Paperlink on ${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
            String(processes),
            fmt(views),
            fmt(intake),
          ]);
        } finally {
          await stop(server.child);
          fs.rmSync(dataDir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    stopPostgres(pg);
  }
  report.section(
    `More than one process: views and postcard intake with --processes 1 and 2, ${CONNECTIONS} concurrent clients`,
  );
  report.line(
    `Each cell: requests/s, p99, and the server's CPU ms per request (all its processes). The load generator runs on the same ${os.availableParallelism()} cores. Postcards received during the intake are rendered in the background meanwhile.`,
  );
  report.line('');
  report.table(['server', 'processes', 'views: req/s · p99 · CPU ms/req', 'intake: req/s · p99 · CPU ms/req'], rows);
  const by = (label, p) => rows.find((r) => r[0] === label && r[1] === String(p));
  for (const label of ['Paperlink on SQLite', 'Paperlink on PostgreSQL']) {
    const one = by(label, 1);
    const two = by(label, 2);
    if (one && two)
      report.line(
        `${label}: 2 processes / 1 process — views ${(parseFloat(two[2]) / parseFloat(one[2])).toFixed(2)}, intake ${(parseFloat(two[3]) / parseFloat(one[3])).toFixed(2)}`,
      );
  }
  await require('./held').run(report);
}

function fmt(m) {
  return `${m.rate.toFixed(0)} · ${m.p99} ms · ${m.cpu === undefined ? '–' : m.cpu.toFixed(2)}`;
}

module.exports = { run };
