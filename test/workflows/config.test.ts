/**
 * Running on Temporal from the command line: the settings it reads, and what it says when they
 * are wrong (before any work is taken).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { connectionOptions } from '../../workflows/client';
import { cli } from '../support/cli';
import { jsonLines } from '../support/logs';
import { closedPort } from '../support/net';
import { freshPostgres } from '../support/service';

const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-temporal-cli-'));

/** Runs the CLI with these environment variables set for the call. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const before = { ...process.env };
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(vars)) if (before[k] === undefined) delete process.env[k];
    Object.assign(process.env, before);
  }
}

describe('Temporal settings', () => {
  it('defaults to a local server, namespace default, task queue paperlink, no TLS', () => {
    const c = loadConfig({});
    expect(c.engine).toBe('embedded');
    expect(c.temporal).toMatchObject({
      address: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'paperlink',
      tls: false,
    });
    expect(connectionOptions(c.temporal)).toEqual({ address: 'localhost:7233', tls: undefined });
  });

  it('reads a Temporal Cloud setup: API key (TLS on), mTLS files, a private CA', () => {
    const d = dir();
    for (const f of ['crt.pem', 'key.pem', 'ca.pem']) fs.writeFileSync(path.join(d, f), `contents of ${f}`);
    const cloud = loadConfig({
      ENGINE: 'temporal',
      DATABASE_URL: 'postgres://x@db/p',
      TEMPORAL_ADDRESS: 'acme.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'acme.a1b2c',
      TEMPORAL_API_KEY: 'secret-key',
    });
    expect(connectionOptions(cloud.temporal)).toEqual({
      address: 'acme.a1b2c.tmprl.cloud:7233',
      tls: {},
      apiKey: 'secret-key',
    });
    const mtls = loadConfig({
      TEMPORAL_TLS_CERT: path.join(d, 'crt.pem'),
      TEMPORAL_TLS_KEY: path.join(d, 'key.pem'),
      TEMPORAL_TLS_CA: path.join(d, 'ca.pem'),
      TEMPORAL_TASK_QUEUE: 'docs',
    });
    const opts = connectionOptions(mtls.temporal);
    expect(mtls.temporal.taskQueue).toBe('docs');
    expect(String((opts.tls as unknown as { clientCertPair: { crt: Buffer } }).clientCertPair.crt)).toBe(
      'contents of crt.pem',
    );
    expect(String((opts.tls as unknown as { serverRootCACertificate: Buffer }).serverRootCACertificate)).toBe(
      'contents of ca.pem',
    );
  });

  it.each([[{ ENGINE: 'temporl' }], [{ TEMPORAL_TLS_CERT: '/x.pem' }], [{ TEMPORAL_TLS: 'yes' }]])(
    'refuses %j with invalid_configuration',
    (env) => {
      expect(() => loadConfig(env)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
    },
  );
});

describe('paperlink serve and worker on Temporal', () => {
  it('refuse SQLite: ENGINE=temporal needs DATABASE_URL', async () => {
    for (const args of [
      ['serve', '-d', dir()],
      ['worker', '-d', dir()],
    ]) {
      const r = await withEnv({ ENGINE: 'temporal', LOG_FORMAT: 'pretty' }, () => cli(args));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error \(invalid_configuration\): .*DATABASE_URL=postgres:/);
      // under LOG_FORMAT=json, a JSON line with the code
      const json = await withEnv({ ENGINE: 'temporal', LOG_FORMAT: 'json' }, () => cli(args));
      expect(json.code).toBe(1);
      expect(jsonLines(json.stderr, 'stderr').map((l) => l.err?.code)).toEqual(['invalid_configuration']);
    }
  });

  it('say what to do when the Temporal server cannot be reached', async () => {
    const vars = {
      ENGINE: 'temporal',
      DATABASE_URL: await freshPostgres(),
      TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
    };
    for (const command of ['worker', 'serve']) {
      const args = [command, '-d', dir(), ...(command === 'serve' ? ['--port', '0'] : [])];
      const r = await withEnv({ ...vars, LOG_FORMAT: 'pretty' }, () => cli(args));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^error \(temporal_unreachable\): Cannot reach Temporal at 127\.0\.0\.1:\d+ .*TEMPORAL_ADDRESS/,
      );
      // under LOG_FORMAT=json, a JSON line with the code and what the connection failed with
      const json = await withEnv({ ...vars, LOG_FORMAT: 'json' }, () => cli(args));
      expect(json.code).toBe(1);
      const [line, ...more] = jsonLines(json.stderr, 'stderr');
      expect(more).toEqual([]);
      expect(line.err).toMatchObject({ code: 'temporal_unreachable', cause: expect.objectContaining({}) });
    }
  }, 90_000);

  it('have --help that names every setting', async () => {
    const r = await cli(['worker', '--help']);
    for (const s of [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TASK_QUEUE',
      'TEMPORAL_API_KEY',
      'TEMPORAL_TLS_CERT',
      'DATABASE_URL',
    ])
      expect(r.stdout).toContain(s);
  });
});
