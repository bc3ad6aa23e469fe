/**
 * A recipient's view: the link a token names (opening writes nothing, so mail scanners neither open
 * a link nor start its timer) and the counted view, decided by one conditional UPDATE so that N
 * views allowed means exactly N views, whatever runs at once. The first counted view opens the
 * link (a timer from opening starts); the last allowed one ends it.
 */
import { iso } from '../clock';
import { afterCommit, PreparedQuery, type Db } from '../db';
import { linkViews } from '../metrics';
import type { LinkSessionsTable, MagicLinkRow } from '../db/schema';
import { newId } from '../ids';
import { sha256 } from '../secrets';
import type { MagicLinkApps } from './app';
import type { LinkChange } from './lifecycle';
import {
  ACTIVE,
  linkInfo,
  OPEN_COLUMNS,
  settingsOf,
  VIEW_MS,
  type OpenLink,
  type OpenRow,
  type Visitor,
} from './model';
import { deadlineAtOpening } from './policy';
import { viewersOf } from './pagetimes';
import type { LinkRows } from './rows';
import type { LinkSessions } from './sessions';

function viewQueries(db: Db) {
  return {
    byToken: new PreparedQuery<{ hash: string }, OpenRow & { document_name: string }>(db, (d, arg) =>
      d
        .selectFrom('magic_links')
        .innerJoin('documents', 'documents.id', 'magic_links.document_id')
        .select(OPEN_COLUMNS.map((c) => `magic_links.${c}` as const))
        .select('documents.name as document_name')
        .where('magic_links.token_hash', '=', arg('hash')),
    ),
    // counts a view only while the link is active, before its deadline and under its view limit
    count: new PreparedQuery<{ id: string; at: string }, Pick<MagicLinkRow, 'views_used' | 'max_views' | 'expires_at'>>(
      db,
      (d, arg) =>
        d
          .updateTable('magic_links')
          .set((e) => ({ views_used: e('views_used', '+', 1) }))
          .where('id', '=', arg('id'))
          .where('status', 'in', ACTIVE)
          .where((w) => w.or([w('expires_at', 'is', null), w('expires_at', '>', arg('at'))]))
          .where((w) => w.or([w('max_views', 'is', null), w('views_used', '<', w.ref('max_views'))]))
          .returning(['views_used', 'max_views', 'expires_at']),
    ),
    logView: new PreparedQuery<
      { id: string; linkId: string; at: string; ip: string | null; userAgent: string | null; email: string },
      never
    >(db, (d, arg) =>
      d.insertInto('link_events').values({
        id: arg('id'),
        link_id: arg('linkId'),
        at: arg('at'),
        kind: 'viewed',
        outcome: 'ok',
        ip: arg('ip'),
        user_agent: arg('userAgent'),
        email: arg('email'),
      }),
    ),
    // a session's view starts only when none of its views is running
    startView: new PreparedQuery<{ until: string; hash: string; at: string }, Pick<LinkSessionsTable, 'view_until'>>(
      db,
      (d, arg) =>
        d
          .updateTable('link_sessions')
          .set({ view_until: arg('until') })
          .where('token_hash', '=', arg('hash'))
          .where((w) => w.or([w('view_until', 'is', null), w('view_until', '<=', arg('at'))]))
          .returning(['view_until']),
    ),
    numberView: new PreparedQuery<{ n: number; hash: string }, never>(db, (d, arg) =>
      d
        .updateTable('link_sessions')
        .set({ view_number: arg('n') })
        .where('token_hash', '=', arg('hash')),
    ),
    endView: new PreparedQuery<{ until: string | null; hash: string }, never>(db, (d, arg) =>
      d
        .updateTable('link_sessions')
        .set({ view_until: arg('until') })
        .where('token_hash', '=', arg('hash')),
    ),
  };
}

export class LinkViews {
  /** The queries of a recipient's view, compiled once (see PreparedQuery). */
  private readonly q: ReturnType<typeof viewQueries>;

  constructor(
    private readonly rows: LinkRows,
    private readonly apps: MagicLinkApps,
    private readonly sessions: LinkSessions,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>,
    /** Ends a link its limits ended (what MagicLinks.end does for `expired`). */
    private readonly end: (id: string) => Promise<unknown>,
    /** Tells the link's flow what happened. */
    private readonly changed: (id: string, change: LinkChange) => void,
  ) {
    this.q = viewQueries(rows.db);
  }

  /** Whether a link row may still be used at this moment (the same test the view UPDATE makes). */
  private usable(row: OpenRow): boolean {
    const now = this.rows.now();
    return (
      ACTIVE.includes(row.status) &&
      (row.expires_at === null || row.expires_at > now) &&
      (row.max_views === null || row.views_used < row.max_views)
    );
  }

