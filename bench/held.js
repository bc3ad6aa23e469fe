// Cost flat in the work held (issue 45): `serve --processes 1` started on a data dir that holds N
// active Magic Links (copies of one real, sent link, each waiting for a deadline 30 days away) and
// 100,000 postcards, on SQLite and on PostgreSQL. For each N: how long until /readyz answers, the
// RSS and the idle CPU (ms of CPU per second) once ready, and how late the expiries come when
// 10,000 of the links (all of them, when N is smaller) fall due in the same second: until each is
// `expired` with its `magic_link.expired` webhook queued (one subscriber, a local endpoint answering 204). Beside them, the floor: the same server
// on an empty data dir, and one UPDATE statement expiring the same rows (no events, rolled back).
// BENCH_HELD (sizes, e.g. 10000), BENCH_HELD_POSTCARDS, BENCH_HELD_BACKENDS (sqlite,postgres) narrow
// a run; BENCH_HELD_NO_WEBHOOK=1 leaves the subscription out (the burst without the dispatcher's work).
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { sql } = require('kysely');
const { serve, stop, cpuMs, rssMb } = require('./processes');
const { freshDatabase, startPostgres, stopPostgres } = require('../scripts/throwaway-pg');

const dist = (p) => require(path.resolve(__dirname, '..', 'dist/src', p));
const SIZES = (process.env.BENCH_HELD || '1000,10000,100000,1000000').split(',').map(Number);
const POSTCARDS = Number(process.env.BENCH_HELD_POSTCARDS || 100_000);
const BURST = 10_000;
/** Seconds after the server is started that the burst falls due: after the idle window. */
const BURST_AFTER_S = 30;
const IDLE_S = 10;
const DAY = 86_400_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** The id of the i-th copy (1-based): in id order, so the first BURST are a range. */
const heldId = (i) => `ml_held_${10_000_000 + i}`;

/** Copies the row `seedId` of `table` `count` times in one statement, `expr(column)` giving each column of copy `i`. */
async function copyRows(db, table, seedId, count, expr) {
  const cols = Object.keys(await db.selectFrom(table).selectAll().where('id', '=', seedId).executeTakeFirstOrThrow());
  await sql`with recursive seq(i) as (select 1 union all select i + 1 from seq where i < ${sql.lit(count)})
    insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
    select ${sql.join(cols.map(expr))} from seq cross join ${sql.table(table)} s where s.id = ${seedId}`.execute(db);
}

