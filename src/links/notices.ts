/**
 * The e-mails a link's lifecycle sends besides the link itself: to the sender when the link is
 * first viewed and when it ends (`notify_sender`), and a reminder to the recipient a set time before
 * a link still unopened ends (`remind_before`). Which are due is a pure function of the link's row
 * and the time, read by the lifecycle of either engine (src/flows/link.ts) like its deadline; each
 * is sent by the lifecycle's step and recorded in the row (`notices`), so it goes once: at least
 * once at the very edge, like the link's own e-mail (a crash between the mail server's acceptance
 * and the record sends it again). One that fails is retried by its policy (POLICIES.link_notice),
 * its failures kept in the same record, and given up after its last attempt.
 */
import { Duration } from 'luxon';
import { POLICIES, givesUp, waitMs } from '../flows/policies';
import type { MagicLinkRow } from '../db/schema';
import type { Mailer } from '../mail';
import type { MagicLinkApp, MagicLinkApps } from './app';
import type { LinkDelivery } from './delivery';
import { senderNotice } from './mail';
import { expiryReason, noticesOf, settingsOf, type Notice, type NoticeFailure } from './model';
import { mailDate } from './policy';
import type { LinkRows } from './rows';

const POLICY = POLICIES.link_notice;

/**
 * The notices due now, and when the next one is (ms; null when none is to come). The first-view
 * notice once the link is opened, the end notice once it ended, the reminder from `remind_before`
 * ahead of its end while it is unopened and was e-mailed. One that failed is due again after its
 * policy's wait (POLICIES.link_notice), and never once it was given up.
 */
export function noticesDue(row: MagicLinkRow, now: number): { due: Notice[]; remindAt: number | null } {
  const s = settingsOf(row);
  const { sent, failed } = noticesOf(row);
  const ended = row.status === 'expired' || row.status === 'revoked';
  const due: Notice[] = [];
  let next = Infinity;
  /** A notice whose time came: due now, or at its retry when it failed, or never when given up. */
  const came = (notice: Notice) => {
    const f = failed[notice];
    if (f?.gave_up_at) return;
    const at = f ? Date.parse(f.at) + waitMs(POLICY, f.attempts) : now;
    if (at <= now) due.push(notice);
    else next = Math.min(next, at);
  };
  if (s.notifySender?.firstView && row.opened_at && !sent.first_view) came('first_view');
  if (s.notifySender?.ended && ended && !sent.ended) came('ended');
  if (s.remindBefore && !ended && !row.opened_at && row.sent_at && row.expires_at && !sent.reminder) {
    const at =
      Date.parse(row.expires_at) - Duration.fromObject({ [s.remindBefore.unit]: s.remindBefore.amount }).toMillis();
    if (at <= now) came('reminder');
    else next = Math.min(next, at);
  }
  return { due, remindAt: next === Infinity ? null : next };
}

/** Why a link ended, in the words of the sender's e-mail. */
function endInWords(row: MagicLinkRow, documentGone: boolean): string {
  if (row.status === 'revoked') return 'it was revoked';
  if (documentGone) return 'its document was deleted';
  return {
    views: `its views were used up (${row.views_used} of ${row.max_views ?? row.views_used})`,
    ten_day_cap: 'it reached the 10 days a link with a view limit has',
    not_opened: 'it was not opened in time',
    time: 'its time ran out',
    revoked: 'it was revoked',
    document_deleted: 'its document was deleted',
    document_expired: 'its document was deleted',
  }[expiryReason(row)];
}

export class LinkNotices {
  constructor(
    private readonly rows: LinkRows,
    private readonly mailer: Mailer,
    private readonly apps: MagicLinkApps,
    private readonly delivery: LinkDelivery,
  ) {}

  /**
   * Sends the notices due now, each recorded as it goes. One whose e-mail fails is recorded as a
   * failure: due again after its policy's wait, given up (with `magic_link.notice_failed`) after its
   * last attempt. False when one failed.
   */
  async send(id: string): Promise<boolean> {
    const row = await this.rows.row(id);
    const { due } = noticesDue(row, this.rows.clock.now().getTime());
    if (!due.length) return true;
    let all = true;
    const app = await this.apps.require();
    const s = settingsOf(row);
    const to = s.notifySender?.email ?? app.sender_email;
    const doc = await this.rows.db
      .selectFrom('documents')
      .select('name')
      .where('id', '=', row.document_id)
      .executeTakeFirst();
    const name = doc?.name ?? 'a document';
    const page = doc ? `${app.public_url}/app/documents/${row.document_id}#links` : undefined;
    // one runner steps a link at a time (a claim, or its one workflow): the row's record is this one
    const { sent, failed } = noticesOf(row);
    for (const notice of due) {
      let gaveUp: NoticeFailure | undefined;
      try {
        await this.sendOne(notice, row, app, to, name, page);
        sent[notice] = this.rows.now();
        delete failed[notice];
      } catch (err) {
        all = false;
        const attempts = (failed[notice]?.attempts ?? 0) + 1;
        const at = this.rows.now();
        const error = err instanceof Error ? err.message : String(err);
        failed[notice] = { attempts, at, error, ...(givesUp(POLICY, attempts) ? { gave_up_at: at } : {}) };
        if (failed[notice].gave_up_at) gaveUp = failed[notice];
      }
      const notices = JSON.stringify({ ...sent, ...(Object.keys(failed).length ? { failed } : {}) });
      await this.rows.db.transaction().execute(async (trx) => {
        await trx.updateTable('magic_links').set({ notices }).where('id', '=', id).execute();
        if (gaveUp)
          await this.rows.emit(trx, 'magic_link.notice_failed', row, {
            notice,
            attempts: gaveUp.attempts,
            error: gaveUp.error,
          });
      });
    }
    return all;
  }

  private async sendOne(
    notice: Notice,
    row: MagicLinkRow,
    app: MagicLinkApp,
    to: string,
    name: string,
    page: string | undefined,
  ): Promise<void> {
    const id = row.id;
    // `page` (the document's page in the web app) is undefined when the document is gone
    if (notice === 'reminder') await this.delivery.remind(row);
    else if (notice === 'first_view') {
      const first = await this.rows.db
        .selectFrom('link_events')
        .select('email')
        .where('link_id', '=', id)
        .where('kind', '=', 'viewed')
        .where('outcome', '=', 'ok')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      const who = first?.email ?? row.recipient_email;
      await this.mailer.send(
        senderNotice(app, {
          to,
          subject: `Opened: "${name}" by ${who}`,
          lines: [
            `${who} opened "${name}" on ${mailDate(new Date(row.opened_at!))}, from the Magic Link sent to ${row.recipient_email}.`,
            "You hear of the first view only; every view is in the link's access log.",
          ],
          url: page,
        }),
      );
    } else {
      await this.mailer.send(
        senderNotice(app, {
          to,
          subject: `Link ended: "${name}" for ${row.recipient_email}`,
          lines: [
            `The Magic Link to "${name}" sent to ${row.recipient_email} has ended: ${endInWords(row, page === undefined)}.`,
            `It was viewed ${row.views_used} time${row.views_used === 1 ? '' : 's'}${row.opened_at ? `, first on ${mailDate(new Date(row.opened_at))}` : ''}.`,
          ],
          url: page,
        }),
      );
    }
  }
}
