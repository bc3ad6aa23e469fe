/**
 * Background work of the embedded engine is claimed, so that several `paperlink serve` processes
 * on one PostgreSQL database do each job once: a link's lifecycle and a postcard's render are run
 * by the process whose presence id is in the row's `claimed_by`, a webhook delivery by the one in
 * `claimed_by` until `claimed_until` (src/webhooks), a link's e-mail by the one in `sending_by`.
 * What a dead process claimed is freed by the next sweep (every few seconds, and at start), and
 * the living adopt it.
 */
import type { ExpressionBuilder } from 'kysely';
import type { Db, Schema } from '../db';
import type { Presence } from '../db/presence';
import { ACTIVE as ACTIVE_LINK } from '../links';

export class Claims {
  constructor(
    private readonly db: Db,
    /** This process's presence: a new one after it was lost. */
    public presence: Presence,
  ) {}

  get owner(): number {
    return this.presence.id;
  }

  /** Claims a link's lifecycle for this process unless a live process runs it; false when another does, or it has ended. */
  link(id: string): Promise<boolean> {
    return this.take('magic_links', id, ACTIVE_LINK);
  }

  /** Claims a received postcard's render for this process; false when another process has it, or it is done. */
  postcard(id: string): Promise<boolean> {
    return this.take('postcards', id, ['received']);
  }

  /** Claims the row for this process while its status is one of `open` and nobody else holds it. */
  private async take(table: 'magic_links' | 'postcards', id: string, open: string[]): Promise<boolean> {
    // made or accepted here, it is ours already: no write
    const row = await this.db
      .selectFrom(table)
      .select(['claimed_by', 'status'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (row?.claimed_by === this.owner) return open.includes(row.status);
    const r = await this.db
      .updateTable(table)
      .set({ claimed_by: this.owner })
      .where('id', '=', id)
      .where('status', 'in', open)
      .where((e) => e.or([e('claimed_by', 'is', null), e('claimed_by', '=', this.owner)]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Frees what processes that are no longer alive claimed, and returns the links and postcards
   * nobody runs now or this process claimed (it then claims and runs those it is not running), and
   * the links whose send lease it freed (their lifecycles, wherever they run, are told).
   */
  async sweep(): Promise<{ links: string[]; postcards: string[]; unleased: string[] }> {
    const live = await this.presence.live();
    if (!live.includes(this.owner)) live.push(this.owner);
    await this.db
      .updateTable('deliveries')
      .set({ claimed_by: null, claimed_until: null })
      .where('claimed_by', 'is not', null)
      .where('claimed_by', 'not in', live)
      .execute();
    // (a lease without a sender is from before leases named theirs: its sender is gone by now)
    const unleased = await this.db
      .updateTable('magic_links')
      .set({ sending_by: null, sending_until: null })
      .where('sending_until', 'is not', null)
      .where((e) => e.or([e('sending_by', 'is', null), e('sending_by', 'not in', live)]))
      .returning('id')
      .execute();
    await this.db
      .updateTable('magic_links')
      .set({ claimed_by: null })
      .where('claimed_by', 'is not', null)
      .where('claimed_by', 'not in', live)
      .execute();
    await this.db
      .updateTable('postcards')
      .set({ claimed_by: null })
      .where('claimed_by', 'is not', null)
      .where('claimed_by', 'not in', live)
      .execute();
    // this process's own too: a flow of ours that failed is started again (one running is left be)
    const free = (e: ExpressionBuilder<Schema, 'magic_links' | 'postcards'>) =>
      e.or([e('claimed_by', 'is', null), e('claimed_by', '=', this.owner)]);
    const links = await this.db
      .selectFrom('magic_links')
      .select('id')
      .where('status', 'in', ACTIVE_LINK)
      .where(free)
      .orderBy('id')
      .execute();
    const postcards = await this.db
      .selectFrom('postcards')
      .select('id')
      .where('status', '=', 'received')
      .where(free)
      .orderBy('id')
      .execute();
    // unleased: links whose e-mail a dead process was sending; whoever runs them should send it now
    return {
      links: links.map((r) => r.id),
      postcards: postcards.map((r) => r.id),
      unleased: unleased.map((r) => r.id),
    };
  }

  /** Gives up everything this process claimed (a clean stop): the others adopt it at their next sweep. */
  async release(): Promise<void> {
    await this.db
      .updateTable('deliveries')
      .set({ claimed_by: null, claimed_until: null })
      .where('claimed_by', '=', this.owner)
      .execute();
    await this.db.updateTable('magic_links').set({ claimed_by: null }).where('claimed_by', '=', this.owner).execute();
    await this.db.updateTable('postcards').set({ claimed_by: null }).where('claimed_by', '=', this.owner).execute();
  }
}
