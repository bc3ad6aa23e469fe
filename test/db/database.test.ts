import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isUniqueViolation, openDatabase, PreparedQuery, type Database } from '../../src/db';

/** Lets the event loop run `n` turns (no wall-clock wait: each turn runs what is ready). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

describe('SQLite: grouped writes and prepared statements', () => {
  let dir: string;
  let database: Database;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-db-'));
    database = await openDatabase({ sqlitePath: path.join(dir, 'paperlink.db') });
  });
  afterEach(async () => {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const setting = (key: string) =>
    database.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();

  it('commits the writes of one moment together, and a write that fails fails alone', async () => {
    await database.db.insertInto('settings').values({ key: 'taken', value: 'first' }).execute();
    const write = (key: string, value: string) =>
      database.inTransaction((trx) => trx.insertInto('settings').values({ key, value }).execute());
    // the three arrive in the same turn, so they share one transaction; the middle one breaks the primary key
    const results = await Promise.allSettled([write('a', '1'), write('taken', 'second'), write('b', '2')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(isUniqueViolation((results[1] as PromiseRejectedResult).reason)).toBe(true);
    await expect(setting('a')).resolves.toEqual({ value: '1' });
    await expect(setting('b')).resolves.toEqual({ value: '2' });
    await expect(setting('taken')).resolves.toEqual({ value: 'first' });
  });

  it('a prepared read never sees what an open transaction has not committed, and sees it once committed', async () => {
    const read = new PreparedQuery<{ key: string }, { value: string }>(database.db, (d, arg) =>
      d.selectFrom('settings').select('value').where('key', '=', arg('key')),
    );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const writing = database.db.transaction().execute(async (trx) => {
      await trx.insertInto('settings').values({ key: 'k', value: 'uncommitted' }).execute();
      await gate;
    });
    await turns(3);
    let seen: { value: string } | undefined | 'pending' = 'pending';
    const reading = read.first(database.db, { key: 'k' }).then((r) => (seen = r));
    await turns(5);
    // the read waits for the transaction instead of reading its uncommitted row
    expect(seen).toBe('pending');
    release();
    await writing;
    await reading;
    expect(seen).toEqual({ value: 'uncommitted' });
    // with no transaction open, a prepared read answers at once from the database
    await expect(read.first(database.db, { key: 'missing' })).resolves.toBeUndefined();
  });

  it('a prepared statement in a grouped write reads that write', async () => {
    const read = new PreparedQuery<{ key: string }, { value: string }>(database.db, (d, arg) =>
      d.selectFrom('settings').select('value').where('key', '=', arg('key')),
    );
    const seen = await database.inTransaction(async (trx) => {
      await trx.insertInto('settings').values({ key: 'mine', value: 'v' }).execute();
      return read.first(trx, { key: 'mine' });
    });
    expect(seen).toEqual({ value: 'v' });
  });

  it('a transaction that fails rolls back, and prepared reads answer again at once', async () => {
    const read = new PreparedQuery<{ key: string }, { value: string }>(database.db, (d, arg) =>
      d.selectFrom('settings').select('value').where('key', '=', arg('key')),
    );
    await expect(
      database.db.transaction().execute(async (trx) => {
        await trx.insertInto('settings').values({ key: 'rolled back', value: 'x' }).execute();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(read.first(database.db, { key: 'rolled back' })).resolves.toBeUndefined();
  });
});

// better-sqlite3 12 aborts the process when the garbage collector frees a statement on Node 24.19
// and later (nodejs/node#65446); sqlite-module.ts loads the build that runs on this Node. Run in a
// child process, as a server would run: an abort must fail this test, not jest.
describe('SQLite on this Node.js', () => {
  it('frees statements the garbage collector collects without aborting', () => {
    const sqliteModule = path.resolve(__dirname, '../../dist/src/db/sqlite-module.js');
    // statements left to the collector between turns of the event loop, as a server's are: V8
    // frees some from its own tasks, outside any JavaScript, which is where version 12 aborts
    const script = `
      const SQLite = require(${JSON.stringify(sqliteModule)}).default;
      const db = new SQLite(':memory:');
      db.exec('create table t (n integer)');
      (async () => {
        for (let round = 0; round < 300; round++) {
          for (let i = 0; i < 300; i++) db.prepare('insert into t values (' + i + ')').run();
          const garbage = [];
          for (let i = 0; i < 20000; i++) garbage.push({ i });
          await new Promise((r) => setTimeout(r, 5));
        }
        console.log(db.prepare('select count(*) as c from t').get().c);
        db.close();
      })();`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect({ signal: child.signal, status: child.status, out: child.stdout.trim() }).toEqual({
      signal: null,
      status: 0,
      out: '90000',
    });
  });
});
