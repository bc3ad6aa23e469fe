/**
 * E-mailing a link: at most once per URL generation, one sender at a time (a lease of
 * SEND_LEASE_MS, src/jobs/lease.ts, so another process may send after a crash), and again with a
 * new URL on resend. The outcome (`sent`, `send_failed`) is written with its event, only while the
 * sender still holds the lease it took, and told to the link's flow.
 */
import type { Expression, SqlBool } from 'kysely';
import type { MagicLinkRow } from '../db/schema';
import { freeing, isFree, isHeld, LEASES, taking } from '../jobs/lease';
import { ValidationError } from '../errors';
import type { Mailer, Message } from '../mail';
import { sha256 } from '../secrets';
import type { LinkChange } from './lifecycle';
import type { MagicLinkApp, MagicLinkApps } from './app';
import { linkMessage } from './mail';
import { ACTIVE, settingsOf, VIEW_MS } from './model';
import { limitsForRecipient, mailDate } from './policy';
import type { LinkRows } from './rows';
import type { LinkTokens } from './tokens';

/** The address a recipient opens: the app's public URL and the link's token. */
export function urlOf(app: MagicLinkApp, token: string): string {
  return `${app.public_url}/l/${token}`;
}

/** How long one sender holds a link's e-mail: longer than the mailer may take (its timeouts are a minute). */
export const SEND_LEASE_MS = 2 * 60 * 1000;

const SEND = LEASES.link_email;

export class LinkDelivery {
  constructor(
    private readonly rows: LinkRows,
    private readonly tokens: LinkTokens,
    private readonly mailer: Mailer,
    private readonly apps: MagicLinkApps,
    /** This process's presence id, written beside a send lease it takes. */
    private readonly owner: () => number,
    /** The presence ids of the processes alive now. */
    private readonly live: () => Promise<number[]>,
    /** Tells the link's flow what happened. */
    private readonly changed: (id: string, change: LinkChange) => void,
  ) {}

  /**
   * E-mails the link unless it was e-mailed already, with the URL of its current generation (the
   * same URL however often this runs). One sender at a time: the send is leased for
   * SEND_LEASE_MS (longer than the mailer's own timeouts), so after a crash another attempt may
   * send once the lease has run out. At least once: a crash between the mail server's acceptance
   * and our commit sends that e-mail again. `tell`: whether the link's flow hears of the outcome;
   * false when the flow itself asked (an activity never signals its own workflow).
   */
  async deliver(id: string, tell = true): Promise<{ sent: boolean; url: string }> {
    const row = await this.rows.row(id);
    const app = await this.apps.require();
    const token = this.tokens.token(id, row.token_generation, row.token_key);
    const url = urlOf(app, token);
    // sent already, or ended meanwhile (revoked while its e-mail was due): nothing to send, and not
    // an error: the link's flow reads the state next and ends as the link did
    if (row.sent_at !== null || !ACTIVE.includes(row.status)) return { sent: row.sent_at !== null, url };
    const now = this.rows.clock.now();
    const take = (lease: Expression<SqlBool>) =>
      this.rows.db
        .updateTable('magic_links')
        .set({ ...taking(SEND, this.owner(), new Date(now.getTime() + SEND_LEASE_MS)), token_hash: sha256(token) })
        .where('id', '=', id)
        .where('sent_at', 'is', null)
        .where('token_generation', '=', row.token_generation)
        .where(lease)
        .returning('sending_epoch')
        .executeTakeFirst();
    let taken = await take(isFree(SEND, now));
    if (!taken) {
      // another sender holds the lease: if its process has died (a worker killed mid-send), this
      // attempt takes it over now rather than when it runs out (the lease as read: not one taken since)
      const held = await this.rows.row(id);
      if (held.sent_at === null && held.sending_by !== null && !(await this.live()).includes(held.sending_by))
        taken = await take(isHeld(SEND, held.sending_epoch));
      // sent meanwhile, or a live sender holds it: that send is the one
      if (!taken) return { sent: (await this.rows.row(id)).sent_at !== null, url };
    }
    return this.send(row, app, url, tell, taken.sending_epoch);
  }

