/**
 * Several `paperlink serve` processes on one PostgreSQL database, each its own process (the built
 * CLI), behind no load balancer but the test, which spreads requests round-robin. Each background
 * job is done by one of them: a postcard rendered once, a webhook delivery POSTed once, in order
 * per postcard; and when one is killed with SIGKILL the others take over what it held, repeating
 * only what it had in flight.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { root } from '../support/fixtures';
import { eventually } from '../support/eventually';
import { startReceiver, type Receiver, type Received } from '../support/receiver';
import { operatorCli, serveProcess, subscribeToPostcards } from '../support/serve';
import { freshPostgres } from '../support/service';
import { EXAMPLE_IDS } from '../../src/templates/store';

const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('three serve processes on one PostgreSQL', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-processes-'));
  let env: Record<string, string>;
  let db: Client;
  let receiver: Receiver;
  let servers: { child: ChildProcess; url: string }[] = [];
  let token: string;

  const cli = (...args: string[]) => operatorCli(dataDir, env)(...args);
  /** Posts `n` postcards, request i to the i-th live server round-robin, a few at a time; returns their ids. */
  const postcards = async (n: number, tag: string): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 12) {
      const batch = Array.from({ length: Math.min(12, n - i) }, async (_, j) => {
        const server = servers[(i + j) % servers.length];
        const res = await fetch(`${server.url}/postcards`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            ...sample,
            api_token: token,
            template_id: EXAMPLE_IDS.postcard,
            last_name: `${tag}-${i + j}`,
          }),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as { id: string }).id;
      });
      ids.push(...(await Promise.all(batch)));
    }
    return ids;
  };
  const about = (ids: string[]) => (r: Received) => ids.includes(String(r.event.data.object.id));
  const settled = async (ids: string[]) => {
    const { rows } = await db.query<{ open: string }>(
      "SELECT (SELECT count(*) FROM postcards WHERE id = ANY($1) AND status = 'received') + (SELECT count(*) FROM deliveries WHERE resource_id = ANY($1) AND status <> 'succeeded') + (2 * cardinality($1::text[]) - (SELECT count(*) FROM deliveries WHERE resource_id = ANY($1))) AS open",
      [ids],
    );
    return Number(rows[0].open) === 0;
  };

  beforeAll(async () => {
    env = {
      DATABASE_URL: await freshPostgres(),
      STORAGE: 'database',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RENDER_THREADS: '1',
    };
    db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    const key = cli('keys', 'create', '--name', 'processes');
    token = cli('tokens', 'create', '--kind', 'postcard', '--name', 'processes');
    receiver = await startReceiver();
    servers = await Promise.all([0, 1, 2].map(() => serveProcess(dataDir, env)));
    await subscribeToPostcards(servers[0].url, key, receiver.url);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGKILL');
    await receiver?.stop();
    await db?.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('renders each of 300 postcards posted round-robin once, and delivers each event once, in order per postcard', async () => {
    const ids = await postcards(300, 'once');
    await eventually(() => settled(ids), 'every postcard rendered and every event delivered', 240);
    const got = receiver.received.filter(about(ids));
    // exactly once: 2 events per postcard, no event twice
    expect(got).toHaveLength(600);
    expect(new Set(got.map((r) => r.event.id)).size).toBe(600);
    // in order per postcard: received before rendered
    const seen = new Map<string, string[]>();
    for (const r of got)
      seen.set(String(r.event.data.object.id), [...(seen.get(String(r.event.data.object.id)) ?? []), r.event.type]);
    expect([...seen.values()].filter((types) => types.join() !== 'postcard.received,postcard.rendered')).toEqual([]);
    // one document per postcard; attempts as counted agree with the attempts recorded
    const docs = await db.query<{ n: string }>('SELECT count(*) AS n FROM documents WHERE description = ANY($1)', [
      ids.map((id) => `postcard ${id}`),
    ]);
    expect(Number(docs.rows[0].n)).toBe(300);
    const attempts = await db.query<{ id: string; attempts: number; rows: string }>(
      'SELECT d.id, d.attempts, (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id) AS rows FROM deliveries d WHERE d.resource_id = ANY($1)',
      [ids],
    );
    expect(attempts.rows.filter((r) => r.attempts !== 1 || Number(r.rows) !== 1)).toEqual([]);
  }, 300_000);

  it('takes over what a process killed with SIGKILL held: nothing lost, repeated only what was in flight', async () => {
    // answers take a while, so deliveries are in flight when the process dies
    receiver.respond = () => new Promise((r) => setTimeout(() => r(200), 200));
    const ids = await postcards(60, 'kill');
    await eventually(async () => receiver.received.filter(about(ids)).length >= 20, 'deliveries under way', 60);
    const victim = servers[1];
    victim.child.kill('SIGKILL');
    const inFlight = new Set([...receiver.open].map((r) => String(r.headers['paperlink-delivery-id'])));
    servers = servers.filter((s) => s !== victim);
    await eventually(() => settled(ids), 'the survivors finished every postcard and delivery', 240);
    const got = receiver.received.filter(about(ids));
    const events = new Set(got.map((r) => r.event.id));
    expect(events.size).toBe(120);
    const perDelivery = new Map<string, number>();
    for (const r of got)
      perDelivery.set(
        String(r.headers['paperlink-delivery-id']),
        (perDelivery.get(String(r.headers['paperlink-delivery-id'])) ?? 0) + 1,
      );
    const repeated = [...perDelivery].filter(([, n]) => n > 1).map(([id]) => id);
    expect(repeated.filter((id) => !inFlight.has(id))).toEqual([]);
    expect(repeated.length).toBeLessThanOrEqual(inFlight.size);
    const docs = await db.query<{ n: string }>('SELECT count(*) AS n FROM documents WHERE description = ANY($1)', [
      ids.map((id) => `postcard ${id}`),
    ]);
    expect(Number(docs.rows[0].n)).toBe(60);
    const attempts = await db.query<{ id: string; attempts: number; rows: string }>(
      'SELECT d.id, d.attempts, (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id) AS rows FROM deliveries d WHERE d.resource_id = ANY($1)',
      [ids],
    );
    expect(attempts.rows.filter((r) => r.attempts !== Number(r.rows))).toEqual([]);
  }, 300_000);
});