  /**
   * The link a recipient's token names, if it can still be used; undefined for unknown, expired and
   * revoked alike. Opening writes nothing: a mail scanner that fetches every link it sees neither
   * opens the link nor starts its timer (the first counted view does, see countView). A recipient
   * whose view is still running (`sessionToken`, within VIEW_MS of the counted view) keeps the
   * link when that view was its last; a link's time and its revocation end every view.
   */
  async open(token: string, v: Visitor, sessionToken?: string): Promise<OpenLink | undefined> {
    if (!/^[0-9A-Za-z]{20,100}$/.test(token)) return undefined;
    const found = await this.q.byToken.first(this.rows.db, { hash: sha256(token) });
    if (!found) return undefined;
    const { document_name: documentName, ...row } = found;
    const app = await this.apps.get();
    if (!app) return undefined;
    const link = { row, document: { id: row.document_id, name: documentName }, app };
    if (!this.usable(row)) {
      // used up by views, not revoked nor past its time: a running view goes on
      const timeLeft = row.expires_at === null || row.expires_at > this.rows.now();
      const session = row.status !== 'revoked' && timeLeft ? await this.sessions.find(link, sessionToken) : undefined;
      if (session && this.sessions.viewing(session)) return link;
      if (ACTIVE.includes(row.status)) await this.end(row.id);
      await this.rows.record(row.id, 'opened', 'unavailable', v);
      return undefined;
    }
    return link;
  }

  /**
   * Starts one view, atomically: the UPDATE succeeds only while the link is active, before its
   * deadline and under its view limit. With N views allowed, exactly N views start. One session
   * starts one view at a time (its requests at the same moment start one between them). The first
   * view is the link's opening: it starts a timer that runs from opening. The count, the opening,
   * the access-log entry and the session's view commit together.
   */
  async count(
    link: OpenLink,
    session: { email: string; hash: string; viewUntil: string | null },
    v: Visitor,
  ): Promise<{ ok: boolean; viewsUsed: number; maxViews: number | null; expiresAt: string | null }> {
    const result = await this.inTransaction(async (trx) => {
      // the time is read when the write runs: a grouped write runs after those queued before it
      const now = this.rows.clock.now();
      const at = iso(now);
      // this session's view starts now, unless another of its requests started it a moment ago
      const started = await this.q.startView.first(trx, {
        until: iso(new Date(now.getTime() + VIEW_MS)),
        hash: session.hash,
        at,
      });
      if (!started) {
        // another request of this session started its view a moment ago: that view's number
        const current = await this.rows.row(link.row.id, trx);
        const own = await trx
          .selectFrom('link_sessions')
          .select('view_number')
          .where('token_hash', '=', session.hash)
          .executeTakeFirst();
        return {
          ok: true,
          viewsUsed: own?.view_number ?? current.views_used,
          maxViews: current.max_views,
          expiresAt: current.expires_at,
          ended: false,
          opened: false,
        };
      }
      let row = await this.q.count.first(trx, { id: link.row.id, at });
      if (!row) {
        await this.q.endView.execute(trx, { until: session.viewUntil, hash: session.hash });
        await this.rows.record(link.row.id, 'viewed', 'unavailable', v, session.email, trx);
        return { ok: false, viewsUsed: 0, maxViews: null, expiresAt: null, ended: false, opened: false };
      }
      let opened = false;
      if (!link.row.opened_at) {
        // the first view opens the link: a timer from opening starts now
        const full = await this.rows.row(link.row.id, trx);
        if (!full.opened_at) {
          const deadline = deadlineAtOpening(settingsOf(full), full.expires_at ? new Date(full.expires_at) : null, now);
          const first = await trx
            .updateTable('magic_links')
            .set({ opened_at: at, expires_at: deadline?.toISOString() ?? null })
            .where('id', '=', full.id)
            .where('opened_at', 'is', null)
            .returningAll()
            .executeTakeFirst();
          if (first) {
            opened = true;
            row = { ...row, expires_at: first.expires_at };
            await this.rows.record(first.id, 'opened', 'first_opening', v, session.email, trx);
            await this.rows.emit(trx, 'magic_link.opened', first);
          }
        }
      }
      await this.q.numberView.execute(trx, { n: row.views_used, hash: session.hash });
      await this.q.logView.execute(trx, {
        id: newId('ev', now),
        linkId: link.row.id,
        at,
        ip: v.ip ?? null,
        userAgent: v.userAgent?.slice(0, 300) ?? null,
        email: session.email,
      });
      // the whole link is read only when a webhook wants the event
      // with each person's views and time per page so far (what the viewer reported of earlier views)
      await this.rows.events.emit(trx, 'magic_link.viewed', link.row.id, async () => ({
        object: { ...linkInfo(await this.rows.row(link.row.id, trx)), viewers: await viewersOf(trx, link.row.id) },
      }));
      afterCommit(trx, () => linkViews.inc());
      const viewsLeft = row.max_views === null ? null : Math.max(0, row.max_views - row.views_used);
      // the last allowed view ends the link at once
      if (viewsLeft === 0) {
        const ended = await trx
          .updateTable('magic_links')
          .set({ status: 'expired', ended_at: at, ended_reason: 'views' })
          .where('id', '=', link.row.id)
          .where('status', 'in', ACTIVE)
          .returningAll()
          .executeTakeFirst();
        if (ended) await this.rows.emit(trx, 'magic_link.expired', ended, { reason: 'views' });
      }
      return {
        ok: true,
        viewsUsed: row.views_used,
        maxViews: row.max_views,
        expiresAt: row.expires_at,
        ended: viewsLeft === 0,
        opened,
      };
    });
    // the lifecycle flow hears of an opening (its timer) and of a view that ended the link
    if (result.opened) this.changed(link.row.id, 'opened');
    if (result.ended) this.changed(link.row.id, 'viewed');
    return { ok: result.ok, viewsUsed: result.viewsUsed, maxViews: result.maxViews, expiresAt: result.expiresAt };
  }
}
