/**
 * Render once, store until stored. When a render's bytes cannot be stored (object storage or the
 * disk away), they wait here, in the database every process shares, under the render's id; the
 * retry of the same render (Temporal's activity retry on any worker, a postcard's next attempt, a
 * client repeating its Idempotency-Key) stores these bytes instead of rendering again. Bounded:
 * at most SPOOL_MAX_BYTES wait at once (a render beyond that is rendered again by its retry, as
 * before), and housekeeping deletes what waited longer than SPOOL_KEEP_MS (its retries gave up).
 * Only for storage outside the database: with STORAGE=database the bytes go in with the record.
 */
import { sql } from 'kysely';
import { iso, type Clock } from '../clock';
import type { Db } from '../db';

/** The most bytes that wait at once, over every render. */
export const SPOOL_MAX_BYTES = 256 * 1024 * 1024;
/** How long a render's bytes wait for its retry: longer than any engine retries a render (Temporal: 8 attempts in about 2 min; a postcard: until its render passes). */
export const SPOOL_KEEP_MS = 24 * 60 * 60 * 1000;

export interface Spooled<M> {
  pdf: Uint8Array;
  /** What the render said beside its bytes (its warnings, the template's name). */
  meta: M;
}

export class Spool {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly maxBytes = SPOOL_MAX_BYTES,
  ) {}

  /** The bytes a render of this id left waiting, if any. */
  async get<M>(renderId: string): Promise<Spooled<M> | undefined> {
    const row = await this.db
      .selectFrom('render_spool')
      .select(['bytes', 'meta'])
      .where('render_id', '=', renderId)
      .executeTakeFirst();
    return row && { pdf: new Uint8Array(row.bytes), meta: JSON.parse(row.meta) as M };
  }

  /** Keeps a render's bytes for its retry, when there is room; whether it did. Never throws: the retry then renders again. */
  async keep(renderId: string, pdf: Uint8Array, meta: unknown): Promise<boolean> {
    try {
      const held = await this.db
        .selectFrom('render_spool')
        .select((e) => e.fn.coalesce(e.fn.sum<number | string>('size'), sql<number>`0`).as('bytes'))
        .executeTakeFirstOrThrow();
      if (Number(held.bytes) + pdf.length > this.maxBytes) return false;
      const r = await this.db
        .insertInto('render_spool')
        .values({
          render_id: renderId,
          bytes: pdf,
          meta: JSON.stringify(meta),
          size: pdf.length,
          created_at: iso(this.clock.now()),
        })
        .onConflict((c) => c.column('render_id').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    } catch {
      return false;
    }
  }

  /**
   * Deletes (housekeeping) what waited longer than SPOOL_KEEP_MS, and what waits for a render that
   * was stored meanwhile by another run of it (one that rendered again, or won the race to store);
   * how many rows.
   */
  async purge(): Promise<number> {
    const before = iso(new Date(this.clock.now().getTime() - SPOOL_KEEP_MS));
    const r = await this.db
      .deleteFrom('render_spool')
      .where((e) =>
        e.or([
          e('created_at', '<', before),
          e.exists(
            e.selectFrom('documents as d').select('d.id').whereRef('d.render_id', '=', 'render_spool.render_id'),
          ),
        ]),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
