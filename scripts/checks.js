'use strict';
/**
 * The checks of the scripts that install and run the packages as users do (test-n8n.js,
 * test-temporal-app.js): each prints `ok` or `FAIL` with what it saw, and the run ends with
 * "N passed, N failed" and its exit code.
 */
const { spawnSync } = require('node:child_process');

const results = [];

/** Records one check; `detail` is printed (its last 3000 characters) when it fails. Returns `ok`. */
function check(name, ok, detail = '') {
  results.push(Boolean(ok));
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `\n     ${String(detail).slice(-3000)}`}`);
  return ok;
}

const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Prints "N passed, N failed" and exits with 1 when any failed. */
function finish() {
  const passed = results.filter(Boolean).length;
  const failed = results.length - passed;
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

module.exports = { check, run, sleep, finish };
