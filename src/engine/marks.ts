/**
 * Which rows Temporal has not been told of yet. Under ENGINE=temporal a row's `wake_at` is a mark:
 * a change of it (it was made, or a start or signal for it failed) that no workflow may have seen.
 * Workflows hold the waiting, so nothing else is kept there; the index on `wake_at` (where it is
 * set) finds the marked rows, however many rows there are. A mark goes when the change is known to
 * be seen: a start or signal answered after the mark was set, a workflow's read of the row after it,
 * a postcard settled. So a start of `serve` or `worker` hands over only what was marked (made while
 * Temporal was unreachable, or by a process killed between its commit and its start), in batches.
 *
 * The comparison is by time: a mark set at `v` < `t` stands for a change committed before `t` was
 * read; a start or signal sent after reading `t` (or a read of the row after it) covers it. A mark
 * set in the same millisecond stays, and costs one signal more later.
 */
import { iso } from '../clock';
import type { Db } from '../db';
import { ACTIVE } from '../links/model';

export type Marked = 'magic_links' | 'postcards';

/** Marks at `at` every open row of `table`: a link until it ends, a postcard until it is rendered or failed. */
async function markOpen(db: Db, table: Marked, at: Date): Promise<number> {
  const r =
    table === 'magic_links'
      ? await db
          .updateTable('magic_links')
          .set({ wake_at: iso(at) })
          .where('status', 'in', ACTIVE)
          .executeTakeFirst()
      : await db
          .updateTable('postcards')
          .set({ wake_at: iso(at) })
          .where('status', '=', 'received')
          .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** The engine that last ran flows over this database (settings). */
const ENGINE_KEY = 'engine';

export class Marks {
  constructor(private readonly db: Db) {}

  /** Ids of rows marked before `before`, oldest mark first: what to tell Temporal. */
  async due(table: Marked, before: Date, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom(table)
      .select('id')
      .where('wake_at', '<', iso(before))
      .orderBy('wake_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Temporal was told of these after `before`: their marks older than that go. */
  async clear(table: Marked, ids: string[], before: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable(table)
      .set({ wake_at: null })
      .where('id', 'in', ids)
      .where('wake_at', '<', iso(before))
      .execute();
  }

  /**
   * A start or signal failed: the row is marked (unless it is already, from earlier), to be told
   * later; an ended link too (its revocation is what the workflow has to hear).
   */
  async mark(table: Marked, id: string, at: Date): Promise<void> {
    await this.db
      .updateTable(table)
      .set({ wake_at: iso(at) })
      .where('id', '=', id)
      .where('wake_at', 'is', null)
      .execute();
  }
}

/**
 * When the engine that runs flows over this database changes, every open row is marked due once:
 * the new engine has never seen them. The embedded engine then plans each and writes its next
 * wake-up; Temporal gets a workflow for each. Once per change of engine, recorded in settings after
 * the marks (a crash between the two marks them again, harmlessly). A database from before the
 * record is taken as embedded's, whose `wake_at` means what it meant then. How many rows were marked.
 */
export async function markOnEngineChange(db: Db, engine: 'embedded' | 'temporal', now: Date): Promise<number> {
  const recorded = await db.selectFrom('settings').select('value').where('key', '=', ENGINE_KEY).executeTakeFirst();
  const before = recorded?.value ?? 'embedded';
  if (recorded && before === engine) return 0;
  let marked = 0;
  if (before !== engine)
    for (const table of ['magic_links', 'postcards'] as const) marked += await markOpen(db, table, now);
  await db
    .insertInto('settings')
    .values({ key: ENGINE_KEY, value: engine })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: engine }))
    .execute();
  return marked;
}
