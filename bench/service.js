// End to end: POST /v1/generate with storage (SQLite, files on disk) under 16 concurrent clients,
// against the raw pdf-lib rate of the same letter measured in the same run. The server runs in its
// own process, as `paperlink serve` does; autocannon drives it from this one.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { measure } = require('./measure');
const { paperlink, serve, stop } = require('./processes');
const { rawLetter, values } = require('./render');

const root = path.resolve(__dirname, '..');
const CONNECTIONS = 16;
const SECONDS = 15;

/** Peak resident set size of a process, from Linux's VmHWM. */
function peakRss(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

async function run(report) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-'));
  try {
    const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir);
    const { child, url } = await serve(dataDir);
    const headers = { 'x-service-api-token': key };
    try {
      const form = new FormData();
      form.append('file', new Blob([fs.readFileSync(path.join(__dirname, 'letter.xml'))], { type: 'application/xml' }), 'letter.xml');
      form.append('logo', new Blob([fs.readFileSync(path.join(root, 'examples/letter/logo.png'))], { type: 'image/png' }), 'logo.png');
      const created = await fetch(`${url}/v1/templates`, { method: 'POST', headers, body: form });
      if (created.status !== 201) throw new Error(`template upload failed: ${created.status} ${await created.text()}`);
      const template = await created.json();
      const body = JSON.stringify({ template_id: template.id, merge_parameters: values, destinations: { inkit_storage: { name: 'bench' } } });

      const raw = await measure('raw pdf-lib, one-page letter', rawLetter);
      process.stderr.write(`  POST /v1/generate, ${CONNECTIONS} clients, ${SECONDS} s…\n`);
      // warm-up, then the measured run
      await autocannon({ url: `${url}/v1/generate`, method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body, connections: CONNECTIONS, duration: 3 });
      const result = await autocannon({ url: `${url}/v1/generate`, method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body, connections: CONNECTIONS, duration: SECONDS });
      const rss = peakRss(child.pid);
      const ok = result['2xx'];
      const rate = ok / result.duration;
      if (result.non2xx || result.errors) throw new Error(`${result.non2xx} answers were not 2xx and ${result.errors} requests failed`);

      report.section(`End to end: POST /v1/generate with storage, ${CONNECTIONS} concurrent clients (SQLite)`);
      report.line('The bench letter uploaded as a template; autocannon posts it for 15 s (after 3 s of warm-up) to `paperlink serve` in its own process. The baseline is raw pdf-lib drawing the same letter in this process, with no HTTP, validation or storage.');
      report.line('');
      report.table(
        ['what', 'documents/s', 'p50 latency', 'p99 latency', 'peak RSS'],
        [
          ['(a) raw pdf-lib calls, one at a time', raw.rate.toFixed(1), `${raw.ms.toFixed(1)} ms`, '', ''],
          [`(b) POST /v1/generate, ${CONNECTIONS} clients`, rate.toFixed(1), `${result.latency.p50} ms`, `${result.latency.p99} ms`, `${(rss / 2 ** 20).toFixed(0)} MB`],
        ],
      );
      report.line(`ratio (b)/(a): ${(rate / raw.rate).toFixed(2)} (target >= 0.6); ${ok} documents stored, none failed`);
      return { ratio: rate / raw.rate };
    } finally {
      await stop(child); // before its folder goes
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

module.exports = { run };
