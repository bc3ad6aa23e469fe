/**
 * PostgreSQL restarted under load (issue 44): two `serve` processes on one database, postcards
 * posted with an Idempotency-Key and retried with it until answered 202, as a careful client does,
 * while the database restarts and cuts every connection. Afterwards both processes still serve,
 * every postcard answered 202 is rendered, none twice, and each event is written once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { eventually } from '../support/eventually';
import { root } from '../support/fixtures';
import { startReceiver, type Receiver } from '../support/receiver';
import { operatorCli, serveProcess, subscribeToPostcards } from '../support/serve';

// a cluster of its own: it is restarted, which the other suites' shared cluster must not be
// eslint-disable-next-line @typescript-eslint/no-require-imports
const pg = require('../../scripts/throwaway-pg.js') as {
  startPostgres: () => Promise<Cluster>;
  restartPostgres: (c: Cluster) => Promise<void>;
  stopPostgres: (c: Cluster) => void;
  freshDatabase: (server: string) => Promise<string>;
};
interface Cluster {
  url: string;
  bin: string;
  dir: string;
  data: string;
}

const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('PostgreSQL restarted under load, two serve processes', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-pgrestart-'));
  let cluster: Cluster | undefined;
  let env: Record<string, string>;
  let servers: Awaited<ReturnType<typeof serveProcess>>[] = [];
  let receiver: Receiver;
  let token: string;

  beforeAll(async () => {
    cluster = await pg.startPostgres();
    env = {
      DATABASE_URL: await pg.freshDatabase(cluster.url),
      STORAGE: 'database',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RENDER_THREADS: '1',
    };
    const cli = operatorCli(dataDir, env);
    const key = cli('keys', 'create', '--name', 'restart');
    token = cli('tokens', 'create', '--kind', 'postcard', '--name', 'restart');
    receiver = await startReceiver();
    servers = await Promise.all([0, 1].map(() => serveProcess(dataDir, env)));
    await subscribeToPostcards(servers[0].url, key, receiver.url);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGKILL');
    await receiver?.stop();
    if (cluster) pg.stopPostgres(cluster);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every answer but a 202 while the database restarted. */
  const refusals: { status: number; code: string; retryAfter: boolean }[] = [];

  /** Posts postcard `i` to server i % 2 with the key `card-<i>` until it is answered 202; its id. */
  const post = async (i: number): Promise<{ id: string; tries: number }> => {
    for (let tries = 1; ; tries++) {
      try {
        const res = await fetch(`${servers[i % 2].url}/postcards`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': `card-${i}` },
          body: JSON.stringify({ ...sample, api_token: token, template_id: EXAMPLE_IDS.postcard, last_name: `n${i}` }),
        });
        if (res.status === 202) return { id: ((await res.json()) as { id: string }).id, tries };
        // anything else must be the database being away, said as such: try again after Retry-After
        refusals.push({
          status: res.status,
          code: ((await res.json()) as { error: { code: string } }).error.code,
          retryAfter: Number(res.headers.get('retry-after')) > 0,
        });
      } catch (err) {
        // the connection itself failed: retry as for a 5xx
        if ((err as Error).name !== 'TypeError') throw err;
      }
      if (tries >= 300)
        throw new Error(
          `postcard ${i} not accepted in 30 s; the servers said:\n${servers.map((s) => s.output()).join('\n---\n')}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('loses no postcard answered 202, renders none twice, and both processes serve on', async () => {
    const answered = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i)));
    // two clients post one postcard after another from before the restart until 10 each after it
    let next = 20;
    let restarted = false;
    const restart = pg.restartPostgres(cluster!).then(() => (restarted = true));
    await Promise.all(
      [0, 1].map(async () => {
        for (let after = 0; after < 10; after += restarted ? 1 : 0) answered.push(await post(next++));
      }),
    );
    await restart;
    // what a client was told while the database was away: 503 database_unavailable with Retry-After, never a 500
    expect(refusals.filter((r) => r.status !== 503 || r.code !== 'database_unavailable' || !r.retryAfter)).toEqual([]);
    const n = answered.length;
    const ids = answered.map((a) => a.id);
    expect(new Set(ids).size).toBe(n);

    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const open = async () =>
        Number(
          (
            await db.query<{ n: string }>(
              "SELECT count(*) AS n FROM postcards WHERE id = ANY($1) AND status <> 'rendered'",
              [ids],
            )
          ).rows[0].n,
        );
      await eventually(async () => (await open()) === 0, 'every postcard answered 202 rendered', 180);
      // nothing more than what was answered: one postcard per key, one document per postcard
      expect(Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM postcards')).rows[0].n)).toBe(n);
      const docs = await db.query<{ n: string }>('SELECT count(*) AS n FROM documents WHERE description = ANY($1)', [
        ids.map((id) => `postcard ${id}`),
      ]);
      expect(Number(docs.rows[0].n)).toBe(n);
      // each postcard's events written once
      const events = await db.query<{ type: string; n: string }>(
        'SELECT type, count(*) AS n FROM events WHERE resource_id = ANY($1) GROUP BY type, resource_id HAVING count(*) <> 1',
        [ids],
      );
      expect(events.rows).toEqual([]);
      const written = await db.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE resource_id = ANY($1)', [
        ids,
      ]);
      expect(Number(written.rows[0].n)).toBe(2 * n);
    } finally {
      await db.end();
    }
    // both processes lived through it and serve
    for (const s of servers) {
      expect({ exit: s.child.exitCode, output: s.child.exitCode === null ? '' : s.output() }).toEqual({
        exit: null,
        output: '',
      });
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    }
  }, 300_000);
});
