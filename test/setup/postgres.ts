/**
 * A throwaway PostgreSQL cluster for the test run, from Debian's `postgresql` package: initdb in
 * a temporary folder, started on a free port, stopped and removed after the run. Tests reach it
 * through PAPERLINK_TEST_PG (a server URL); each test file makes its own database there.
 * Set PAPERLINK_TEST_PG yourself to use a server you already run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const STATE = path.join(os.tmpdir(), 'paperlink-test-pg.json');

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (fs.existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  throw new Error("PostgreSQL is not installed: the tests need Debian's postgresql package (apt-get install postgresql), or PAPERLINK_TEST_PG=postgres://… pointing at a server.");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** initdb refuses to run as root; run the server's tools as the postgres user then. */
function asPostgres(cmd: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  const r = root ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} failed: ${r.stderr || r.stdout || r.error}`);
}

export default async function setup(): Promise<void> {
  if (process.env.PAPERLINK_TEST_PG) return;
  const bin = pgBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-pg-'));
  fs.chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`, 'start']);
  process.env.PAPERLINK_TEST_PG = `postgres://postgres@127.0.0.1:${port}/postgres`;
  fs.writeFileSync(STATE, JSON.stringify({ bin, dir, data }));
}

export function teardown(): void {
  if (!fs.existsSync(STATE)) return;
  const { bin, dir, data } = JSON.parse(fs.readFileSync(STATE, 'utf8')) as { bin: string; dir: string; data: string };
  try {
    asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(STATE, { force: true });
  }
}
