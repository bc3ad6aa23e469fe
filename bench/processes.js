'use strict';
// Servers under load run in their own process, as in production; these start and stop them.
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');

const cliJs = path.resolve(__dirname, '..', 'dist/src/cli.js');

/** Starts `node args…` and resolves with its URL once it prints "listening on http://…". */
function start(args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
  });
}

/** `paperlink serve` on a free port over `dataDir`: one process unless `processes`; `env` adds settings (DATABASE_URL). */
function serve(dataDir, { processes = 1, env = {} } = {}) {
  return start(
    [
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE] : []),
      cliJs,
      'serve',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--processes',
      String(processes),
    ],
    // every request of a bench comes from this one address: no per-address limits (RATE_LIMIT_*)
    { LOG_LEVEL: 'warn', RATE_LIMIT_POSTCARDS: '0', RATE_LIMIT_PAGES: '0', RATE_LIMIT_CODES: '0', ...env },
  );
}

/** Runs a `paperlink` command over `dataDir` and returns what it printed. */
function paperlink(args, dataDir, env = {}) {
  return spawnSync(process.execPath, [cliJs, ...args, '--data-dir', dataDir], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  }).stdout.trim();
}

/** A process and its children (a cluster's workers). */
function processTree(pid) {
  return [
    pid,
    ...spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      .filter(Boolean)
      .map(Number),
  ];
}

/** CPU time (ms) a process and its children have used so far, from /proc (Linux). */
function cpuMs(pid) {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      const fields = require('node:fs').readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

/** Resident memory (MB) of a process and its children, from /proc (Linux). */
function rssMb(pid) {
  let kb = 0;
  for (const p of processTree(pid)) {
    const m = /VmRSS:\s+(\d+)/.exec(require('node:fs').readFileSync(`/proc/${p}/status`, 'utf8'));
    if (m) kb += Number(m[1]);
  }
  return kb / 1024;
}

/** Lets the server finish the requests in flight and waits for it to exit. */
async function stop(child) {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Ours beside its baseline on a shared, noisy machine: `rounds` short rounds of each, taken in
 * turns (the order swapped every round, so a drift in the machine's load falls on both alike),
 * the other server stopped (SIGSTOP) during each round.
 * Each side is `{ pid, load }`, `load()` an autocannon run. Returns the median round of each (by
 * rate), its CPU µs per request (the server process and its children, from /proc), and the median
 * of the rounds' ratios ours ÷ baseline.
 */
async function paired(ours, baseline, rounds = 3) {
  const runs = { ours: [], baseline: [] };
  const one = async (name, side) => {
    // the other stands still meanwhile: work it left (ours renders accepted postcards once idle)
    // must not take the CPU from this round
    const other = side === ours ? baseline : ours;
    process.kill(other.pid, 'SIGSTOP');
    try {
      const cpu = cpuMs(side.pid);
      const result = await side.load();
      const ok = result['2xx'];
      const rate = ok / result.duration;
      runs[name].push({ result, rate, cpuUs: ((cpuMs(side.pid) - cpu) * 1000) / Math.max(1, ok) });
      process.stderr.write(`    round ${runs[name].length}, ${name}: ${rate.toFixed(0)}/s\n`);
    } finally {
      process.kill(other.pid, 'SIGCONT');
    }
  };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? ['ours', 'baseline'] : ['baseline', 'ours'];
    for (const name of order) await one(name, name === 'ours' ? ours : baseline);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const pick = (list) => list.find((x) => x.rate === median(list.map((y) => y.rate)));
  const ratios = runs.ours.map((o, i) => o.rate / runs.baseline[i].rate);
  return { ours: pick(runs.ours), baseline: pick(runs.baseline), ratios, ratio: median(ratios), all: runs };
}

module.exports = { start, serve, paperlink, stop, cpuMs, rssMb, paired };
