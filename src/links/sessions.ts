/**
 * A recipient's sign-in to one link: a random session token (its hash stored) that a cookie holds,
 * valid for SESSION_TTL_MS and never past the link's own time. A session's view (views.ts) is the
 * time its requests count as one view.
 */
import { iso } from '../clock';
import { PreparedQuery } from '../db';
import type { LinkSessionsTable } from '../db/schema';
import { randomToken, sha256 } from '../secrets';
import { settingsOf, VIEW_MS, type OpenLink } from './model';
import type { LinkSettings } from './policy';
import type { LinkRows } from './rows';

/** What a signed-in recipient may be shown now (LinkSessions.granted). */
export interface Grant {
  linkId: string;
  documentId: string;
  settings: LinkSettings;
  /** The address the viewer proved. */
  email: string;
  /** When their current view started. */
  viewedAt: Date;
  /** The session's token hash (its row in link_sessions). */
  sessionHash: string;
  /** When they signed in. */
  signedInAt: Date;
}

export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export class LinkSessions {
  /** A session by its token's hash, compiled once (see PreparedQuery): every view reads it. */
  private readonly query: PreparedQuery<
    { hash: string; linkId: string },
    Pick<LinkSessionsTable, 'email' | 'expires_at' | 'view_until' | 'view_number'>
  >;

  constructor(private readonly rows: LinkRows) {
    this.query = new PreparedQuery(rows.db, (d, arg) =>
      d
        .selectFrom('link_sessions')
        .select(['email', 'expires_at', 'view_until', 'view_number'])
        .where('token_hash', '=', arg('hash'))
        .where('link_id', '=', arg('linkId')),
    );
  }

  /** A signed-in recipient: the session token for the cookie. */
  async start(link: OpenLink, email: string): Promise<string> {
    const token = randomToken(32);
    const now = this.rows.clock.now();
    const expires = Math.min(
      now.getTime() + SESSION_TTL_MS,
      link.row.expires_at ? Date.parse(link.row.expires_at) : Infinity,
    );
    await this.rows.db
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

  /** The sign-in a session token holds for this link, while it lasts. */
  async find(
    link: OpenLink,
    token: string | undefined,
  ): Promise<{ email: string; viewUntil: string | null; viewNumber: number | null; hash: string } | undefined> {
    if (!token || token.length > 100) return undefined;
    const hash = sha256(token);
    const row = await this.query.first(this.rows.db, { hash, linkId: link.row.id });
    if (!row || row.expires_at <= this.rows.now()) return undefined;
    return { email: row.email, viewUntil: row.view_until, viewNumber: row.view_number, hash };
  }

  /**
   * What a session may be shown right now: within VIEW_MS of a counted view, so the last allowed
   * view can still load its pages after that view ended the link. Never for a revoked link, nor
   * after the link's time. With it, what the link allows (a download, a watermark) and who is
   * viewing since when, for the watermark.
   */
  async granted(token: string, sessionToken: string | undefined): Promise<Grant | undefined> {
    if (!/^[0-9A-Za-z]{20,100}$/.test(token) || !sessionToken || sessionToken.length > 100) return undefined;
    const row = await this.rows.db
      .selectFrom('magic_links')
      .select(['id', 'document_id', 'status', 'expires_at', 'settings'])
      .where('token_hash', '=', sha256(token))
      .executeTakeFirst();
    if (!row || row.status === 'revoked' || (row.expires_at !== null && row.expires_at <= this.rows.now()))
      return undefined;
    const sessionHash = sha256(sessionToken);
    const s = await this.rows.db
      .selectFrom('link_sessions')
      .select(['email', 'view_until', 'created_at'])
      .where('token_hash', '=', sessionHash)
      .where('link_id', '=', row.id)
      .executeTakeFirst();
    if (!s?.view_until || s.view_until <= this.rows.now()) return undefined;
    return {
      linkId: row.id,
      documentId: row.document_id,
      settings: settingsOf(row),
      email: s.email,
      viewedAt: new Date(Date.parse(s.view_until) - VIEW_MS),
      sessionHash,
      signedInAt: new Date(s.created_at),
    };
  }

  /** Whether this session's view is still running (counted less than VIEW_MS ago). */
  viewing(session: { viewUntil: string | null }): boolean {
    return session.viewUntil !== null && session.viewUntil > this.rows.now();
  }
}
