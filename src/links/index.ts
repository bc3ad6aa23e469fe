/**
 * Magic Links: made for a stored document, e-mailed to the recipient, opened at PUBLIC_URL/l/<token>.
 * The token (256 random bits) is stored only as a hash. Whether a link still works is decided by
 * one conditional UPDATE at every view, so the view limit holds under any concurrency and expiry
 * never waits for a timer.
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { Clock } from '../clock';
import { iso } from '../clock';
import { isUniqueViolation, PreparedQuery, type Db } from '../db';
import type { LinkEventsTable, LinkSessionsTable, MagicLinkRow } from '../db/schema';
import { NotFoundError, RateLimitError, ValidationError, type ErrorDetail } from '../errors';
import { isObject } from '../guards';
import { newId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import type { Mailer } from '../mail';
import { derivedToken, randomToken, sameHash, sha256 } from '../secrets';
import type { Events, ExpiryReason } from '../events';
import type { LinkChange, LinkState } from './lifecycle';
import type { MagicLinkApp, MagicLinkApps } from './app';
import { codeMessage, linkMessage } from './mail';
import { deadlineAtCreation, deadlineAtOpening, limitsForRecipient, VIEW_LIMIT_CAP, type LinkSettings } from './policy';

export const LINK_STATUSES = ['active', 'send_failed', 'expired', 'revoked'] as const;
export type LinkStatus = (typeof LINK_STATUSES)[number];
export const CODE_TTL_MS = 10 * 60 * 1000;
export const CODE_TRIES = 5;
/** Codes one link may have sent per hour. */
export const CODES_PER_HOUR = 5;
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** How long one sender holds a link's e-mail: longer than the mailer may take (its timeouts are a minute). */
export const SEND_LEASE_MS = 2 * 60 * 1000;
const TOKEN_KEY = 'link_token_key';
/**
 * One view: a signed-in recipient's viewing of the document for this long after it was counted.
 * Reloads, page turns and the PDF's own requests in that time belong to the same view and cost
 * nothing more; the last allowed view stays readable for this long after it ended the link.
 */
export const VIEW_MS = 30 * 60 * 1000;

/** One line of a link's access log: a `link_events` row without its ids. */
export type AccessEntry = Omit<LinkEventsTable, 'id' | 'link_id'>;

export interface LinkInfo {
  id: string;
  object: 'magic_link';
  document_id: string;
  status: LinkStatus;
  recipient_email: string;
  auth_email: string;
  auth_type: 'email' | 'social';
  expire_after_n_views: number | null;
  retain_from_created: Record<string, number> | null;
  retain_from_opened: Record<string, number> | null;
  created_at: string;
  sent_at: string | null;
  opened_at: string | null;
  expires_at: string | null;
  views_used: number;
  views_left: number | null;
  send_error: string | null;
  access_log?: AccessEntry[];
}

export interface Visitor {
  ip?: string;
  userAgent?: string;
}

/** What a recipient's request reads of a link (a view reads no more than it needs). */
const OPEN_COLUMNS = [
  'id',
  'document_id',
  'status',
  'expires_at',
  'max_views',
  'views_used',
  'opened_at',
  'auth_type',
  'auth_email',
] as const;
export type OpenRow = Pick<MagicLinkRow, (typeof OPEN_COLUMNS)[number]>;

/** What a recipient's request found: a usable link, or nothing to say about it. */
export interface OpenLink {
  row: OpenRow;
  document: { id: string; name: string };
  app: MagicLinkApp;
}

function settingsOf(row: MagicLinkRow): LinkSettings {
  return JSON.parse(row.settings) as LinkSettings;
}

export function linkInfo(row: MagicLinkRow): LinkInfo {
  const s = settingsOf(row);
  const retain = s.retention ? { [s.retention.unit]: s.retention.amount } : null;
  return {
    id: row.id,
    object: 'magic_link',
    document_id: row.document_id,
    status: row.status as LinkStatus,
    recipient_email: row.recipient_email,
    auth_email: row.auth_email,
    auth_type: row.auth_type as 'email' | 'social',
    expire_after_n_views: row.max_views,
    retain_from_created: s.retention?.from === 'created' ? retain : null,
    retain_from_opened: s.retention?.from === 'opened' ? retain : null,
    created_at: row.created_at,
    sent_at: row.sent_at,
    opened_at: row.opened_at,
    expires_at: row.expires_at,
    views_used: row.views_used,
    views_left: row.max_views === null ? null : Math.max(0, row.max_views - row.views_used),
    send_error: row.send_error,
  };
}

