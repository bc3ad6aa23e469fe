/**
 * The e-mailed code a recipient proves their address with: six digits, stored as a hash, valid for
 * CODE_TTL_MS, burned after CODE_TRIES wrong tries (counted atomically), at most CODES_PER_HOUR
 * sent per address and link, and CODES_PER_LINK_HOUR per link whoever asks. Each person a link
 * allows has a code of their own. A right code starts that person's session.
 */
import { randomInt } from 'node:crypto';
import { iso } from '../clock';
import { RateLimitError } from '../errors';
import type { Mailer } from '../mail';
import { sameHash, sha256 } from '../secrets';
import { codeMessage } from './mail';
import type { OpenLink, Visitor } from './model';
import type { LinkRows } from './rows';
import type { LinkSessions } from './sessions';

export const CODE_TTL_MS = 10 * 60 * 1000;
export const CODE_TRIES = 5;
/** Codes one link may have sent to one address per hour. */
export const CODES_PER_HOUR = 5;
/** Codes one link may have sent per hour to all the addresses it allows together. */
export const CODES_PER_LINK_HOUR = 50;

export class LinkCodes {
  constructor(
    private readonly rows: LinkRows,
    private readonly mailer: Mailer,
    private readonly sessions: LinkSessions,
  ) {}

  /**
   * E-mails a 6-digit code to `email`, an address the link allows (the caller checked). At most
   * CODES_PER_HOUR per address and CODES_PER_LINK_HOUR per link an hour, however many ask at once:
   * the count and the code's entry in the access log are one transaction that holds the link's row,
   * so requests for one link take their turn.
   */
  async send(link: OpenLink, v: Visitor, email: string): Promise<void> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const allowed = await this.rows.db.transaction().execute(async (trx) => {
      // the link's row, held until commit (a row lock on PostgreSQL, the write lock on SQLite)
      await trx
        .updateTable('magic_links')
        .set((e) => ({ id: e.ref('id') }))
        .where('id', '=', link.row.id)
        .execute();
      const now = this.rows.clock.now();
      const sent = await trx
        .selectFrom('link_events')
        .select((e) => [
          e.fn.countAll<string | number>().as('n'),
          e.fn.sum<string | number | null>(e.case().when('email', '=', email).then(1).else(0).end()).as('mine'),
        ])
        .where('link_id', '=', link.row.id)
        .where('kind', '=', 'code_sent')
        .where('at', '>', iso(new Date(now.getTime() - 60 * 60 * 1000)))
        .executeTakeFirstOrThrow();
      if (Number(sent.mine ?? 0) >= CODES_PER_HOUR || Number(sent.n) >= CODES_PER_LINK_HOUR) return false;
      const expires = iso(new Date(now.getTime() + CODE_TTL_MS));
      const hash = codeHash(link.row.id, email, code);
      await trx
        .insertInto('link_codes')
        .values({ link_id: link.row.id, email, code_hash: hash, attempts: 0, expires_at: expires })
        .onConflict((c) =>
          c.columns(['link_id', 'email']).doUpdateSet({ code_hash: hash, attempts: 0, expires_at: expires }),
        )
        .execute();
      // counted now, before the e-mail: a code whose e-mail fails still counts
      await this.rows.record(link.row.id, 'code_sent', 'ok', v, email, trx);
      return true;
    });
    if (!allowed) {
      await this.rows.record(link.row.id, 'code_requested', 'rate_limited', v, email);
      throw new RateLimitError('Too many codes were asked for this link. Wait an hour, then ask for a new one.', 3600);
    }
    await this.mailer.send(
      codeMessage(link.app, {
        to: email,
        documentName: link.document.name,
        code,
        minutes: CODE_TTL_MS / 60_000,
      }),
    );
  }

  /**
   * Checks the code sent to `email` for this link. Right: a session token for this link and
   * address (to put in a cookie). Wrong: why; the fifth wrong try burns the code. Codes are
   * compared as hashes, in constant time.
   */
  async check(
    link: OpenLink,
    code: string,
    v: Visitor,
    email: string,
  ): Promise<{ session: string } | { error: 'wrong' | 'expired' | 'burned' }> {
    // this person's code of this link
    const mine = { link_id: link.row.id, email };
    const row = await this.rows.db
      .selectFrom('link_codes')
      .selectAll()
      .where((w) => w.and(mine))
      .executeTakeFirst();
    if (!row || row.expires_at <= this.rows.now()) {
      await this.rows.record(link.row.id, 'code_checked', 'expired', v, email);
      return { error: 'expired' };
    }
    // count the try first, atomically, so parallel guesses cannot exceed the limit
    const counted = await this.rows.db
      .updateTable('link_codes')
      .set((e) => ({ attempts: e('attempts', '+', 1) }))
      .where((w) => w.and(mine))
      .where('code_hash', '=', row.code_hash)
      .where('attempts', '<', CODE_TRIES)
      .executeTakeFirst();
    if (!Number(counted.numUpdatedRows)) {
      await this.rows.record(link.row.id, 'code_checked', 'burned', v, email);
      return { error: 'burned' };
    }
    const given = /^\d{6}$/.test(code.trim()) ? codeHash(link.row.id, email, code.trim()) : sha256('not a code');
    const forget = () =>
      this.rows.db
        .deleteFrom('link_codes')
        .where((w) => w.and(mine))
        .execute();
    if (!sameHash(given, row.code_hash)) {
      const left = CODE_TRIES - (row.attempts + 1);
      if (left <= 0) await forget();
      await this.rows.record(link.row.id, 'code_checked', left <= 0 ? 'burned' : 'wrong', v, email);
      return { error: left <= 0 ? 'burned' : 'wrong' };
    }
    await forget();
    await this.rows.record(link.row.id, 'code_checked', 'ok', v, email);
    return { session: await this.sessions.start(link, email) };
  }
}

/** A code as stored: bound to its link and address, so that one person's code opens nothing for another. */
function codeHash(linkId: string, email: string, code: string): string {
  return sha256(`${linkId}:${email}:${code}`);
}