  /** `POST /v1/magic_links/:id/resend`: e-mails the link again at once, with a new URL (the old one stops working). */
  async resend(id: string): Promise<{ sent: boolean; url: string }> {
    const row = await this.rows.row(id);
    if (!ACTIVE.includes(row.status))
      throw new ValidationError(`The link is ${row.status}; make a new one.`, [
        { field: 'id', message: `is ${row.status}`, code: 'link_ended' },
      ]);
    const app = await this.apps.require();
    const generation = row.token_generation + 1;
    const key = this.tokens.currentKey();
    const token = this.tokens.token(id, generation, key);
    const taken = await this.rows.db
      .updateTable('magic_links')
      .set({
        token_generation: generation,
        token_key: key,
        token_hash: sha256(token),
        // an explicit resend takes the lease from any sender: the one under way is fenced out
        ...taking(SEND, this.owner(), new Date(this.rows.clock.now().getTime() + SEND_LEASE_MS)),
      })
      .where('id', '=', id)
      .returning('sending_epoch')
      .executeTakeFirstOrThrow();
    return this.send(
      { ...row, token_generation: generation, token_key: key },
      app,
      urlOf(app, token),
      true,
      taken.sending_epoch,
    );
  }

  private async send(
    row: MagicLinkRow,
    app: MagicLinkApp,
    url: string,
    tell: boolean,
    epoch: number,
  ): Promise<{ sent: boolean; url: string }> {
    const id = row.id;
    try {
      await this.mailer.send(await this.message(row, app, url));
    } catch (err) {
      const reason = err instanceof Error ? err.message.slice(0, 300) : String(err);
      const changed = await this.record(id, epoch, 'magic_link.send_failed', {
        status: 'send_failed',
        send_error: reason,
      });
      if (changed && tell) this.changed(id, 'send_failed');
      return { sent: false, url };
    }
    const changed = await this.record(id, epoch, 'magic_link.sent', {
      status: 'active',
      send_error: null,
      sent_at: this.rows.now(),
    });
    if (changed && tell) this.changed(id, 'sent');
    return { sent: true, url };
  }

  /** The link's e-mail to its recipient, with its current URL; `reminder`: the reminder of an unopened link. */
  private async message(row: MagicLinkRow, app: MagicLinkApp, url: string, reminder = false): Promise<Message> {
    const doc = await this.rows.documentName(row.document_id);
    const settings = settingsOf(row);
    const expires = row.expires_at ? new Date(row.expires_at) : null;
    const limits = limitsForRecipient(settings, expires, VIEW_MS / 60_000, row.opened_at !== null);
    // a link for several people: each proves their own address (it may be forwarded to them)
    const several = Boolean(settings.allowedViewers?.length);
    const confirm = several
      ? row.auth_type === 'email'
        ? `your e-mail address with a code we e-mail to it; others it was shared with can open it the same way with theirs`
        : `who you are by signing in with the account of an address it was shared with`
      : row.auth_type === 'email'
        ? `the address ${row.auth_email} with a code we e-mail to it`
        : `that you are ${row.auth_email} by signing in`;
    return linkMessage(app, {
      to: row.recipient_email,
      documentName: doc.name,
      url,
      limits,
      confirm,
      message: settings.message ?? undefined,
      reminder: reminder && expires ? mailDate(expires) : undefined,
    });
  }

  /** E-mails the recipient a reminder of the link, with its current URL (notices.ts decides when). */
  async remind(row: MagicLinkRow): Promise<void> {
    const app = await this.apps.require();
    const url = urlOf(app, this.tokens.token(row.id, row.token_generation, row.token_key));
    await this.mailer.send(await this.message(row, app, url, true));
  }

  /**
   * Records how a send went, with its event, while the link is active and the send lease is the one
   * taken at `epoch`; whether it was. A sender whose lease was taken over (it ran out, or its process
   * was presumed dead) changes nothing: the sender that took it records its own outcome.
   */
  private record(
    id: string,
    epoch: number,
    type: 'magic_link.sent' | 'magic_link.send_failed',
    outcome: { status: 'active' | 'send_failed'; send_error: string | null; sent_at?: string },
  ): Promise<boolean> {
    return this.rows.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('magic_links')
        .set((e) => ({
          ...outcome,
          send_attempts: e('send_attempts', '+', 1),
          ...freeing(SEND),
          send_retry_at: null,
        }))
        .where('id', '=', id)
        .where('status', 'in', ACTIVE)
        .where(isHeld(SEND, epoch))
        .returningAll()
        .executeTakeFirst();
      if (r) await this.rows.emit(trx, type, r);
      return r !== undefined;
    });
  }
}