/** The statuses of a link that has not ended. */
export const ACTIVE = ['active', 'send_failed'];

/** Outcomes of the access log that are not a refusal. */
const ALLOWED = new Set(['ok', 'first_opening']);

/** Why a link that ended by its limits ended: its view limit, the ten-day cap, or its timer. */
function expiryReason(row: MagicLinkRow): ExpiryReason {
  if (row.max_views !== null && row.views_used >= row.max_views) return 'views';
  // a timer from opening that never started: the link was not opened within OPEN_WITHIN
  if (row.max_views === null && row.opened_at === null && settingsOf(row).retention?.from === 'opened')
    return 'not_opened';
  const cap = row.max_views !== null ? Date.parse(row.created_at) + VIEW_LIMIT_CAP.toMillis() : undefined;
  return cap !== undefined && row.expires_at !== null && Date.parse(row.expires_at) === cap ? 'ten_day_cap' : 'time';
}

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
    session: new PreparedQuery<
      { hash: string; linkId: string },
      Pick<LinkSessionsTable, 'email' | 'expires_at' | 'view_until'>
    >(db, (d, arg) =>
      d
        .selectFrom('link_sessions')
        .select(['email', 'expires_at', 'view_until'])
        .where('token_hash', '=', arg('hash'))
        .where('link_id', '=', arg('linkId')),
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
    endView: new PreparedQuery<{ until: string | null; hash: string }, never>(db, (d, arg) =>
      d
        .updateTable('link_sessions')
        .set({ view_until: arg('until') })
        .where('token_hash', '=', arg('hash')),
    ),
  };
}

