#!/usr/bin/env node
// `npm test`: type-check the tests, run jest, and end with the one line CI reads:
// "N passed, N failed, N skipped", taken from jest's JSON results.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const started = Date.now();
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status === null ? 1 : r.status;
}

// the Node.js lines (scripts/test-node.sh) run what the machine's Node already type-checked
const typecheck = process.env.PAPERLINK_SKIP_TYPECHECK === '1' ? 0 : run(bin('tsc'), ['-p', 'tsconfig.test.json']);
if (typecheck !== 0) {
  console.log('type check of the tests failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const results = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-jest-')), 'results.json');
const status = run(
  process.execPath,
  [bin('jest'), '--json', `--outputFile=${results}`, ...process.argv.slice(2)],
  // pdfjs-dist (used by tests to read PDFs back) is ESM-only; jest loads it through vm modules.
  { NODE_OPTIONS: [process.env.NODE_OPTIONS, '--experimental-vm-modules', '--no-warnings'].filter(Boolean).join(' ') },
);

let summary;
try {
  summary = JSON.parse(fs.readFileSync(results, 'utf8'));
} catch {
  console.log('jest wrote no results');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

// where the time goes: each suite's wall time, slowest first (jest runs suites side by side)
const times = summary.testResults
  .map((s) => ({ name: path.relative(root, s.name), seconds: (s.endTime - s.startTime) / 1000 }))
  .sort((a, b) => b.seconds - a.seconds);
if (times.length > 1) {
  console.log('\nSuites by time:');
  for (const t of times) console.log(`  ${t.seconds.toFixed(1).padStart(6)} s  ${t.name}`);
  const total = times.reduce((n, t) => n + t.seconds, 0);
  console.log(
    `  ${total.toFixed(1).padStart(6)} s  in all (${((Date.now() - started) / 1000).toFixed(0)} s of wall time)`,
  );
}

const passed = summary.numPassedTests;
// A suite that fails to load has no failed tests of its own; count it as one failure.
const failed = summary.numFailedTests + summary.numRuntimeErrorTestSuites;
const skipped = summary.numPendingTests + summary.numTodoTests;
const skippedSuites = [];
for (const suite of summary.testResults) {
  for (const t of suite.assertionResults) {
    if (t.status === 'pending' || t.status === 'skipped')
      skippedSuites.push(`${path.relative(root, suite.name)}: ${t.fullName}`);
  }
}
if (skippedSuites.length > 0) {
  console.log('\nSkipped:');
  for (const s of skippedSuites) console.log(`  ${s}`);
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(status !== 0 || failed > 0 ? 1 : 0);
