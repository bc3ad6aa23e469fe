#!/usr/bin/env node
// `npm start`: `paperlink serve` from the compiled dist/, built first only when it must be: on a
// fresh clone (nothing built yet) or when a source file changed since the last build. A start on a
// built tree costs no build. Arguments after `npm start --` go to `paperlink serve`; SIGINT and
// SIGTERM go to the server, which stops gracefully; its exit code is npm start's.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
/** What the build of the service reads: a change to any of these makes dist/ stale. */
const SOURCES = ['src', 'workflows', 'web', 'tsconfig.json'];
/** Written by the build (gulpfile.js, the service task) when it is done. */
const STAMP = path.join('dist', '.built');

/** The newest modification time under `file` (a file or a folder), in ms. */
function newest(file) {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of fs.readdirSync(file)) latest = Math.max(latest, newest(path.join(file, entry)));
  return latest;
}

/** Why `dir`'s build must be made again before it runs, or undefined when it is current. */
function stale(dir) {
  const built = fs.statSync(path.join(dir, STAMP), { throwIfNoEntry: false });
  if (!built) return 'nothing is built yet';
  const changed = SOURCES.find((s) => newest(path.join(dir, s)) > built.mtimeMs);
  return changed ? `${changed} changed since the last build` : undefined;
}

function main() {
  const why = stale(root);
  if (why) {
    process.stderr.write(`Building the service first (${why}; this takes a minute the first time)…\n`);
    const gulp = path.join(root, 'node_modules/gulp/bin/gulp.js');
    const built = spawnSync(process.execPath, [gulp, 'service', '-L'], { cwd: root, stdio: 'inherit' });
    if (built.status !== 0) process.exit(built.status ?? 1);
  }
  const server = spawn(process.execPath, [path.join(root, 'dist/src/cli.js'), 'serve', ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  // the server stops gracefully on each (a second is ignored): passed on, as Ctrl-C in a terminal
  // reaches it too; this process waits for it to end
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal));
  // the terminal closed: a graceful stop too
  process.on('SIGHUP', () => server.kill('SIGTERM'));
  server.on('error', (err) => {
    process.stderr.write(`could not start the server: ${err.message}\n`);
    process.exit(1);
  });
  server.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0)));
}

if (require.main === module) main();
module.exports = { stale };
