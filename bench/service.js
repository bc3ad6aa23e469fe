// End to end: POST /v1/generate with storage (SQLite, files on disk) at 1, 4 and 16 concurrent
// clients, with RENDER_THREADS=1 and =2, each server in its own process as `paperlink serve` runs.
// Beside each: the rate one render thread manages in this process (so the expectation is that
// rate × the render threads the machine leaves free), peak RSS, and how long a cheap request
// (/healthz) waits while documents render, beside its wait on the idle server.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { paperlink, start, stop } = require('./processes');
const { letterRate, values } = require('./render');

const root = path.resolve(__dirname, '..');
const cliJs = path.join(root, 'dist/src/cli.js');
const SECONDS = 8;

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

/** GETs /healthz every 20 ms until `until` resolves; the latencies in ms. */
async function probe(url, until) {
  const latencies = [];
  let done = false;
  until.then(() => (done = true));
  while (!done) {
    const t = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return latencies;
}
const p99 = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))];
};

async function server(threads) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-'));
  const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir);
  const { child, url } = await start([cliJs, 'serve', '--port', '0', '--data-dir', dataDir], { LOG_LEVEL: 'warn', RENDER_THREADS: String(threads) });
  const headers = { 'x-service-api-token': key };
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(path.join(__dirname, 'letter.xml'))], { type: 'application/xml' }), 'letter.xml');
  form.append('logo', new Blob([fs.readFileSync(path.join(root, 'examples/letter/logo.png'))], { type: 'image/png' }), 'logo.png');
  const created = await fetch(`${url}/v1/templates`, { method: 'POST', headers, body: form });
  if (created.status !== 201) throw new Error(`template upload failed: ${created.status} ${await created.text()}`);
  const template = (await created.json()).id;
  return {
    child,
    url,
    headers,
    template,
    close: async () => {
      await stop(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function load(s, connections, seconds) {
  let n = 0;
  // a different recipient each document, as in real use
  const request = { method: 'POST', path: '/v1/generate', headers: { ...s.headers, 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: JSON.stringify({ template_id: s.template, merge_parameters: { ...values, name: `${values.name} ${++n}` }, destinations: { inkit_storage: { name: 'bench' } } }) }) };
  return autocannon({ url: s.url, connections, duration: seconds, requests: [request] });
}

async function run(report) {
  const single = await letterRate();
  const rows = [];
  let worst = Infinity;
  let maxRss = 0;
  for (const threads of [1, 2]) {
    const s = await server(threads);
    try {
      const idle = await probe(s.url, new Promise((r) => setTimeout(r, 2000)));
      await load(s, 4, 2); // warm-up: threads started, template compiled on each
      for (const connections of [1, 4, 16]) {
        process.stderr.write(`  POST /v1/generate, RENDER_THREADS=${threads}, ${connections} clients, ${SECONDS} s…\n`);
        const cpu0 = process.cpuUsage();
        const running = load(s, connections, SECONDS);
        const busy = await probe(s.url, running);
        const result = await running;
        if (result.non2xx || result.errors) throw new Error(`${result.non2xx} answers were not 2xx and ${result.errors} requests failed`);
        const rate = result['2xx'] / result.duration;
        const expected = single.rate * threads;
        if (connections === 16) worst = Math.min(worst, rate / expected);
        const rss = peakRss(s.child.pid);
        maxRss = Math.max(maxRss, rss);
        const loadCpu = process.cpuUsage(cpu0);
        rows.push([
          String(threads),
          String(connections),
          rate.toFixed(1),
          `${result.latency.p50} ms`,
          `${result.latency.p99} ms`,
          `${(rate / expected).toFixed(2)}`,
          `${(rss / 2 ** 20).toFixed(0)} MB`,
          `${p99(busy).toFixed(1)} ms (idle ${p99(idle).toFixed(1)} ms)`,
          `${((loadCpu.user + loadCpu.system) / 1000 / result.duration / 10).toFixed(0)} %`,
        ]);
      }
      process.stderr.write(`  resident now: ${(rssNow(s.child.pid) / 2 ** 20).toFixed(0)} MB\n`);
    } finally {
      await s.close();
    }
  }
  report.section('End to end: POST /v1/generate with storage (SQLite), by render threads and clients');
  report.line(`The bench letter uploaded as a template, a different recipient each request; autocannon posts for ${SECONDS} s per row to \`paperlink serve\` in its own process, after a warm-up. "÷ expected" divides by the rate one render thread manages in this process (${single.rate.toFixed(1)}/s, ${single.cpuMs.toFixed(2)} CPU ms per letter) times RENDER_THREADS. /healthz p99: a GET every 20 ms during the load, beside the same on the idle server. Load generator CPU: what autocannon and the probe used of one core, on the same 2-core machine.`);
  report.line('');
  report.table(['RENDER_THREADS', 'clients', 'documents/s', 'p50', 'p99', '÷ expected', 'peak RSS', '/healthz p99 under load', 'load generator CPU'], rows);
  report.line(`16 clients, worst ÷ expected: **${worst.toFixed(2)}** (target ≥ 0.6 of the threads actually free); peak RSS **${(maxRss / 2 ** 20).toFixed(0)} MB** (target ≤ 300 MB).`);
  return { worst, maxRss };
}

module.exports = { run };
