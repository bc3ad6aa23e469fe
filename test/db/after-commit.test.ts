/**
 * afterCommit: what a transaction asks to run once it has committed runs then, when a second
 * connection sees its writes, and never for a transaction that rolled back. The dispatcher is
 * woken this way for each event written: a wake-up before the commit read nothing and slept
 * (a webhook delivery waited for the next poll, forever under a fake clock).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterCommit, openDatabase, type Database } from '../../src/db';
import { BACKENDS, freshPostgres } from '../support/service';

describe.each(BACKENDS)('afterCommit on %s', (backend) => {
  let dir: string;
  let database: Database;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-commit-'));
    database =
      backend === 'postgres'
        ? await openDatabase({ databaseUrl: await freshPostgres() })
        : await openDatabase({ sqlitePath: path.join(dir, 'paperlink.db') });
  });
  afterEach(async () => {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** What the database shows outside any transaction (on PostgreSQL another pooled connection). */
  const stored = async (key: string) =>
    (await database.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst())?.value;

  it('runs after the commit, when the write is visible outside, and not before', async () => {
    let ran = 0;
    let reading: Promise<string | undefined> | undefined;
    await database.db.transaction().execute(async (trx) => {
      await trx.insertInto('settings').values({ key: 'k', value: 'v' }).execute();
      afterCommit(trx, () => {
        ran++;
        reading = stored('k');
      });
      // later in the same transaction: not yet
      await trx.selectFrom('settings').select('key').execute();
      await new Promise((r) => setImmediate(r));
      expect(ran).toBe(0);
    });
    expect(ran).toBe(1);
    await expect(reading).resolves.toBe('v');
  });

  it('never runs for a transaction that rolled back', async () => {
    let ran = 0;
    await expect(
      database.db.transaction().execute(async (trx) => {
        await trx.insertInto('settings').values({ key: 'gone', value: 'v' }).execute();
        afterCommit(trx, () => ran++);
        throw Object.assign(new Error('changed my mind'), { code: 'test' });
      }),
    ).rejects.toMatchObject({ code: 'test' });
    expect(ran).toBe(0);
    expect(await stored('gone')).toBeUndefined();
  });

  it('runs once for each write of a group, after the group is committed, and not for the one that failed', async () => {
    await database.db.insertInto('settings').values({ key: 'taken', value: 'first' }).execute();
    const ran: string[] = [];
    const write = (key: string) =>
      database.inTransaction(async (trx) => {
        await trx.insertInto('settings').values({ key, value: key }).execute();
        afterCommit(trx, () => ran.push(key));
      });
    // on SQLite the three share a transaction that fails on the middle one, and run again alone
    const results = await Promise.allSettled([write('a'), write('taken'), write('b')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(ran.sort()).toEqual(['a', 'b']);
  });

  it('runs on the next turn when given the database itself (what it wrote is committed already)', async () => {
    let ran = 0;
    await database.db.insertInto('settings').values({ key: 'now', value: 'v' }).execute();
    afterCommit(database.db, () => ran++);
    expect(ran).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(ran).toBe(1);
  });
});
