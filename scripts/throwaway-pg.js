'use strict';
/**
 * A throwaway PostgreSQL cluster from Debian's `postgresql` package: initdb in a temporary folder,
 * started on a free port (fsync off: it holds nothing worth keeping), stopped and removed after.
 * The tests (test/setup/postgres.ts) and the bench (bench/scale.js) use it.
 */
const { spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

function pgBin() {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (fs.existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  throw new Error("PostgreSQL is not installed: this needs Debian's postgresql package (apt-get install postgresql), or PAPERLINK_TEST_PG=postgres://… pointing at a server.");
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

/** initdb refuses to run as root; run the server's tools as the postgres user then. */
function asPostgres(cmd, args) {
  const root = process.getuid?.() === 0;
  const r = root ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} failed: ${r.stderr || r.stdout || r.error}`);
}

/** Starts a cluster; resolves with its server URL and what stop() needs. */
async function startPostgres() {
  const bin = pgBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-pg-'));
  fs.chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`, 'start']);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, bin, dir, data };
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

module.exports = { startPostgres, stopPostgres, freshDatabase };
