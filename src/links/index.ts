/**
 * Magic Links: made for a stored document, e-mailed to the recipient, opened at PUBLIC_URL/l/<token>.
 * The token is derived per link and generation and stored only as a hash. Whether a link still
 * works is decided by one conditional UPDATE at every view, so the view limit holds under any
 * concurrency and expiry never waits for a timer.
 *
 * This class is what the rest of the service uses: making, listing and ending links here, and the
 * parts it is made of for the rest: tokens.ts (URL tokens), delivery.ts (e-mailing a link),
 * codes.ts (e-mailed codes), sessions.ts (a recipient's sign-in), views.ts (opening and counting
 * views), rows.ts (the table, the access log and the events), model.ts (what a link is).
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import { deleteInBatches, isUniqueViolation, type Db } from '../db';
import type { MagicLinkRow, Schema } from '../db/schema';
import type { SelectQueryBuilder } from 'kysely';
import { NotFoundError, ValidationError, type ErrorDetail } from '../errors';
import type { Events } from '../events';
import { isObject } from '../guards';
import { firstIdAt, newId } from '../ids';
import type { Mailer } from '../mail';
import { toPage, type Page, type PageQuery } from '../pagination';
import { sha256 } from '../secrets';
import type { MagicLinkApp, MagicLinkApps } from './app';
import { LinkCodes } from './codes';
import { LinkDelivery, urlOf } from './delivery';
import type { LinkChange, LinkState } from './lifecycle';
import {
  ACCESS_LOG_SHOWN,
  ACTIVE,
  expiryReason,
  type AccessEntry,
  LINK_STATUSES,
  linkInfo,
  type LinkInfo,
  type OpenLink,
  type Viewer,
  type Visitor,
} from './model';
import { deadlineAtCreation, type LinkSettings } from './policy';
import { LinkNotices, noticesDue } from './notices';
import { LinkPageTimes, viewersOf } from './pagetimes';
import { LinkRows } from './rows';
import { LinkSessions, type Grant } from './sessions';
import type { LinkKeyring } from './keyring';
import { LinkTokens } from './tokens';
import { LinkViews } from './views';

export {
  ACCESS_LOG_SHOWN,
  ACTIVE,
  LINK_STATUSES,
  linkInfo,
  VIEW_MS,
  type AccessEntry,
  type LinkInfo,
  type LinkStatus,
  type OpenLink,
  type OpenRow,
  type Visitor,
} from './model';
export { CODE_TRIES, CODE_TTL_MS, CODES_PER_HOUR } from './codes';
export { SEND_LEASE_MS } from './delivery';
export { SESSION_TTL_MS, type Grant } from './sessions';

export class MagicLinks {
  /** Called whenever a link changes in a way its lifecycle flow should look at. */
  onChange: (linkId: string, change: LinkChange) => void = () => undefined;
  /** This process's presence id (src/db/presence.ts), written beside a send lease it takes. */
  owner = 0;
  /** The presence ids of the processes alive now (src/db/presence.ts): a send lease of another is free once its holder is gone. */
  live: () => Promise<number[]> = async () => [this.owner];

  private readonly rows: LinkRows;
  private readonly tokens: LinkTokens;
  private readonly delivery: LinkDelivery;
  private readonly codes: LinkCodes;
  private readonly sessions: LinkSessions;
  private readonly views: LinkViews;
  private readonly pageTimes: LinkPageTimes;
  private readonly notices: LinkNotices;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    mailer: Mailer,
    readonly apps: MagicLinkApps,
    events: Events,
    /** The keys URL tokens are derived with (outside the database). */
    keyring: LinkKeyring,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T> = (work) =>
      db.transaction().execute(work),
    /** PostgreSQL: a write to several links locks them in id order first (lockInOrder). */
    private readonly lockRows = false,
  ) {
    const changed = (id: string, change: LinkChange) => this.onChange(id, change);
    this.rows = new LinkRows(db, clock, events);
    this.tokens = new LinkTokens(keyring);
    this.delivery = new LinkDelivery(
      this.rows,
      this.tokens,
      mailer,
      apps,
      () => this.owner,
      () => this.live(),
      changed,
    );
    this.sessions = new LinkSessions(this.rows);
    this.codes = new LinkCodes(this.rows, mailer, this.sessions);
    this.views = new LinkViews(this.rows, apps, this.sessions, inTransaction, (id) => this.end(id, 'expired'), changed);
    this.pageTimes = new LinkPageTimes(clock, inTransaction);
    this.notices = new LinkNotices(this.rows, mailer, apps, this.delivery);
  }

  private now(): string {
    return this.rows.now();
  }

  /** Checks what needs the app and the document before anything is written. */
  async prepare(settings: LinkSettings, field: string): Promise<MagicLinkApp> {
    const app = await this.apps.require();
    if (!app.auth_types.includes(settings.authType)) {
      throw new ValidationError(`This server allows ${app.auth_types.join(' and ')} authentication for Magic Links.`, [
        {
          field: `${field}.auth_type`,
          message: `must be one of ${app.auth_types.join(', ')} (see PUT /v1/apps/magic_link)`,
          code: 'not_allowed',
        },
      ]);
    }
    return app;
  }

  /**
   * Makes the link and e-mails it, once: with a render id (POST /v1/generate, however often it
   * runs; or a share's name, Documents.share) the link it names is found rather than made again, and a link already e-mailed is not
   * e-mailed again. A failed send leaves it `send_failed` (the lifecycle retries it). A render's
   * link is started by the generate flow, after the activity that made it; a link shared from a
   * stored document starts its lifecycle here (through onChange).
   */
  async create(
    documentId: string,
    settings: LinkSettings,
    createdByKeyId: string | null,
    renderId?: string,
    /** Whether its lifecycle starts here (a render's starts in the generate flow). */
    start = !renderId,
  ): Promise<{ link: LinkInfo; url: string }> {
    await this.prepare(settings, 'magic_link');
    await this.rows.documentName(documentId);
    const byRender = () =>
      renderId
        ? this.db.selectFrom('magic_links').select('id').where('render_id', '=', renderId).executeTakeFirst()
        : undefined;
    let id = (await byRender())?.id;
    if (!id) {
      const now = this.clock.now();
      id = newId('ml', now);
      const key = this.tokens.currentKey();
      const row: MagicLinkRow = {
        id,
        document_id: documentId,
        token_hash: sha256(this.tokens.token(id, 0, key)),
        token_key: key,
        recipient_email: settings.recipientEmail,
        auth_email: settings.authEmail,
        auth_type: settings.authType,
        settings: JSON.stringify(settings),
        max_views: settings.maxViews,
        views_used: 0,
        status: 'active',
        send_error: null,
        send_attempts: 0,
        created_by_key_id: createdByKeyId,
        created_at: iso(now),
        sent_at: null,
        opened_at: null,
        expires_at: deadlineAtCreation(settings, now)?.toISOString() ?? null,
        ended_at: null,
        ended_reason: null,
        render_id: renderId ?? null,
        token_generation: 0,
        sending_by: null,
        sending_until: null,
        sending_epoch: 0,
        claimed_by: null,
        claimed_until: null,
        claimed_epoch: 0,
        // its lifecycle looks at it at once (src/engine/embedded.ts), then when it next has to
        wake_at: iso(now),
        send_retry_at: null,
        notices: null,
      };
      try {
        await this.db.insertInto('magic_links').values(row).execute();
      } catch (err) {
        // the same render made it at the same moment elsewhere
        if (!(renderId && isUniqueViolation(err))) throw err;
        id = (await byRender())!.id;
      }
      // the document deleted since it was looked up (DELETE, or the retention sweep, which ended
      // its links before this one was there): the link is taken back before it is e-mailed
      if (!(await this.db.selectFrom('documents').select('id').where('id', '=', documentId).executeTakeFirst())) {
        await this.db.deleteFrom('magic_links').where('id', '=', id).execute();
        throw new NotFoundError('document', documentId);
      }
    }
    const { url } = await this.deliver(id, start);
    return { link: await this.get(id), url };
  }

  /**
   * The link's current URL, derived again from its id, generation and key (nothing stores it): what
   * the Temporal engine puts into a generate answer, so the URL never enters Temporal's history.
   */
  async url(id: string): Promise<string> {
    const row = await this.row(id);
    return urlOf(await this.apps.require(), this.tokens.token(id, row.token_generation, row.token_key));
  }

  /** Sends the notices due now: to the sender on the first view and at the end, the recipient's reminder (notices.ts). */
  notify(id: string): Promise<boolean> {
    return this.notices.send(id);
  }

  /** E-mails the link unless it was e-mailed already (delivery.ts); `tell`: whether its flow hears of the outcome. */
  deliver(id: string, tell = true): Promise<{ sent: boolean; url: string }> {
    return this.delivery.deliver(id, tell);
  }

  /** `POST /v1/magic_links/:id/resend`: e-mails the link again at once, with a new URL (the old one stops working). */
  resend(id: string): Promise<{ sent: boolean; url: string }> {
    return this.delivery.resend(id);
  }

  private row(id: string): Promise<MagicLinkRow> {
    return this.rows.row(id);
  }

  /**
   * A link; `withLog`: with the newest ACCESS_LOG_SHOWN entries of its access log (oldest first;
   * `access_log_has_more` when there are older ones, paged by accessLog()) and its viewers.
   */
  async get(id: string, withLog = false): Promise<LinkInfo> {
    const info = linkInfo(await this.row(id));
    if (withLog) {
      const newest = await this.db
        .selectFrom('link_events')
        .select(['at', 'kind', 'outcome', 'ip', 'user_agent', 'email', 'count', 'last_at'])
        .where('link_id', '=', id)
        .orderBy('id', 'desc')
        .limit(ACCESS_LOG_SHOWN + 1)
        .execute();
      info.access_log_has_more = newest.length > ACCESS_LOG_SHOWN;
      info.access_log = newest.slice(0, ACCESS_LOG_SHOWN).reverse();
      info.viewers = await this.viewers(id);
    }
    return info;
  }

  /** A link's access log, newest first, a page at a time (GET /v1/magic_links/:id/access_log). */
  async accessLog(id: string, page: PageQuery): Promise<Page<AccessEntry & { id: string }>> {
    await this.row(id);
    let q = this.db
      .selectFrom('link_events')
      .select(['id', 'at', 'kind', 'outcome', 'ip', 'user_agent', 'email', 'count', 'last_at'])
      .where('link_id', '=', id)
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('id', '<', page.startingAfter);
    return toPage(await q.execute(), page.limit, (r) => r);
  }

  /** Each person who viewed the link: views, the last one, time per page (pagetimes.ts). */
  viewers(id: string): Promise<Viewer[]> {
    return viewersOf(this.db, id);
  }

  /** A viewer's report of the pages shown and for how long (pagetimes.ts); the milliseconds taken. */
  reportPages(grant: Grant, pages: Map<number, number>): Promise<number> {
    return this.pageTimes.report(grant, pages);
  }

  /**
   * Newest first, optionally only those with this status, of this document, sent to this address,
   * or made at or after `created_after` and before `created_before` (ISO 8601 times).
   */
  async list(
    page: PageQuery,
    filter: {
      status?: string;
      document_id?: string;
      recipient_email?: string;
      created_after?: string;
      created_before?: string;
    } = {},
  ): Promise<Page<LinkInfo>> {
    const details: ErrorDetail[] = [];
    if (filter.status !== undefined && !(LINK_STATUSES as readonly string[]).includes(filter.status))
      details.push({ field: 'status', message: `must be one of ${LINK_STATUSES.join(', ')}`, code: 'invalid' });
    const time = (field: 'created_after' | 'created_before') => {
      const v = filter[field];
      if (v === undefined) return undefined;
      // a time without a zone (as n8n's date fields send it) is UTC
      const m = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.exec(v);
      const t = m ? Date.parse(m[1] && !m[2] ? `${v}Z` : v) : NaN;
      if (Number.isNaN(t))
        details.push({
          field,
          message: 'must be an ISO 8601 date or time, e.g. 2026-11-23 or 2026-11-23T10:00:00Z',
          code: 'invalid',
        });
      return Number.isNaN(t) ? undefined : new Date(t).toISOString();
    };
    const after = time('created_after');
    const before = time('created_before');
    if (details.length) throw new ValidationError('The filters are not valid; see details.', details);
    let q = this.db
      .selectFrom('magic_links')
      .selectAll()
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('id', '<', page.startingAfter);
    if (filter.status) q = q.where('status', '=', filter.status);
    if (filter.document_id) q = q.where('document_id', '=', filter.document_id);
    if (filter.recipient_email) q = q.where('recipient_email', '=', filter.recipient_email);
    // a link's id begins with its creation time: the time filters are ranges of the id index too
    if (after) q = q.where('created_at', '>=', after).where('id', '>=', firstIdAt('ml', new Date(after)));
    if (before) q = q.where('created_at', '<', before).where('id', '<', firstIdAt('ml', new Date(before)));
    return toPage(await q.execute(), page.limit, linkInfo);
  }

  /**
   * Deletes sign-ins that can no longer be used (past their end and with no view running) and
   * codes past their ten minutes: neither would otherwise ever leave the database.
   */
  async purgeExpired(): Promise<{ sessions: number; codes: number }> {
    const now = this.now();
    const sessions = await deleteInBatches(
      async (limit) =>
        (
          await this.db
            .deleteFrom('link_sessions')
            .where('token_hash', 'in', (eb) =>
              eb
                .selectFrom('link_sessions')
                .select('token_hash')
                .where('expires_at', '<=', now)
                .where((w) => w.or([w('view_until', 'is', null), w('view_until', '<=', now)]))
                .limit(limit),
            )
            .executeTakeFirst()
        ).numDeletedRows,
    );
    const codes = await deleteInBatches(
      async (limit) =>
        (
          await this.db
            .deleteFrom('link_codes')
            // the links with expired codes; of those, only the expired codes (a link has one per person)
            .where('link_id', 'in', (eb) =>
              eb.selectFrom('link_codes').select('link_id').where('expires_at', '<=', now).limit(limit),
            )
            .where('expires_at', '<=', now)
            .executeTakeFirst()
        ).numDeletedRows,
    );
    return { sessions, codes };
  }

  /** For a page of links: each one's document name, and when it was last viewed. */
  async overview(links: LinkInfo[]): Promise<{ documentNames: Map<string, string>; lastViewed: Map<string, string> }> {
    if (!links.length) return { documentNames: new Map(), lastViewed: new Map() };
    const docs = await this.db
      .selectFrom('documents')
      .select(['id', 'name'])
      .where('id', 'in', [...new Set(links.map((l) => l.document_id))])
      .execute();
    const views = await this.db
      .selectFrom('link_events')
      .select(['link_id', (e) => e.fn.max('at').as('at')])
      .where(
        'link_id',
        'in',
        links.map((l) => l.id),
      )
      .where('kind', '=', 'viewed')
      .where('outcome', '=', 'ok')
      .groupBy('link_id')
      .execute();
    return {
      documentNames: new Map(docs.map((d) => [d.id, d.name])),
      lastViewed: new Map(views.map((v) => [v.link_id, String(v.at)])),
    };
  }

  /**
   * `POST /v1/magic_links/expire`: revokes up to 100 links at once. Every id must name a link (else
   * a 422 naming each unknown one, and nothing is revoked); links that already ended stay as they are.
   */
  async endMany(body: unknown): Promise<LinkInfo[]> {
    const ids = isObject(body) ? body.ids : undefined;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > 100 || ids.some((id) => typeof id !== 'string')) {
      throw new ValidationError('Send {"ids": [...]}: 1 to 100 Magic Link ids.', [
        { field: 'ids', message: 'must be a list of 1 to 100 Magic Link ids', code: 'invalid' },
      ]);
    }
    const unique = [...new Set(ids as string[])];
    const found = new Set(
      (await this.db.selectFrom('magic_links').select('id').where('id', 'in', unique).execute()).map((r) => r.id),
    );
    const missing = (ids as string[]).map((id, i) => ({ id, i })).filter((x) => !found.has(x.id));
    if (missing.length)
      throw new ValidationError(
        'Some ids name no Magic Link; nothing was expired.',
        missing.map((x) => ({ field: `ids[${x.i}]`, message: `no Magic Link has the id ${x.id}`, code: 'not_found' })),
      );
    const out: LinkInfo[] = [];
    for (const id of unique) out.push(await this.end(id, 'revoked'));
    return out;
  }

  async forDocument(documentId: string): Promise<LinkInfo[]> {
    const rows = await this.db
      .selectFrom('magic_links')
      .selectAll()
      .where('document_id', '=', documentId)
      .orderBy('id', 'desc')
      .execute();
    return rows.map(linkInfo);
  }

  /**
   * Ends a link now: `revoked` by the operator, `expired` by its limits. Ending twice is harmless.
   * The flow hears of it only when this call ended it, and only when `tell` (false when the flow
   * itself asked).
   */
  async end(id: string, status: 'expired' | 'revoked', tell = true): Promise<LinkInfo> {
    await this.row(id);
    const changed = (await this.finish([id], status)).size > 0;
    if (changed && tell) this.onChange(id, 'ended');
    return this.get(id);
  }

  /**
   * Ends each of the links unless it has ended, with its `magic_link.expired` event, in one
   * transaction (grouped with the others of the moment on SQLite): the state of each link this
   * call ended, as it ended (a burst's step plans from it without reading again). What
   * the lifecycle calls, for one link or for a burst falling due at once (one statement for the
   * lot, one for each reason, one for their events): it reads no more than it writes.
   */
  async finish(ids: readonly string[], status: 'expired' | 'revoked'): Promise<Map<string, LinkState>> {
    if (!ids.length) return new Map();
    return this.inTransaction(async (trx) => {
      if (ids.length > 1) await this.lockInOrder(trx.selectFrom('magic_links').where('id', 'in', ids));
      const ended = await trx
        .updateTable('magic_links')
        .set({ status, ended_at: this.now(), wake_at: null })
        .where('id', 'in', ids)
        .where('status', 'in', ACTIVE)
        .returningAll()
        .execute();
      // why each ended, read from the row as it ended (its views, its deadlines), kept with it
      const rows = ended.map((r) => ({ ...r, ended_reason: status === 'revoked' ? 'revoked' : expiryReason(r) }));
      for (const reason of new Set(rows.map((r) => r.ended_reason)))
        await trx
          .updateTable('magic_links')
          .set({ ended_reason: reason })
          .where(
            'id',
            'in',
            rows.filter((r) => r.ended_reason === reason).map((r) => r.id),
          )
          .execute();
      await this.rows.emitEach(trx, 'magic_link.expired', rows, (r) => ({ reason: r.ended_reason }));
      return new Map(rows.map((r) => [r.id, this.stateOf(r)]));
    });
  }

  /**
   * Ends every link to a document that is being deleted, in the deleting transaction: each one
   * that had not ended is `expired` with reason `document_deleted` (or `document_expired`, when
   * its retention ran out). Returns their ids, for
   * `ended()` once the transaction has committed.
   */
  async endForDocument(
    trx: Db,
    documentId: string,
    reason: 'document_deleted' | 'document_expired' = 'document_deleted',
  ): Promise<string[]> {
    await this.lockInOrder(
      trx.selectFrom('magic_links').where('document_id', '=', documentId).where('status', 'in', ACTIVE),
    );
    const ended = await trx
      .updateTable('magic_links')
      .set({ status: 'expired', ended_at: this.now(), ended_reason: reason, wake_at: null })
      .where('document_id', '=', documentId)
      .where('status', 'in', ACTIVE)
      .returningAll()
      .execute();
    await this.rows.emitEach(trx, 'magic_link.expired', ended, () => ({ reason }));
    return ended.map((r) => r.id);
  }

  /**
   * On PostgreSQL, locks the links `links` picks in id order, before a write to several of them (a
   * burst's expiry, a document's deletion): two such writes then never wait on each other in a
   * cycle, which PostgreSQL would end by failing one of them. SQLite has one writer at a time.
   */
  private async lockInOrder(links: SelectQueryBuilder<Schema, 'magic_links', object>): Promise<void> {
    if (this.lockRows) await links.select('id').orderBy('id').forUpdate().execute();
  }

  /** Tells the lifecycle flows of links that ended outside this class (see endForDocument). */
  ended(ids: string[]): void {
    for (const id of ids) this.onChange(id, 'ended');
  }

  /**
   * What the lifecycle flow needs to know. `clearMark` (the Temporal workflow's read): the row's
   * mark, set before this read (src/engine/marks.ts), goes: this read has seen its change.
   */
  async state(id: string, clearMark = false): Promise<LinkState> {
    const before = iso(this.clock.now());
    const row = await this.row(id);
    if (clearMark && row.wake_at !== null && row.wake_at < before)
      await this.db
        .updateTable('magic_links')
        .set({ wake_at: null })
        .where('id', '=', id)
        .where('wake_at', '<', before)
        .execute();
    return this.stateOf(row);
  }

  /** The state of each of the links that exists, in one read (a burst of links due at once). */
  async states(ids: readonly string[]): Promise<Map<string, LinkState>> {
    const rows = ids.length ? await this.db.selectFrom('magic_links').selectAll().where('id', 'in', ids).execute() : [];
    return new Map(rows.map((r) => [r.id, this.stateOf(r)]));
  }

  private stateOf(row: MagicLinkRow): LinkState {
    const info = linkInfo(row);
    const notices = noticesDue(row, this.clock.now().getTime());
    return {
      notices: notices.due,
      remindAt: notices.remindAt === null ? null : new Date(notices.remindAt).toISOString(),
      status: info.status,
      sent: row.sent_at !== null,
      sendAttempts: row.send_attempts,
      sendingUntil: row.sending_until,
      retryAt: row.send_retry_at,
      expiresAt: info.expires_at,
      viewsLeft: info.views_left,
      views: info.views_used,
    };
  }

  /** Writes an access-log entry; a refusal is also a `magic_link.access_denied` event, in the same transaction. */
  record(linkId: string, kind: string, outcome: string, v: Visitor, email: string | null = null): Promise<void> {
    return this.rows.record(linkId, kind, outcome, v, email);
  }

  /** The link a recipient's token names, if it can still be used (views.ts). */
  open(token: string, v: Visitor, sessionToken?: string): Promise<OpenLink | undefined> {
    return this.views.open(token, v, sessionToken);
  }

  /** E-mails a 6-digit code to `email`, an address the link allows (codes.ts). */
  sendCode(link: OpenLink, v: Visitor, email: string): Promise<void> {
    return this.codes.send(link, v, email);
  }

  /** Checks the code sent to `email`: right, a session token for the cookie; wrong, why (codes.ts). */
  checkCode(link: OpenLink, code: string, v: Visitor, email: string): ReturnType<LinkCodes['check']> {
    return this.codes.check(link, code, v, email);
  }

  /** A signed-in recipient: the session token for the cookie (sessions.ts). */
  startSession(link: OpenLink, email: string): Promise<string> {
    return this.sessions.start(link, email);
  }

  /** The sign-in a session token holds for this link, while it lasts. */
  session(link: OpenLink, token: string | undefined): ReturnType<LinkSessions['find']> {
    return this.sessions.find(link, token);
  }

  /** What a session may be shown right now (sessions.ts). */
  granted(token: string, sessionToken: string | undefined): Promise<Grant | undefined> {
    return this.sessions.granted(token, sessionToken);
  }

  /** Whether this session's view is still running. */
  viewing(session: { viewUntil: string | null }): boolean {
    return this.sessions.viewing(session);
  }

  /** Starts one view, atomically (views.ts). */
  countView(
    link: OpenLink,
    session: { email: string; hash: string; viewUntil: string | null },
    v: Visitor,
  ): ReturnType<LinkViews['count']> {
    return this.views.count(link, session, v);
  }
}
