/**
 * Which `paperlink serve` processes are alive, so background work claimed by one that died is taken
 * over at once (not when a lease runs out).
 *
 * Each process has a presence id (a random 31-bit integer) that it writes into what it claims
 * (the leases of src/jobs/lease.ts). On PostgreSQL it holds a session advisory lock on that id on one
 * connection of its own for as long as it lives: PostgreSQL drops the lock the moment the process
 * dies (kill -9 included: the connection closes), so the live ids are the locks `pg_locks` shows.
 * On SQLite one server owns the data dir (src/db/lock.ts): only this process is alive, and what
 * others claimed is free; or the processes of one `paperlink serve --processes N` share it, each
 * with a file naming its process in DATA_DIR/presence. (A change to a link needs no message between
 * processes: it marks the link's row due, src/engine/claims.ts.)
 */
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { processAlive } from './lock';
import type { Log } from '../log';

/** The first key of every presence lock: "pl" (Paperlink), so other advisory locks never collide. */
const LOCK_SPACE = 0x706c;

export interface Presence {
  /** This process's id, written into what it claims. */
  readonly id: number;
  /** The ids of every live process, this one included. */
  live(): Promise<number[]>;
  /**
   * What to do when this process can no longer prove it is alive (its presence connection failed):
   * the others see it as dead and adopt its work, so it must stop running what it claimed.
   */
  onLost: () => void;
  close(): Promise<void>;
}

/** SQLite: one server per data dir, so only this process is alive. */
export function localPresence(): Presence {
  const presence: Presence = {
    id: randomInt(1, 2 ** 31 - 1),
    live: async () => [presence.id],
    onLost: () => undefined,
    close: async () => undefined,
  };
  return presence;
}

/** The folder where the processes of a cluster on one SQLite data dir say they are alive. */
export const presenceDir = (dataDir: string) => path.join(dataDir, 'presence');

/**
 * A worker of `paperlink serve --processes N` on SQLite: its presence is a file holding its process
 * id (the primary, which holds the data dir's lock, empties the folder before it starts workers
 * and removes a dead worker's file).
 */
export function clusterPresence(dataDir: string): Presence {
  const dir = presenceDir(dataDir);
  fs.mkdirSync(dir, { recursive: true });
  const id = randomInt(1, 2 ** 31 - 1);
  const file = path.join(dir, String(id));
  fs.writeFileSync(file, String(process.pid));
  const presence: Presence = {
    id,
    live: async () => {
      const ids: number[] = [];
      for (const name of fs.readdirSync(dir)) {
        const pid = Number(fs.readFileSync(path.join(dir, name), 'utf8'));
        if (Number.isInteger(pid) && processAlive(pid)) ids.push(Number(name));
      }
      return ids;
    },
    onLost: () => undefined,
    close: async () => {
      fs.rmSync(file, { force: true });
    },
  };
  return presence;
}

/** How often the presence connection is proved alive, and how long the proof may take. */
export const HEARTBEAT_MS = 5_000;

/**
 * PostgreSQL: an advisory lock per live process, on a connection of its own.
 * The connection is lost when it fails, closes, or does not answer a heartbeat within HEARTBEAT_MS:
 * then it is closed (PostgreSQL frees the lock, if it still can) and `onLost` is called once; this
 * presence is done, and the process opens a new one (a new id) to come back.
 */
export async function postgresPresence(connectionString: string, log: Log = () => undefined): Promise<Presence> {
  const client = new Client({
    connectionString,
    application_name: 'paperlink presence',
    query_timeout: HEARTBEAT_MS,
    keepAlive: true,
  });
  // until it is set up, a failure rejects what is being done (connect, the lock); after, lose()
  let onError = (_err: Error) => undefined as void;
  client.on('error', (err) => onError(err));
  await client.connect();
  let id = 0;
  try {
    for (let tries = 0; !id; tries++) {
      const candidate = randomInt(1, 2 ** 31 - 1);
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
        LOCK_SPACE,
        candidate,
      ]);
      if (rows[0].ok) id = candidate;
      else if (tries > 10) throw new Error('could not take a presence lock');
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  let closed = false;
  let lost = false;
  // losing this connection means the others see this process as dead: it stops its work at once
  const lose = (why: string, err?: unknown) => {
    if (closed || lost) return;
    lost = true;
    clearInterval(heartbeat);
    log(
      `presence: the database connection was lost (${why}); other processes take over this one's work, and it stops its own until it is back`,
      { level: 'warn', presence_id: id, ...(err === undefined ? {} : { err }) },
    );
    void client.end().catch(() => undefined);
    presence.onLost();
  };
  onError = (err) => lose(err.message, err);
  client.on('end', () => lose('the connection closed'));
  const heartbeat = setInterval(
    () =>
      void client
        .query('SELECT 1')
        .catch((err: unknown) => lose(err instanceof Error ? err.message : String(err), err)),
    HEARTBEAT_MS,
  );
  heartbeat.unref();
  const presence: Presence = {
    id,
    live: async () => {
      const { rows } = await client.query<{ id: string }>(
        "SELECT objid::bigint AS id FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        [LOCK_SPACE],
      );
      return rows.map((r) => Number(r.id));
    },
    onLost: () => undefined,
    close: async () => {
      closed = true;
      clearInterval(heartbeat);
      // a lost connection was ended when it was lost
      if (!lost) await client.end();
    },
  };
  return presence;
}
