/**
 * What the embedded engine's scheduler asks of the database. A link or postcard that waits holds
 * nothing anywhere but its row: `wake_at` says when it is due (indexed where it is set). A process
 * claims due rows in batches (`claimed_by` = its presence id, `wake_at` cleared; PostgreSQL skips
 * rows another process is claiming), runs their step, and releases each with its next wake-up. A
 * change marks the row due now. Claims last one step, so at any moment only a few rows are claimed,
 * and the sweep, which frees what dead processes held (and this process's own when a release
 * failed), reads only those, by a partial index. Webhook deliveries are claimed by the dispatcher
 * (src/webhooks); their dead claims are freed here too. A link's e-mail is leased by its sender
 * (`sending_by`); a dead sender's lease is freed and its link made due.
 */
import { sql } from 'kysely';
import type { Database, Db } from '../db';
import type { Presence } from '../db/presence';
import { iso } from '../clock';

/** The tables whose rows wait for their wake-up. */
export type Waiting = 'magic_links' | 'postcards';

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

  /** Claims up to `limit` rows of `table` due at `now`, the longest due first; their ids. */
  async due(table: Waiting, now: Date, limit: number): Promise<string[]> {
    if (limit <= 0) return [];
    const at = iso(now);
    if (this.database.dialect === 'postgres') {
      // one statement; rows another process is claiming are skipped. The CTE is evaluated once:
      // as `id in (subquery)` PostgreSQL may run the subquery again for each row it updates, and
      // each run skips the rows the runs before it locked, so the claim takes every due row
      const rows = await sql<{ id: string }>`with due as materialized (
          select id from ${sql.table(table)} where wake_at <= ${at} and claimed_by is null
          order by wake_at limit ${limit} for update skip locked)
        update ${sql.table(table)} t set claimed_by = ${this.owner}, wake_at = null
        from due where t.id = due.id returning t.id`.execute(this.db);
      return rows.rows.map((r) => r.id);
    }
    // SQLite (one writer): a read first, so that a pass with nothing due does not take the write lock
    const ids = (
      await this.db
        .selectFrom(table)
        .select('id')
        .where('wake_at', '<=', at)
        .where('claimed_by', 'is', null)
        .orderBy('wake_at')
        .limit(limit)
        .execute()
    ).map((r) => r.id);
    if (!ids.length) return [];
    const rows = await this.db
      .updateTable(table)
      .set({ claimed_by: this.owner, wake_at: null })
      .where('id', 'in', ids)
      .where('claimed_by', 'is', null)
      .where('wake_at', '<=', at)
      .returning('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Ends this process's step on a row: it wakes at `at` (null: not before a change), or earlier if
   * a change marked it due meanwhile. `also`: what else the step decided (a link's planned retry).
   */
  async release(table: Waiting, id: string, at: Date | null, also: { send_retry_at?: string | null } = {}) {
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
        .set({ wake_at: wake, ...also })
        .set({ claimed_by: null })
        .where('id', '=', id)
        .where('claimed_by', '=', this.owner)
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
   * Frees what processes that are no longer alive claimed, and what this process claimed but is
   * not running (`running`: the ids of its steps under way); what it frees is due `now`. Reads
   * only claimed rows and e-mail leases, never the rows that merely wait. Returns how many rows it freed.
   */
  async sweep(now: Date, running: ReadonlySet<string>): Promise<number> {
    const live = await this.presence.live();
    if (!live.includes(this.owner)) live.push(this.owner);
    const at = iso(now);
    await this.db
      .updateTable('deliveries')
      .set({ claimed_by: null, claimed_until: null })
      .where('claimed_by', 'is not', null)
      .where('claimed_by', 'not in', live)
      .execute();
    // a link whose sender died: its step sends it (a lease without a sender is from before leases
    // named theirs: its sender is gone by now)
    const unleased = await this.db
      .updateTable('magic_links')
      .set({ sending_by: null, sending_until: null, wake_at: at })
      .where('sending_until', 'is not', null)
      .where((e) => e.or([e('sending_by', 'is', null), e('sending_by', 'not in', live)]))
      .executeTakeFirst();
    let freed = Number(unleased.numUpdatedRows);
    const mine = [...running];
    for (const table of ['magic_links', 'postcards'] as const) {
      const r = await this.db
        .updateTable(table)
        .set({ claimed_by: null, wake_at: sql<string>`coalesce(wake_at, ${at})` })
        .where('claimed_by', 'is not', null)
        .where((e) =>
          e.or([
            e('claimed_by', 'not in', live),
            mine.length
              ? e.and([e('claimed_by', '=', this.owner), e('id', 'not in', mine)])
              : e('claimed_by', '=', this.owner),
          ]),
        )
        .executeTakeFirst();
      freed += Number(r.numUpdatedRows);
    }
    return freed;
  }

  /** Gives up everything this process claimed (a clean stop): the others take it at once. */
  async releaseAll(now: Date): Promise<void> {
    await this.db
      .updateTable('deliveries')
      .set({ claimed_by: null, claimed_until: null })
      .where('claimed_by', '=', this.owner)
      .execute();
    for (const table of ['magic_links', 'postcards'] as const)
      await this.db
        .updateTable(table)
        .set({ claimed_by: null, wake_at: sql<string>`coalesce(wake_at, ${iso(now)})` })
        .where('claimed_by', '=', this.owner)
        .execute();
  }
}
