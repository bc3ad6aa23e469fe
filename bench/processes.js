'use strict';
// Servers under load run in their own process, as in production; these start and stop them.
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');

const cliJs = path.resolve(__dirname, '..', 'dist/src/cli.js');

/** Starts `node args…` and resolves with its URL once it prints "listening on http://…". */
function start(args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
  });
}

/** `paperlink serve` on a free port over `dataDir`. */
function serve(dataDir) {
  return start([...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE] : []), cliJs, 'serve', '--port', '0', '--data-dir', dataDir], { LOG_LEVEL: 'warn' });
}

/** Runs a `paperlink` command over `dataDir` and returns what it printed. */
function paperlink(args, dataDir) {
  return spawnSync(process.execPath, [cliJs, ...args, '--data-dir', dataDir], { encoding: 'utf8' }).stdout.trim();
}

/** Lets the server finish the requests in flight and waits for it to exit. */
async function stop(child) {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

module.exports = { start, serve, paperlink, stop };
