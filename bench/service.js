// End to end: POST /v1/generate with storage (SQLite, files on disk) at 1, 4 and 16 concurrent
// clients, with RENDER_THREADS=1 and =2, each server in its own process as `paperlink serve` runs.
// Beside each: the rate one render thread manages in this process (so the expectation is that
// rate × the render threads the machine leaves free), peak RSS, and how long a cheap request
// (/healthz) waits while documents render, beside its wait on the idle server.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const autocannon = require('autocannon');
const { paperlink, start, stop } = require('./processes');
const { letterSlice, poolRate, values } = require('./render');

const root = path.resolve(__dirname, '..');
const cliJs = path.join(root, 'dist/src/cli.js');
// each row: CYCLES times, a slice of the reference (one thread rendering in this process) and then
// a slice of load, so that both see the machine at the same speed: on a shared machine it drifts
// by half within seconds, and a reference measured before the row credited or blamed the row with
// the drift (0.54–0.62 in three runs of the same build)
const CYCLES = 4;
const REFERENCE_SECONDS = 1;
const LOAD_SECONDS = 2;

/** Peak resident set size of a process, from Linux's VmHWM. */
function peakRss(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Resident memory of a process and its threads now (render threads are threads of the same process). */
function rssNow(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

const TICK_MS = 1000 / 100; // Linux's USER_HZ

/**
 * CPU ms used so far by the threads of a process, split into render threads (they run at nice 10,
 * see src/templates/worker.ts) and the rest (the HTTP thread, V8's and libuv's helpers). Threads
 * that ended are counted in neither, which here is only render threads replaced mid-run.
 */
function threadCpu(pid) {
  const out = { render: 0, other: 0 };
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // after the name: state is field 3, utime 14, stime 15, nice 19 (man 5 proc)
    const ms = (Number(f[11]) + Number(f[12])) * TICK_MS;
    if (Number(f[16]) > 0) out.render += ms;
    else out.other += ms;
  }
  return out;
}

// the prober: its own process, so that the load generator's work in this one does not delay its
// requests or its clock. On "start" it GETs /healthz every 20 ms; on "stop" it prints the
// latencies in ms and the CPU ms it used meanwhile, as one line of JSON.
const PROBER = `
const url = process.argv[1];
let on = false;
async function loop() {
  const latencies = [];
  const cpu0 = process.cpuUsage();
  while (on) {
    const t = performance.now();
    await (await fetch(url + '/healthz')).arrayBuffer();
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(JSON.stringify({ latencies, cpuMs: (cpu.user + cpu.system) / 1000 }) + '\\n');
}
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'start') { on = true; void loop(); }
  else if (line === 'stop') on = false;
});
// warm: the first fetch loads and compiles Node's HTTP client (tens of ms)
(async () => {
  for (let i = 0; i < 20; i++) await (await fetch(url + '/healthz')).arrayBuffer();
  process.stdout.write('ready\\n');
})();
`;

/** A prober for the server at `url`, once warm: `during(promise)` probes until it settles. */
async function prober(url) {
  const child = spawn(process.execPath, ['-e', PROBER, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  await new Promise((resolve) => lines.once('line', resolve));
  return {
    /** The latencies in ms of /healthz while `until` was pending, and the prober's CPU ms. */
    async during(until) {
      const answer = new Promise((resolve) => lines.once('line', (l) => resolve(JSON.parse(l))));
      child.stdin.write('start\n');
      await until.catch(() => undefined);
      child.stdin.write('stop\n');
      return answer;
    },
    close: () => child.kill(),
  };
}

async function server(threads) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-'));
  const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir);
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE] : [];
  const { child, url } = await start(
    [...profile, cliJs, 'serve', '--port', '0', '--data-dir', dataDir, '--processes', '1'],
    {
      LOG_LEVEL: 'warn',
      RENDER_THREADS: String(threads),
    },
  );
  const headers = { 'x-service-api-token': key };
  const form = new FormData();
  form.append(
    'file',
    new Blob([fs.readFileSync(path.join(__dirname, 'letter.xml'))], { type: 'application/xml' }),
    'letter.xml',
  );
  form.append(
    'logo',
    new Blob([fs.readFileSync(path.join(root, 'examples/letter/logo.png'))], { type: 'image/png' }),
    'logo.png',
  );
  const created = await fetch(`${url}/v1/templates`, { method: 'POST', headers, body: form });
  if (created.status !== 201) throw new Error(`template upload failed: ${created.status} ${await created.text()}`);
  const template = (await created.json()).id;
  const probe = await prober(url);
  return {
    child,
    url,
    headers,
    template,
    probe,
    close: async () => {
      probe.close();
      await stop(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * `amount` requests from `connections` clients, each answered: no request is left in flight when
 * this returns (one cut off by a deadline would be rendered after it, in the next slice). Resolves
 * with autocannon's result, every response's latency in ms, and the seconds until the last answer.
 */
function load(s, connections, amount) {
  let n = 0;
  // a different recipient each document, as in real use
  const request = {
    method: 'POST',
    path: '/v1/generate',
    headers: { ...s.headers, 'content-type': 'application/json' },
    setupRequest: (req) => ({
      ...req,
      body: JSON.stringify({
        template_id: s.template,
        merge_parameters: { ...values, name: `${values.name} ${++n}` },
        destinations: { inkit_storage: { name: 'bench' } },
      }),
    }),
  };
  return new Promise((resolve, reject) => {
    const latencies = [];
    const start = performance.now();
    let last = start;
    // autocannon notices the last answer only at its next one-second tick: its duration would
    // count up to a second of an idle server, so the slice ends at the last answer instead
    const run = autocannon({ url: s.url, connections, amount, requests: [request] }, (err, result) =>
      err ? reject(err) : resolve({ result, latencies, seconds: (last - start) / 1000 }),
    );
    run.on('response', (client, status, bytes, ms) => {
      latencies.push(ms);
      last = performance.now();
    });
  });
}

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};

async function run(report) {
  // what this machine gives two threads at once: its cores may share one physical core (a VM's
  // vCPUs often do), and then no server can render twice as fast with two render threads
  process.stderr.write('  the render pool alone, in this process, 1 and 2 threads…\n');
  const alone = { 1: await poolRate(1), 2: await poolRate(2) };
  const rows = [];
  let worst = Infinity;
  let maxRss = 0;
  let overhead = 0;
  for (const threads of [1, 2]) {
    const s = await server(threads);
    try {
      const idle = (await s.probe.during(new Promise((r) => setTimeout(r, 2000)))).latencies;
      await load(s, 4, 200); // warm-up: threads started, the template compiled on each
      for (const connections of [1, 4, 16]) {
        process.stderr.write(`  POST /v1/generate, RENDER_THREADS=${threads}, ${connections} clients…\n`);
        const ref = { n: 0, seconds: 0, cpuMs: 0, slowest: Infinity, fastest: 0 };
        const sum = { ok: 0, seconds: 0, other: 0, render: 0, load: 0 };
        const latencies = [];
        const busy = [];
        let estimate;
        for (let cycle = 0; cycle < CYCLES; cycle++) {
          const single = await letterSlice(REFERENCE_SECONDS);
          for (const k of ['n', 'seconds', 'cpuMs']) ref[k] += single[k];
          ref.slowest = Math.min(ref.slowest, single.n / single.seconds);
          ref.fastest = Math.max(ref.fastest, single.n / single.seconds);
          // about LOAD_SECONDS of requests, at the rate the last slice had (the first: half the reference's)
          const amount = Math.max(
            connections * 4,
            Math.round((estimate ?? single.n / single.seconds / 2) * LOAD_SECONDS),
          );
          const cpu0 = process.cpuUsage();
          const threads0 = threadCpu(s.child.pid);
          const running = load(s, connections, amount);
          const probed = await s.probe.during(running);
          busy.push(...probed.latencies);
          const { result, latencies: answered, seconds } = await running;
          if (result.non2xx || result.errors)
            throw new Error(`${result.non2xx} answers were not 2xx and ${result.errors} requests failed`);
          const loadCpu = process.cpuUsage(cpu0);
          const threads1 = threadCpu(s.child.pid);
          latencies.push(...answered);
          sum.ok += result['2xx'];
          sum.seconds += seconds;
          sum.other += threads1.other - threads0.other;
          sum.render += threads1.render - threads0.render;
          sum.load += (loadCpu.user + loadCpu.system) / 1000 + probed.cpuMs;
          estimate = result['2xx'] / seconds;
        }
        const single = { rate: ref.n / ref.seconds, cpuMs: ref.cpuMs / ref.n };
        const rate = sum.ok / sum.seconds;
        // the cores left to render threads: all of them less what the server's other threads and
        // the load generator (on this same machine) used; never more than there are render threads
        const otherCores = (sum.other + sum.load) / (sum.seconds * 1000);
        const free = Math.max(0, Math.min(threads, os.cpus().length - otherCores));
        const expected = single.rate * free;
        if (connections === 16) worst = Math.min(worst, rate / expected);
        if (connections === 16) overhead = Math.max(overhead, (sum.render + sum.other) / sum.render);
        const rss = peakRss(s.child.pid);
        maxRss = Math.max(maxRss, rss);
        rows.push([
          String(threads),
          String(connections),
          rate.toFixed(1),
          `${single.rate.toFixed(0)}/s (${ref.slowest.toFixed(0)}–${ref.fastest.toFixed(0)}), ${single.cpuMs.toFixed(2)} ms`,
          (sum.render / sum.ok).toFixed(2),
          `${((sum.render + sum.other) / sum.ok).toFixed(2)} (${((sum.render + sum.other) / sum.render).toFixed(2)}×)`,
          `${percentile(latencies, 0.5).toFixed(0)} ms`,
          `${percentile(latencies, 0.99).toFixed(0)} ms`,
          free.toFixed(2),
          `${(rate / expected).toFixed(2)}`,
          `${((sum.render / sum.seconds / 1000) * 100).toFixed(0)} %`,
          `${(rss / 2 ** 20).toFixed(0)} MB`,
          `${percentile(busy, 0.99).toFixed(1)} ms (idle ${percentile(idle, 0.99).toFixed(1)} ms)`,
          `${(sum.load / sum.seconds / 10).toFixed(0)} %`,
        ]);
      }
      process.stderr.write(`  resident now: ${(rssNow(s.child.pid) / 2 ** 20).toFixed(0)} MB\n`);
    } finally {
      await s.close();
    }
  }
  report.section('End to end: POST /v1/generate with storage (SQLite), by render threads and clients');
  report.line(
    `The bench letter uploaded as a template, a different recipient each request; autocannon posts to \`paperlink serve\` in its own process, after a warm-up, in ${CYCLES} slices of about ${LOAD_SECONDS} s per row (a number of requests, each answered before the slice ends). "Free cores": the cores left to the render threads during the row, the machine's ${os.cpus().length} less what the server's other threads (the HTTP thread, V8's and libuv's helpers) and the load generator used, at most RENDER_THREADS. "Reference": the rate and CPU ms per letter of one thread rendering in the bench's own process, measured for ${REFERENCE_SECONDS} s right before each slice of load, so that both see the machine at the same speed (in brackets its slowest and fastest slice: on this shared machine one second can render twice as many letters as the next); "÷ expected" divides the row's documents/s by that rate times the free cores. "Render CPU ms/doc": what the render threads themselves used per document (V8's helper threads, which collect their garbage, are counted with the other threads), beside the reference's CPU ms per letter (its process, helpers included). "Server CPU ms/doc": what every thread of the server used per document (the HTTP thread, the render threads, V8's and libuv's helpers), and in brackets that ÷ the render threads' own. Render threads' CPU: what they used, in % of one core. /healthz p99: a GET every 20 ms during the load, from a process of its own, beside the same on the idle server. Load generator CPU: what autocannon and the probe used of one core, on the same 2-core machine.`,
  );
  report.line('');
  report.table(
    [
      'RENDER_THREADS',
      'clients',
      'documents/s',
      'reference',
      'render CPU ms/doc',
      'server CPU ms/doc (÷ render)',
      'p50',
      'p99',
      'free cores',
      '÷ expected',
      "render threads' CPU",
      'peak RSS',
      '/healthz p99 under load',
      'load generator CPU',
    ],
    rows,
  );
  report.line(
    `The machine: the render pool alone in the bench's process (nothing else running), every thread kept busy: 1 thread ${alone[1].toFixed(0)} documents/s, 2 threads ${alone[2].toFixed(0)} documents/s, **${(alone[2] / alone[1]).toFixed(2)}×** one thread's rate (2.00× if the two cores were independent).`,
  );
  report.line('');
  report.line(
    `16 clients, worst ÷ expected: **${worst.toFixed(2)}** (target ≥ 0.6 of the render threads the machine leaves free); peak RSS **${(maxRss / 2 ** 20).toFixed(0)} MB** (target ≤ 300 MB); the server's CPU per letter ÷ its render threads', worst: **${overhead.toFixed(2)}** (target ≤ 1.3).`,
  );
  return { worst, maxRss, overhead };
}

module.exports = { run, server, load };
