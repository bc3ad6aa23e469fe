/**
 * `paperlink serve --processes 2`: two processes (node:cluster) answer on one port over one
 * database, SQLite or PostgreSQL. Background work is done once: each postcard rendered once, each
 * webhook event delivered once, in order per postcard. A worker killed with SIGKILL is replaced,
 * and SIGTERM stops them all, each answering what it has read.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import SQLite from '../../src/db/sqlite-module';
import { Client } from 'pg';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { eventually } from '../support/eventually';
import { startReceiver, type Receiver } from '../support/receiver';
import { cliJs, serveProcess } from '../support/serve';
import { BACKENDS, freshPostgres } from '../support/service';

const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe.each(BACKENDS)('serve --processes 2 on %s', (backend) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-cluster-'));
  let env: Record<string, string>;
  let receiver: Receiver;
  let count: (sql: string, ids: string[]) => Promise<number>;
  let close: () => Promise<void>;

  beforeAll(async () => {
    env = {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      METRICS_ADDRESS: '127.0.0.1:0',
      ...(backend === 'postgres' ? { DATABASE_URL: await freshPostgres(), STORAGE: 'database' } : {}),
    };
    receiver = await startReceiver();
    if (backend === 'postgres') {
      const db = new Client({ connectionString: env.DATABASE_URL });
      await db.connect();
      count = async (sql, ids) => Number((await db.query<{ n: string }>(sql.replace(/\?/g, '$1'), [ids])).rows[0].n);
      close = () => db.end();
    }
  }, 60_000);
  afterAll(async () => {
    await close?.();
    await receiver?.stop();
    // (a worker of a killed primary may still be finishing a write)
    fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 10 });
  });

  it('does each background job once, replaces a worker that dies, and stops on SIGTERM', async () => {
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [cliJs, ...args, '--data-dir', dataDir], {
        encoding: 'utf8',
        env: { ...process.env, ...env, NODE_OPTIONS: '' },
      }).stdout.trim();
    const key = cli('keys', 'create', '--name', 'cluster');
    const token = cli('tokens', 'create', '--kind', 'postcard', '--name', 'cluster');
    const server = await serveProcess(dataDir, env, 2);
    const exited = new Promise<number | null>((r) => server.child.on('exit', (code) => r(code)));
    if (backend === 'sqlite') {
      const db = new SQLite(path.join(dataDir, 'paperlink.db'), { readonly: true });
      count = async (sql, ids) =>
        (db.prepare(sql.replace(/= ANY\(\?\)/g, `IN (${ids.map(() => '?').join(',')})`)).get(...ids) as { n: number })
          .n;
      close = async () => void db.close();
    }
    try {
      const workers = () => fs.readdirSync(path.join(dataDir, 'presence')).length;
      if (backend === 'sqlite') expect(workers()).toBe(2);
      const hook = await fetch(`${server.url}/v1/webhooks`, {
        method: 'POST',
        headers: { 'x-service-api-token': key, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, events: ['postcard.received', 'postcard.rendered'] }),
      });
      expect(hook.status).toBe(201);
      // each on a connection of its own (a kept-alive one may belong to a worker killed below)
      const accept = (body: string) =>
        new Promise<{ status: number; id: string }>((resolve, reject) => {
          const req = http.request(
            `${server.url}/postcards`,
            { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
            (res) => {
              let text = '';
              res.on('data', (c: Buffer) => (text += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode!, id: (JSON.parse(text) as { id: string }).id }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const post = async (n: number) => {
        const ids: string[] = [];
        for (let i = 0; i < n; i += 10) {
          const batch = Array.from({ length: Math.min(10, n - i) }, async () => {
            const res = await accept(
              JSON.stringify({ ...sample, api_token: token, template_id: EXAMPLE_IDS.postcard }),
            );
            expect(res.status).toBe(202);
            return res.id;
          });
          ids.push(...(await Promise.all(batch)));
        }
        return ids;
      };
      const settled = async (ids: string[]) =>
        (await count("SELECT count(*) AS n FROM postcards WHERE status = 'rendered' AND id = ANY(?)", ids)) ===
          ids.length &&
        (await count(
          "SELECT count(*) AS n FROM deliveries WHERE status = 'succeeded' AND resource_id = ANY(?)",
          ids,
        )) ===
          2 * ids.length;

      const ids = await post(100);
      await eventually(() => settled(ids), 'every postcard rendered and its events delivered', 120);
      const got = receiver.received.filter((r) => ids.includes(String(r.event.data.object.id)));
      expect(got).toHaveLength(200);
      expect(new Set(got.map((r) => r.event.id)).size).toBe(200);
      const order = new Map<string, string[]>();
      for (const r of got)
        order.set(String(r.event.data.object.id), [...(order.get(String(r.event.data.object.id)) ?? []), r.event.type]);
      expect([...order.values()].filter((t) => t.join() !== 'postcard.received,postcard.rendered')).toEqual([]);
      expect(
        await count(
          'SELECT count(*) AS n FROM documents WHERE description = ANY(?)',
          ids.map((id) => `postcard ${id}`),
        ),
      ).toBe(100);

      // GET /metrics of the primary adds up both processes' (each answered some of the requests)
      const metricsUrl = /metrics: (http:\/\/[^\s"]+)/.exec(server.output())![1];
      const scraped = await (await fetch(metricsUrl)).text();
      const sum = (name: string, ...labels: string[]) =>
        scraped
          .split('\n')
          .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
          .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      expect(sum('paperlink_http_requests_total', 'method="POST"', 'route="/postcards"', 'status="202"')).toBe(100);
      expect(sum('paperlink_renders_total', 'outcome="ok"')).toBeGreaterThanOrEqual(100);
      expect(sum('paperlink_webhook_attempts_total', 'outcome="delivered"')).toBe(200);

      // a worker dies: the primary starts another, and the work goes on
      const pids = spawnSync('pgrep', ['-P', String(server.child.pid)], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')
        .map(Number);
      expect(pids).toHaveLength(2);
      // each worker runs with at most two malloc arenas (less memory kept by render threads)
      for (const pid of pids)
        expect(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')).toContain('MALLOC_ARENA_MAX=2');
      process.kill(pids[0], 'SIGKILL');
      await eventually(
        async () =>
          spawnSync('pgrep', ['-P', String(server.child.pid)], { encoding: 'utf8' })
            .stdout.trim()
            .split('\n')
            .filter((p) => p && Number(p) !== pids[0]).length === 2,
        'a new worker in its place',
        30,
      );
      const more = await post(20);
      await eventually(() => settled(more), 'the postcards after the replacement rendered and delivered', 120);

      server.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      if (backend === 'sqlite') expect(fs.existsSync(path.join(dataDir, 'paperlink.lock'))).toBe(false);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 300_000);
});
