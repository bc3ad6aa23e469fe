/**
 * What the embedded engine's two kinds of work on the process's runner (src/jobs/runner.ts) ask of the database. A link or postcard that waits holds
 * nothing anywhere but its row: `wake_at` says when it is due (indexed where it is set). A process
 * takes due rows in batches, each under a lease (src/jobs/lease.ts: `claimed_by` = its presence id,
 * while it lives; `claimed_epoch` bumped; `wake_at` cleared; PostgreSQL skips rows another process
 * is taking), runs their step, and gives each back with its next wake-up, fenced by the epoch it
 * took. A change marks the row due now. Leases last one step, so at any moment only a few rows are
 * held, and the sweep (src/jobs/lease.ts), which frees what dead processes held, reads only those.
 */
import { sql } from 'kysely';
import type { Database, Db } from '../db';
import type { Presence } from '../db/presence';
import { iso } from '../clock';
import { freeing, isFree, LEASES, taking, releaseAll, sweep, type Held } from '../jobs/lease';
import { backlogOf, type Backlog } from '../jobs/runner';

/** The tables whose rows wait for their wake-up. */
export type Waiting = 'magic_links' | 'postcards';

/** The lease a step on a row of each table takes. */
const STEP = { magic_links: LEASES.link_step, postcards: LEASES.postcard_render } as const;

export class Claims {
  private readonly db: Db;

  constructor(
    private readonly database: Database,
    /** This process's presence: a new one after it was lost. */
    public presence: Presence,
  ) {
    this.db = database.db;
  }

  get owner(): number {
    return this.presence.id;
  }

  /** Takes up to `limit` rows of `table` due at `now`, the longest due first: their ids and lease epochs. */
  async due(table: Waiting, now: Date, limit: number): Promise<Held[]> {
    if (limit <= 0) return [];
    const at = iso(now);
    if (this.database.dialect === 'postgres') {
      // one statement (the take of src/jobs/lease.ts, written out); rows another process is claiming are skipped. The CTE is evaluated once:
      // as `id in (subquery)` PostgreSQL may run the subquery again for each row it updates, and
      // each run skips the rows the runs before it locked, so the claim takes every due row
      const rows = await sql<{ id: string; epoch: number | string }>`with due as materialized (
          select id from ${sql.table(table)} where wake_at <= ${at} and ${isFree(STEP[table], now)}
          order by wake_at limit ${limit} for update skip locked)
        update ${sql.table(table)} t set claimed_by = ${this.owner}, wake_at = null,
          claimed_epoch = t.claimed_epoch + 1
        from due where t.id = due.id returning t.id, t.claimed_epoch as epoch`.execute(this.db);
      return rows.rows.map((r) => ({ id: r.id, epoch: Number(r.epoch) }));
    }
    // SQLite (one writer): a read first, so that a pass with nothing due does not take the write lock
    const ids = (
      await this.db
        .selectFrom(table)
        .select('id')
        .where('wake_at', '<=', at)
        .where(isFree(STEP[table], now))
        .orderBy('wake_at')
        .limit(limit)
        .execute()
    ).map((r) => r.id);
    if (!ids.length) return [];
    const rows = await this.db
      .updateTable(table)
      .set({ ...taking(STEP[table], this.owner, null), wake_at: null })
      .where('id', 'in', ids)
      .where(isFree(STEP[table], now))
      .where('wake_at', '<=', at)
      .returning(['id', 'claimed_epoch as epoch'])
      .execute();
    return rows;
  }

  /**
   * Ends this process's steps on rows (one, or a batch run together): each wakes at `at` (null: not
   * before a change), or earlier if a change marked it due meanwhile. `also`: what else the step
   * decided (a link's planned retry). Only while the lease is the one it took: a step whose row
   * was taken over changes nothing.
   */
  async release(table: Waiting, held: readonly Held[], at: Date | null, also: { send_retry_at?: string | null } = {}) {
    if (!held.length) return;
    const wake =
      at === null
        ? sql<string | null>`wake_at`
        : sql<string>`case when wake_at is not null and wake_at < ${iso(at)} then wake_at else ${iso(at)} end`;
    // SQLite groups the releases of the moment into one commit (Database.inTransaction); on
    // PostgreSQL a transaction would add two round trips to one statement
    const write =
      this.database.dialect === 'sqlite' ? this.database.inTransaction : <T>(w: (db: Db) => Promise<T>) => w(this.db);
    await write((db) =>
      db
        .updateTable(table)
        .set({ wake_at: wake, ...also, ...freeing(STEP[table]) })
        .where(
          'id',
          'in',
          held.map((h) => h.id),
        )
        .where((e) => e.or(held.map((h) => e.and([e('id', '=', h.id), e('claimed_epoch', '=', h.epoch)]))))
        .execute(),
    );
  }

  /**
   * A link changed: its step runs now (by whichever process claims it first). One that just ended
   * too: its step sends the sender's end notice when one is due, and finds nothing more to do.
   */
  async linkDue(id: string, now: Date): Promise<void> {
    await this.db
      .updateTable('magic_links')
      .set({ wake_at: iso(now) })
      .where('id', '=', id)
      .where((e) => e.or([e('wake_at', 'is', null), e('wake_at', '>', iso(now))]))
      .execute();
  }

  /** How many rows of `table` are due at `now` and not taken, and since when the oldest is (for the metrics). */
  async backlog(table: Waiting, now: Date): Promise<Backlog> {
    const row = await this.db
      .selectFrom(table)
      .select((e) => [e.fn.countAll<number | string>().as('n'), e.fn.min('wake_at').as('oldest')])
      .where('wake_at', '<=', iso(now))
      .executeTakeFirst();
    return backlogOf(row);
  }

  /** The earliest wake-up among the rows of `table` nobody holds, if any. */
  async nextWake(table: Waiting): Promise<Date | undefined> {
    const row = await this.db
      .selectFrom(table)
      .select('wake_at')
      .where('wake_at', 'is not', null)
      .where('claimed_by', 'is', null)
      .orderBy('wake_at')
      .limit(1)
      .executeTakeFirst();
    return row?.wake_at ? new Date(row.wake_at) : undefined;
  }

  /**
   * Frees the leases of processes that are no longer alive, and this process's own on rows it is
   * not running (`running`: the ids of its steps under way), of every kind (src/jobs/lease.ts).
   */
  async sweep(now: Date, running: ReadonlySet<string>): Promise<number> {
    return sweep(this.db, this.owner, await this.presence.live(), now, running);
  }

  /** Gives back every lease this process holds (a clean stop): the others take the work at once. */
  releaseAll(now: Date): Promise<void> {
    return releaseAll(this.db, this.owner, now);
  }
}