/** Makes the data dir: one link made and sent as the API makes it, one postcard, and their copies. */
async function dataset(backend, n, pgUrl, receiver) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-held-'));
  const env = {
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(backend === 'postgres' ? { DATABASE_URL: await freshDatabase(pgUrl, 'paperlink_held') } : {}),
  };
  const config = dist('config').loadConfig(
    {},
    { dataDir, databaseUrl: env.DATABASE_URL, logLevel: 'silent', webhookAllowPrivate: true },
  );
  const service = await dist('service').createService(config, { log: () => undefined });
  const { db } = service.database;
  try {
    await service.apps.magicLink.put({});
    // a subscriber, so that each expiry queues its webhook
    if (!process.env.BENCH_HELD_NO_WEBHOOK)
      await service.webhooks.create({ url: receiver, events: ['magic_link.expired'] });
    const letter = dist('templates/store').EXAMPLE_IDS.letter;
    const variables = (await service.templates.load(letter)).variables;
    const made = await service.documents.generate(
      {
        template_id: letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: 'held@example.com', retain_from_created: { days: 30 } } },
      },
      { keyId: null, name: 'bench' },
    );
    const seed = made.magic_link_piece_id;
    const expires = new Date(Date.now() + 30 * DAY).toISOString();
    // as its first step leaves it: sent, waiting for its deadline
    await db.updateTable('magic_links').set({ expires_at: expires, wake_at: expires }).where('id', '=', seed).execute();
    const now = new Date().toISOString();
    await db
      .insertInto('postcards')
      .values({
        id: 'pc_held_seed',
        status: 'rendered',
        template_id: letter,
        contact: JSON.stringify({ first_name: 'Held' }),
        address: JSON.stringify({ line_1: '1 Main St', city: 'Springfield', state: 'OR', zip: '97477', country: 'US' }),
        custom: '{}',
        token_id: 'tok_bench',
        idempotency_key: null,
        document_id: null,
        failure_reason: null,
        warnings: '[]',
        created_at: now,
        updated_at: now,
        claimed_by: null,
        wake_at: null,
        render_attempts: 0,
      })
      .execute();
    const started = Date.now();
    if (n > 0)
      await copyRows(db, 'magic_links', seed, n, (c) =>
        c === 'id'
          ? sql`'ml_held_' || (10000000 + i)`
          : c === 'token_hash'
            ? sql`'held-' || i`
            : c === 'render_id'
              ? sql`null`
              : sql.ref(`s.${c}`),
      );
    if (POSTCARDS > 0)
      await copyRows(db, 'postcards', 'pc_held_seed', POSTCARDS, (c) =>
        c === 'id' ? sql`'pc_held_' || (10000000 + i)` : sql.ref(`s.${c}`),
      );
    // as a database that has held its rows for a while: vacuumed, its statistics current (else
    // autovacuum runs through the measurement)
    if (backend === 'postgres') await sql`vacuum analyze`.execute(db);
    process.stderr.write(
      `    ${n} links and ${POSTCARDS} postcards written in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    return { dataDir, env, service };
  } catch (err) {
    await service.close();
    throw err;
  }
}

/** The first `count` copies fall due at `at`. */
const burstAt = (db, count, at) =>
  db
    .updateTable('magic_links')
    .set({ expires_at: at, wake_at: at })
    .where('id', '>=', heldId(1))
    .where('id', '<=', heldId(count))
    .execute();

/** One statement expiring the burst, rolled back: the floor of the same writes (no events, no steps). */
async function floorMs(database, count) {
  const started = process.hrtime.bigint();
  await database
    .inTransaction(async (trx) => {
      await trx
        .updateTable('magic_links')
        .set({ status: 'expired', ended_at: new Date().toISOString(), wake_at: null })
        .where('id', '>=', heldId(1))
        .where('id', '<=', heldId(count))
        .execute();
      throw new Error('rollback');
    })
    .catch(() => undefined);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Starts the server on the data dir and measures it; the burst falls due BURST_AFTER_S after the start. */
async function measure(set, n) {
  const { db } = set.service.database;
  const burst = Math.min(BURST, n);
  const t0 = Date.now();
  const due = new Date(t0 + BURST_AFTER_S * 1000);
  if (burst) await burstAt(db, burst, due.toISOString());
  const floor = burst ? await floorMs(set.service.database, burst) : undefined;
  const spawned = Date.now();
  const server = await serve(set.dataDir, { processes: 1, env: set.env });
  let readyMs;
  try {
    for (;;) {
      const res = await fetch(`${server.url}/readyz`).catch(() => undefined);
      if (res?.status === 200) break;
      await sleep(10);
    }
    readyMs = Date.now() - spawned;
    await sleep(2_000);
    const cpu = cpuMs(server.child.pid);
    await sleep(IDLE_S * 1000);
    const idle = (cpuMs(server.child.pid) - cpu) / IDLE_S;
    const rss = rssMb(server.child.pid);
    if (Date.now() > due.getTime()) throw new Error('the idle window ran into the burst: raise BURST_AFTER_S');
    let lateMs;
    let burstCpu;
    if (burst) {
      await sleep(due.getTime() - Date.now());
      const cpuBefore = cpuMs(server.child.pid);
      for (;;) {
        const left = await db
          .selectFrom('magic_links')
          .select((e) => e.fn.countAll().as('n'))
          .where('id', '>=', heldId(1))
          .where('id', '<=', heldId(burst))
          .where('status', '!=', 'expired')
          .executeTakeFirstOrThrow();
        if (Number(left.n) === 0) break;
        if (Date.now() - due.getTime() > 600_000) throw new Error('the burst did not expire within 10 minutes');
        await sleep(50);
      }
      lateMs = Date.now() - due.getTime();
      burstCpu = (cpuMs(server.child.pid) - cpuBefore) / burst;
      const events = await db
        .selectFrom('events')
        .select((e) => e.fn.countAll().as('n'))
        .where('type', '=', 'magic_link.expired')
        .executeTakeFirstOrThrow();
      if (!process.env.BENCH_HELD_NO_WEBHOOK && Number(events.n) < burst)
        throw new Error(`only ${events.n} magic_link.expired events for ${burst} expiries`);
    }
    return { readyMs, rss, idle, burst, lateMs, burstCpu, floor };
  } finally {
    await stop(server.child);
  }
}

async function run(report) {
  const pg = await startPostgres();
  const rows = [];
  const receiver = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;
  try {
    for (const backend of (process.env.BENCH_HELD_BACKENDS || 'sqlite,postgres').split(',')) {
      for (const n of [0, ...SIZES]) {
        process.stderr.write(`  held work: ${backend}, ${n} links…\n`);
        const set = await dataset(backend, n, pg.url, receiverUrl);
        try {
          const m = await measure(set, n);
          rows.push([
            backend === 'sqlite' ? 'SQLite' : 'PostgreSQL',
            n === 0 ? '0 (floor: empty data dir)' : n.toLocaleString('en-US'),
            `${(m.readyMs / 1000).toFixed(2)} s`,
            `${m.rss.toFixed(0)} MB`,
            m.idle.toFixed(1),
            m.burst
              ? `${m.burst.toLocaleString('en-US')} in ${(m.lateMs / 1000).toFixed(2)} s · ${m.burstCpu.toFixed(2)} CPU ms each (floor ${(m.floor / 1000).toFixed(2)} s)`
              : '–',
          ]);
          process.stderr.write(`    ${rows[rows.length - 1].join(' | ')}\n`);
        } finally {
          await set.service.close();
          fs.rmSync(set.dataDir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    stopPostgres(pg);
    receiver.close();
  }
  report.section('Held work: a server started on N waiting Magic Links and 100,000 postcards');
  report.line(
    `\`serve --processes 1\`. Each link waits for a deadline 30 days away; ${POSTCARDS.toLocaleString('en-US')} postcards are stored. Ready: from spawning the server until /readyz answers. RSS and idle CPU (ms of CPU per second, server and workers) over ${IDLE_S} s once ready. Burst: ${BURST.toLocaleString('en-US')} of the links (all, when fewer) fall due in the same second; how long after it until every one is \`expired\` with its \`magic_link.expired\` webhook queued (one subscription, to a local endpoint answering 204), with the server's CPU ms per expiry (PostgreSQL's own CPU not counted), beside one UPDATE statement expiring the same rows (no events, rolled back).`,
  );
  report.line('');
  report.table(['database', 'links held', 'ready after', 'RSS', 'idle CPU ms/s', 'burst expired after'], rows);
}

module.exports = { run };
