/**
 * The links' table as every part of src/links uses it: a link's row, the access log (a refusal is
 * also a `magic_link.access_denied` event, in the same transaction), and the link's events.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import { afterCommit, type Db } from '../db';
import type { MagicLinkRow } from '../db/schema';
import { NotFoundError } from '../errors';
import type { Events } from '../events';
import { sequentialId } from '../ids';
import { linkRefusals } from '../metrics';
import { ALLOWED, linkInfo, type Visitor } from './model';

export type LinkEvent =
  | 'magic_link.sent'
  | 'magic_link.send_failed'
  | 'magic_link.opened'
  | 'magic_link.viewed'
  | 'magic_link.access_denied'
  | 'magic_link.expired'
  | 'magic_link.notice_failed';

/** How long a repeated opening of an ended link counts into its entry; after it, a new entry (and event). */
const REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000;

export class LinkRows {
  constructor(
    readonly db: Db,
    readonly clock: Clock,
    readonly events: Events,
  ) {}

  now(): string {
    return iso(this.clock.now());
  }

  /** A link's document, or 404 when it is gone. */
  async documentName(id: string): Promise<{ id: string; name: string }> {
    const doc = await this.db.selectFrom('documents').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
    if (!doc) throw new NotFoundError('document', id);
    return doc;
  }

  async row(id: string, db: Db = this.db): Promise<MagicLinkRow> {
    const row = await db.selectFrom('magic_links').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('magic link', id);
    return row;
  }

  /**
   * Writes an access-log entry; a refusal is also a `magic_link.access_denied` event, in the same
   * transaction. An opening of an ended link repeating the newest entry (same address and browser,
   * within a day) counts into it instead.
   */
  async record(
    linkId: string,
    kind: string,
    outcome: string,
    v: Visitor,
    email: string | null = null,
    db: Db = this.db,
  ): Promise<void> {
    const now = this.clock.now();
    const entry = {
      // in order even within a millisecond: the newest entry is the one with the highest id
      id: sequentialId('ev', now),
      link_id: linkId,
      at: iso(now),
      kind,
      outcome,
      ip: v.ip ?? null,
      user_agent: v.userAgent?.slice(0, 300) ?? null,
      email,
    };
    if (ALLOWED.has(outcome)) {
      await db.insertInto('link_events').values(entry).execute();
      return;
    }
    // an opening of an ended link that repeats the link's newest entry from the same address and
    // browser within a day (a scanner or a bookmark, again and again) adds to its count: one row and
    // one event, however often it comes. Other refusals (a failed sign-in) are each an entry.
    if (kind === 'opened' && outcome === 'unavailable' && email === null) {
      const repeated = await db
        .updateTable('link_events')
        .set((e) => ({ count: e('count', '+', 1), last_at: entry.at }))
        .where('id', '=', (e) =>
          e.selectFrom('link_events').select('id').where('link_id', '=', linkId).orderBy('id', 'desc').limit(1),
        )
        .where('at', '>', iso(new Date(now.getTime() - REPEAT_WINDOW_MS)))
        .where('kind', '=', kind)
        .where('outcome', '=', outcome)
        .where('email', 'is', null)
        .where((e) => (entry.ip === null ? e('ip', 'is', null) : e('ip', '=', entry.ip)))
        .where((e) =>
          entry.user_agent === null ? e('user_agent', 'is', null) : e('user_agent', '=', entry.user_agent),
        )
        .executeTakeFirst();
      if (Number(repeated.numUpdatedRows) > 0) {
        afterCommit(db, () => linkRefusals.inc({ reason: outcome }));
        return;
      }
    }
    const write = async (trx: Db) => {
      await trx.insertInto('link_events').values(entry).execute();
      const row = await trx.selectFrom('magic_links').selectAll().where('id', '=', linkId).executeTakeFirstOrThrow();
      const { id: _id, link_id: _link, ...access } = entry;
      await this.emit(trx, 'magic_link.access_denied', row, { access });
      afterCommit(trx, () => linkRefusals.inc({ reason: outcome }));
    };
    await (db === this.db ? this.db.transaction().execute(write) : write(db));
  }

  emit(trx: Db, type: LinkEvent, row: MagicLinkRow, extra: Record<string, unknown> = {}) {
    return this.events.emit(trx, type, row.id, () => ({ object: linkInfo(row), ...extra }));
  }

  /** One event for each of `rows`, written in one statement; `extra(row)`: what each carries besides the link. */
  emitEach(
    trx: Db,
    type: LinkEvent,
    rows: readonly MagicLinkRow[],
    extra: (row: MagicLinkRow) => Record<string, unknown>,
  ) {
    return this.events.emitEach(
      trx,
      type,
      rows.map((row) => ({ resourceId: row.id, data: () => ({ object: linkInfo(row), ...extra(row) }) })),
    );
  }
}