export class MagicLinks {
  /** Called whenever a link changes in a way its lifecycle flow should look at. */
  onChange: (linkId: string, change: LinkChange) => void = () => undefined;
  /** This process's presence id (src/db/presence.ts), written beside a send lease it takes. */
  owner = 0;
  /** Whether this process runs the lifecycles of the links it makes (`serve`, embedded engine): they are claimed as they are made. */
  runsLifecycles = false;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly mailer: Mailer,
    readonly apps: MagicLinkApps,
    private readonly events: Events,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T> = (work) =>
      db.transaction().execute(work),
  ) {
    this.q = viewQueries(db);
  }

  /** The queries of a recipient's view, compiled once (see PreparedQuery). */
  private readonly q: ReturnType<typeof viewQueries>;

  private now(): string {
    return iso(this.clock.now());
  }

  private async documentName(id: string): Promise<{ id: string; name: string }> {
    const doc = await this.db.selectFrom('documents').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
    if (!doc) throw new NotFoundError('document', id);
    return doc;
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

  /** The server's link key (settings `link_token_key`, made on first use, shared by every process on the database). */
  private async tokenKey(): Promise<Buffer> {
    this.key ??= (async () => {
      const read = async () =>
        (await this.db.selectFrom('settings').select('value').where('key', '=', TOKEN_KEY).executeTakeFirst())?.value;
      let value = await read();
      if (!value) {
        await this.db
          .insertInto('settings')
          .values({ key: TOKEN_KEY, value: randomBytes(32).toString('base64') })
          .onConflict((c) => c.column('key').doNothing())
          .execute();
        value = (await read())!;
      }
      return Buffer.from(value, 'base64');
    })();
    this.key.catch(() => (this.key = undefined));
    return this.key;
  }
  private key?: Promise<Buffer>;

  /** The URL token of a link's generation: the same every time it is made, so a retried send e-mails the same URL. */
  private async token(id: string, generation: number): Promise<string> {
    return derivedToken(await this.tokenKey(), `${id}.${generation}`);
  }

  /**
   * Makes the link and e-mails it, once: with a render id (POST /v1/generate, however often it
   * runs) the render's link is found rather than made again, and a link already e-mailed is not
   * e-mailed again. A failed send leaves it `send_failed` (the lifecycle retries it). A render's
   * link is started by the generate flow, after the activity that made it; a link shared from a
   * stored document starts its lifecycle here (through onChange).
   */
  async create(
    documentId: string,
    settings: LinkSettings,
    createdByKeyId: string | null,
    renderId?: string,
  ): Promise<{ link: LinkInfo; url: string }> {
    await this.prepare(settings, 'magic_link');
    await this.documentName(documentId);
    const byRender = () =>
      renderId
        ? this.db.selectFrom('magic_links').select('id').where('render_id', '=', renderId).executeTakeFirst()
        : undefined;
    let id = (await byRender())?.id;
    if (!id) {
      const now = this.clock.now();
      id = newId('ml', now);
      const row: MagicLinkRow = {
        id,
        document_id: documentId,
        token_hash: sha256(await this.token(id, 0)),
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
        render_id: renderId ?? null,
        token_generation: 0,
        sending_until: null,
        sending_by: null,
        // the process that makes it runs its lifecycle: claimed in the same write
        claimed_by: this.runsLifecycles ? this.owner : null,
      };
      try {
        await this.db.insertInto('magic_links').values(row).execute();
      } catch (err) {
        // the same render made it at the same moment elsewhere
        if (!(renderId && isUniqueViolation(err))) throw err;
        id = (await byRender())!.id;
      }
    }
    const { url } = await this.deliver(id, !renderId);
    return { link: await this.get(id), url };
  }

  /**
   * E-mails the link unless it was e-mailed already, with the URL of its current generation (the
   * same URL however often this runs). One sender at a time: the send is leased for
   * SEND_LEASE_MS (longer than the mailer's own timeouts), so after a crash another attempt may
   * send once the lease has run out. At least once: a crash between the mail server's acceptance
   * and our commit sends that e-mail again. `tell`: whether the link's flow hears of the outcome;
   * false when the flow itself asked (an activity never signals its own workflow).
   */
  async deliver(id: string, tell = true): Promise<{ sent: boolean; url: string }> {
    const row = await this.row(id);
    if (!ACTIVE.includes(row.status))
      throw new ValidationError(`The link is ${row.status}; make a new one.`, [
        { field: 'id', message: `is ${row.status}`, code: 'link_ended' },
      ]);
    const app = await this.apps.require();
    const token = await this.token(id, row.token_generation);
    const url = `${app.public_url}/l/${token}`;
    if (row.sent_at !== null) return { sent: true, url };
    const now = this.clock.now();
    const claimed = await this.db
      .updateTable('magic_links')
      .set({
        sending_until: iso(new Date(now.getTime() + SEND_LEASE_MS)),
        sending_by: this.owner,
        token_hash: sha256(token),
      })
      .where('id', '=', id)
      .where('sent_at', 'is', null)
      .where('token_generation', '=', row.token_generation)
      .where((e) => e.or([e('sending_until', 'is', null), e('sending_until', '<', iso(now))]))
      .executeTakeFirst();
    // sent meanwhile, or another sender holds the lease: that send is the one
    if (!Number(claimed.numUpdatedRows)) return { sent: (await this.row(id)).sent_at !== null, url };
    return this.send(row, app, url, tell);
  }

  /** `POST /v1/magic_links/:id/resend`: e-mails the link again at once, with a new URL (the old one stops working). */
  async resend(id: string): Promise<{ sent: boolean; url: string }> {
    const row = await this.row(id);
    if (!ACTIVE.includes(row.status))
      throw new ValidationError(`The link is ${row.status}; make a new one.`, [
        { field: 'id', message: `is ${row.status}`, code: 'link_ended' },
      ]);
    const app = await this.apps.require();
    const generation = row.token_generation + 1;
    const token = await this.token(id, generation);
    await this.db
      .updateTable('magic_links')
      .set({
        token_generation: generation,
        token_hash: sha256(token),
        sending_until: iso(new Date(this.clock.now().getTime() + SEND_LEASE_MS)),
        sending_by: this.owner,
      })
      .where('id', '=', id)
      .execute();
    return this.send({ ...row, token_generation: generation }, app, `${app.public_url}/l/${token}`, true);
  }

  private async send(
    row: MagicLinkRow,
    app: MagicLinkApp,
    url: string,
    tell: boolean,
  ): Promise<{ sent: boolean; url: string }> {
    const id = row.id;
    const doc = await this.documentName(row.document_id);
    const limits = limitsForRecipient(
      settingsOf(row),
      row.expires_at ? new Date(row.expires_at) : null,
      VIEW_MS / 60_000,
      row.opened_at !== null,
    );
    const confirm =
      row.auth_type === 'email'
        ? `the address ${row.auth_email} with a code we e-mail to it`
        : `that you are ${row.auth_email} by signing in`;
    try {
      await this.mailer.send(
        linkMessage(app, { to: row.recipient_email, documentName: doc.name, url, limits, confirm }),
      );
    } catch (err) {
      const reason = err instanceof Error ? err.message.slice(0, 300) : String(err);
      const changed = await this.db.transaction().execute(async (trx) => {
        const r = await trx
          .updateTable('magic_links')
          .set((e) => ({
            status: 'send_failed',
            send_error: reason,
            send_attempts: e('send_attempts', '+', 1),
            sending_until: null,
            sending_by: null,
          }))
          .where('id', '=', id)
          .where('status', 'in', ACTIVE)
          .returningAll()
          .executeTakeFirst();
        if (r) await this.emit(trx, 'magic_link.send_failed', r);
        return r !== undefined;
      });
      if (changed && tell) this.onChange(id, 'send_failed');
      return { sent: false, url };
    }
    const changed = await this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('magic_links')
        .set((e) => ({
          status: 'active',
          send_error: null,
          sent_at: this.now(),
          send_attempts: e('send_attempts', '+', 1),
          sending_until: null,
          sending_by: null,
        }))
        .where('id', '=', id)
        .where('status', 'in', ACTIVE)
        .returningAll()
        .executeTakeFirst();
      if (r) await this.emit(trx, 'magic_link.sent', r);
      return r !== undefined;
    });
    if (changed && tell) this.onChange(id, 'sent');
    return { sent: true, url };
  }

  private async row(id: string, db: Db = this.db): Promise<MagicLinkRow> {
    const row = await db.selectFrom('magic_links').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('magic link', id);
    return row;
  }

  async get(id: string, withLog = false): Promise<LinkInfo> {
    const info = linkInfo(await this.row(id));
    if (withLog) {
      const log = await this.db
        .selectFrom('link_events')
        .select(['at', 'kind', 'outcome', 'ip', 'user_agent', 'email'])
        .where('link_id', '=', id)
        .orderBy('id', 'asc')
        .execute();
      info.access_log = log;
    }
    return info;
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
    if (after) q = q.where('created_at', '>=', after);
    if (before) q = q.where('created_at', '<', before);
    return toPage(await q.execute(), page.limit, linkInfo);
  }

  /**
   * Deletes sign-ins that can no longer be used (past their end and with no view running) and
   * codes past their ten minutes: neither would otherwise ever leave the database.
   */
  async purgeExpired(): Promise<{ sessions: number; codes: number }> {
    const now = this.now();
    const sessions = await this.db
      .deleteFrom('link_sessions')
      .where('expires_at', '<=', now)
      .where((w) => w.or([w('view_until', 'is', null), w('view_until', '<=', now)]))
      .executeTakeFirst();
    const codes = await this.db.deleteFrom('link_codes').where('expires_at', '<=', now).executeTakeFirst();
    return { sessions: Number(sessions.numDeletedRows), codes: Number(codes.numDeletedRows) };
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
      .orderBy('id', 'asc')
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
    const changed = await this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('magic_links')
        .set({ status, ended_at: this.now() })
        .where('id', '=', id)
        .where('status', 'in', ACTIVE)
        .returningAll()
        .executeTakeFirst();
      if (r)
        await this.emit(trx, 'magic_link.expired', r, { reason: status === 'revoked' ? 'revoked' : expiryReason(r) });
      return r !== undefined;
    });
    if (changed && tell) this.onChange(id, 'ended');
    return this.get(id);
  }

  /**
   * Ends every link to a document that is being deleted, in the deleting transaction: each one
   * that had not ended is `expired` with reason `document_deleted`. Returns their ids, for
   * `ended()` once the transaction has committed.
   */
  async endForDocument(trx: Db, documentId: string): Promise<string[]> {
    const ended = await trx
      .updateTable('magic_links')
      .set({ status: 'expired', ended_at: this.now() })
      .where('document_id', '=', documentId)
      .where('status', 'in', ACTIVE)
      .returningAll()
      .execute();
    for (const r of ended) await this.emit(trx, 'magic_link.expired', r, { reason: 'document_deleted' });
    return ended.map((r) => r.id);
  }

  /** Tells the lifecycle flows of links that ended outside this class (see endForDocument). */
  ended(ids: string[]): void {
    for (const id of ids) this.onChange(id, 'ended');
  }

  /** Ids of links whose lifecycle has not ended (the embedded runner re-drives them at start). */
  async activeIds(): Promise<string[]> {
    return (await this.db.selectFrom('magic_links').select('id').where('status', 'in', ACTIVE).execute()).map(
      (r) => r.id,
    );
  }

  /** What the lifecycle flow needs to know. */
  async state(id: string): Promise<LinkState> {
    const row = await this.row(id);
    const info = linkInfo(row);
    return {
      status: info.status,
      sent: row.sent_at !== null,
      sendAttempts: row.send_attempts,
      sendingUntil: row.sending_until,
      expiresAt: info.expires_at,
      viewsLeft: info.views_left,
    };
  }

  /** Writes an access-log entry; a refusal is also a `magic_link.access_denied` event, in the same transaction. */
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
      id: newId('ev', now),
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
    const write = async (trx: Db) => {
      await trx.insertInto('link_events').values(entry).execute();
      const row = await trx.selectFrom('magic_links').selectAll().where('id', '=', linkId).executeTakeFirstOrThrow();
      const { id: _id, link_id: _link, ...access } = entry;
      await this.emit(trx, 'magic_link.access_denied', row, { access });
    };
    await (db === this.db ? this.db.transaction().execute(write) : write(db));
  }

  private emit(
    trx: Db,
    type:
      | 'magic_link.sent'
      | 'magic_link.send_failed'
      | 'magic_link.opened'
      | 'magic_link.viewed'
      | 'magic_link.access_denied'
      | 'magic_link.expired',
    row: MagicLinkRow,
    extra: Record<string, unknown> = {},
  ) {
    return this.events.emit(trx, type, row.id, () => ({ object: linkInfo(row), ...extra }));
  }

  /** Whether a link row may still be used at this moment (the same test the view UPDATE makes). */
  private usable(row: OpenRow): boolean {
    const now = this.now();
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
    const found = await this.q.byToken.first(this.db, { hash: sha256(token) });
    if (!found) return undefined;
    const { document_name: documentName, ...row } = found;
    const app = await this.apps.get();
    if (!app) return undefined;
    const link = { row, document: { id: row.document_id, name: documentName }, app };
    if (!this.usable(row)) {
      // used up by views, not revoked nor past its time: a running view goes on
      const timeLeft = row.expires_at === null || row.expires_at > this.now();
      const session = row.status !== 'revoked' && timeLeft ? await this.session(link, sessionToken) : undefined;
      if (session && this.viewing(session)) return link;
      if (ACTIVE.includes(row.status)) await this.end(row.id, 'expired');
      await this.record(row.id, 'opened', 'unavailable', v);
      return undefined;
    }
    return link;
  }

  /** E-mails a 6-digit code to the link's auth_email. At most CODES_PER_HOUR per link per hour. */
  async sendCode(link: OpenLink, v: Visitor): Promise<void> {
    const since = iso(new Date(this.clock.now().getTime() - 60 * 60 * 1000));
    const sent = await this.db
      .selectFrom('link_events')
      .select((e) => e.fn.countAll<string | number>().as('n'))
      .where('link_id', '=', link.row.id)
      .where('kind', '=', 'code_sent')
      .where('at', '>', since)
      .executeTakeFirstOrThrow();
    if (Number(sent.n) >= CODES_PER_HOUR) {
      await this.record(link.row.id, 'code_requested', 'rate_limited', v);
      throw new RateLimitError('Too many codes were asked for this link. Wait an hour, then ask for a new one.', 3600);
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const expires = iso(new Date(this.clock.now().getTime() + CODE_TTL_MS));
    const hash = sha256(`${link.row.id}:${code}`);
    await this.db
      .insertInto('link_codes')
      .values({ link_id: link.row.id, code_hash: hash, attempts: 0, expires_at: expires })
      .onConflict((c) => c.column('link_id').doUpdateSet({ code_hash: hash, attempts: 0, expires_at: expires }))
      .execute();
    await this.mailer.send(
      codeMessage(link.app, {
        to: link.row.auth_email,
        documentName: link.document.name,
        code,
        minutes: CODE_TTL_MS / 60_000,
      }),
    );
    await this.record(link.row.id, 'code_sent', 'ok', v, link.row.auth_email);
  }

  /**
   * Checks a code. Right: a session token for this link (to put in a cookie). Wrong: undefined;
   * the fifth wrong try burns the code. Codes are compared as hashes, in constant time.
   */
  async checkCode(
    link: OpenLink,
    code: string,
    v: Visitor,
  ): Promise<{ session: string } | { error: 'wrong' | 'expired' | 'burned' }> {
    const row = await this.db
      .selectFrom('link_codes')
      .selectAll()
      .where('link_id', '=', link.row.id)
      .executeTakeFirst();
    if (!row || row.expires_at <= this.now()) {
      await this.record(link.row.id, 'code_checked', 'expired', v);
      return { error: 'expired' };
    }
    // count the try first, atomically, so parallel guesses cannot exceed the limit
    const counted = await this.db
      .updateTable('link_codes')
      .set((e) => ({ attempts: e('attempts', '+', 1) }))
      .where('link_id', '=', link.row.id)
      .where('code_hash', '=', row.code_hash)
      .where('attempts', '<', CODE_TRIES)
      .executeTakeFirst();
    if (!Number(counted.numUpdatedRows)) {
      await this.record(link.row.id, 'code_checked', 'burned', v);
      return { error: 'burned' };
    }
    const given = /^\d{6}$/.test(code.trim()) ? sha256(`${link.row.id}:${code.trim()}`) : sha256('not a code');
    if (!sameHash(given, row.code_hash)) {
      const left = CODE_TRIES - (row.attempts + 1);
      if (left <= 0) await this.db.deleteFrom('link_codes').where('link_id', '=', link.row.id).execute();
      await this.record(link.row.id, 'code_checked', left <= 0 ? 'burned' : 'wrong', v);
      return { error: left <= 0 ? 'burned' : 'wrong' };
    }
    await this.db.deleteFrom('link_codes').where('link_id', '=', link.row.id).execute();
    await this.record(link.row.id, 'code_checked', 'ok', v, link.row.auth_email);
    return { session: await this.startSession(link, link.row.auth_email) };
  }

  /** A signed-in recipient: the session token for the cookie. */
  async startSession(link: OpenLink, email: string): Promise<string> {
    const token = randomToken(32);
    const now = this.clock.now();
    const expires = Math.min(
      now.getTime() + SESSION_TTL_MS,
      link.row.expires_at ? Date.parse(link.row.expires_at) : Infinity,
    );
    await this.db
      .insertInto('link_sessions')
      .values({
        token_hash: sha256(token),
        link_id: link.row.id,
        email,
        created_at: iso(now),
        expires_at: iso(new Date(expires)),
        view_until: null,
      })
      .execute();
    return token;
  }

  async session(
    link: OpenLink,
    token: string | undefined,
  ): Promise<{ email: string; viewUntil: string | null; hash: string } | undefined> {
    if (!token || token.length > 100) return undefined;
    const hash = sha256(token);
    const row = await this.q.session.first(this.db, { hash, linkId: link.row.id });
    if (!row || row.expires_at <= this.now()) return undefined;
    return { email: row.email, viewUntil: row.view_until, hash };
  }

  /**
   * The document a session may download right now: within VIEW_MS of a counted view, so the
   * last allowed view can still load its PDF after that view ended the link. Never for a revoked
   * link, nor after the link's time.
   */
  async granted(token: string, sessionToken: string | undefined): Promise<string | undefined> {
    if (!/^[0-9A-Za-z]{20,100}$/.test(token) || !sessionToken || sessionToken.length > 100) return undefined;
    const row = await this.db
      .selectFrom('magic_links')
      .select(['id', 'document_id', 'status', 'expires_at'])
      .where('token_hash', '=', sha256(token))
      .executeTakeFirst();
    if (!row || row.status === 'revoked' || (row.expires_at !== null && row.expires_at <= this.now())) return undefined;
    const s = await this.db
      .selectFrom('link_sessions')
      .selectAll()
      .where('token_hash', '=', sha256(sessionToken))
      .where('link_id', '=', row.id)
      .executeTakeFirst();
    return s?.view_until && s.view_until > this.now() ? row.document_id : undefined;
  }

  /** Whether this session's view is still running (counted less than VIEW_MS ago). */
  viewing(session: { viewUntil: string | null }): boolean {
    return session.viewUntil !== null && session.viewUntil > this.now();
  }

  /**
   * Starts one view, atomically: the UPDATE succeeds only while the link is active, before its
   * deadline and under its view limit. With N views allowed, exactly N views start. One session
   * starts one view at a time (its requests at the same moment start one between them). The first
   * view is the link's opening: it starts a timer that runs from opening. The count, the opening,
   * the access-log entry and the session's view commit together.
   */
  async countView(
    link: OpenLink,
    session: { email: string; hash: string; viewUntil: string | null },
    v: Visitor,
  ): Promise<{ ok: boolean; viewsUsed: number; maxViews: number | null; expiresAt: string | null }> {
    const result = await this.inTransaction(async (trx) => {
      // the time is read when the write runs: a grouped write runs after those queued before it
      const now = this.clock.now();
      const at = iso(now);
      // this session's view starts now, unless another of its requests started it a moment ago
      const started = await this.q.startView.first(trx, {
        until: iso(new Date(now.getTime() + VIEW_MS)),
        hash: session.hash,
        at,
      });
      if (!started) {
        const current = await this.row(link.row.id, trx);
        return {
          ok: true,
          viewsUsed: current.views_used,
          maxViews: current.max_views,
          expiresAt: current.expires_at,
          ended: false,
          opened: false,
        };
      }
      let row = await this.q.count.first(trx, { id: link.row.id, at });
      if (!row) {
        await this.q.endView.execute(trx, { until: session.viewUntil, hash: session.hash });
        await this.record(link.row.id, 'viewed', 'unavailable', v, session.email, trx);
        return { ok: false, viewsUsed: 0, maxViews: null, expiresAt: null, ended: false, opened: false };
      }
      let opened = false;
      if (!link.row.opened_at) {
        // the first view opens the link: a timer from opening starts now
        const full = await this.row(link.row.id, trx);
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
            await this.record(first.id, 'opened', 'first_opening', v, session.email, trx);
            await this.emit(trx, 'magic_link.opened', first);
          }
        }
      }
      await this.q.logView.execute(trx, {
        id: newId('ev', now),
        linkId: link.row.id,
        at,
        ip: v.ip ?? null,
        userAgent: v.userAgent?.slice(0, 300) ?? null,
        email: session.email,
      });
      // the whole link is read only when a webhook wants the event
      await this.events.emit(trx, 'magic_link.viewed', link.row.id, async () => ({
        object: linkInfo(await this.row(link.row.id, trx)),
      }));
      const viewsLeft = row.max_views === null ? null : Math.max(0, row.max_views - row.views_used);
      // the last allowed view ends the link at once
      if (viewsLeft === 0) {
        const ended = await trx
          .updateTable('magic_links')
          .set({ status: 'expired', ended_at: at })
          .where('id', '=', link.row.id)
          .where('status', 'in', ACTIVE)
          .returningAll()
          .executeTakeFirst();
        if (ended) await this.emit(trx, 'magic_link.expired', ended, { reason: 'views' });
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
    if (result.opened) this.onChange(link.row.id, 'opened');
    if (result.ended) this.onChange(link.row.id, 'viewed');
    return { ok: result.ok, viewsUsed: result.viewsUsed, maxViews: result.maxViews, expiresAt: result.expiresAt };
  }
}
