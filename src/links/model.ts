/**
 * What a Magic Link is, as the API shows it and as the recipient's requests read it: its statuses,
 * limits, the shape of a link and of its access log, and the pure functions over a link's row.
 */
import type { LinkEventsTable, MagicLinkRow } from '../db/schema';
import type { Selectable } from 'kysely';
import type { ExpiryReason } from '../events';
import type { MagicLinkApp } from './app';
import { mayOpen, VIEW_LIMIT_CAP, type LinkSettings, type Watermark } from './policy';

export const LINK_STATUSES = ['active', 'send_failed', 'expired', 'revoked'] as const;
export type LinkStatus = (typeof LINK_STATUSES)[number];
/**
 * One view: a signed-in recipient's viewing of the document for this long after it was counted.
 * Reloads, page turns and the PDF's own requests in that time belong to the same view and cost
 * nothing more; the last allowed view stays readable for this long after it ended the link.
 */
export const VIEW_MS = 30 * 60 * 1000;

/** One line of a link's access log: a `link_events` row without its ids. */
export type AccessEntry = Omit<Selectable<LinkEventsTable>, 'id' | 'link_id'>;

/** Access-log entries a link's answer holds: the newest; the rest are paged (GET /v1/magic_links/:id/access_log). */
export const ACCESS_LOG_SHOWN = 100;

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
  watermark: Watermark | null;
  allow_download: boolean;
  allowed_viewers: string[];
  notify_sender: { email: string | null; on_first_view: boolean; on_end: boolean } | null;
  remind_before: Record<string, number> | null;
  /** The sender's words to the recipient, shown in the e-mail and above the document; null: none. */
  message: string | null;
  /** When each e-mail besides the link went: `first_view` and `ended` to the sender, `reminder` to the recipient. */
  notices_sent: Partial<Record<'first_view' | 'ended' | 'reminder', string>>;
  created_at: string;
  sent_at: string | null;
  opened_at: string | null;
  expires_at: string | null;
  views_used: number;
  views_left: number | null;
  send_error: string | null;
  /** When it ended (expired or revoked); null while it has not. */
  ended_at: string | null;
  /** Why it ended (as the `magic_link.expired` webhook says): `views`, `time`, `ten_day_cap`, `not_opened`, `revoked`, `document_deleted`, `document_expired`; null while it has not. */
  ended_reason: ExpiryReason | null;
  /** The newest ACCESS_LOG_SHOWN entries, oldest first (with `get(id, true)`). */
  access_log?: AccessEntry[];
  /** Whether older entries than those are kept (GET /v1/magic_links/:id/access_log pages them all). */
  access_log_has_more?: boolean;
  /** Each person who viewed it: their views and the last one (with the access log). */
  viewers?: Viewer[];
}

export interface Viewer {
  email: string;
  views: number;
  last_viewed_at: string;
  /** Seconds on the document, as the viewer reported it (page analytics). */
  seconds: number;
  /** Seconds on each page, by page number. */
  pages: { page: number; seconds: number }[];
}

export interface Visitor {
  ip?: string;
  userAgent?: string;
}

/** What a recipient's request reads of a link (a view reads no more than it needs). */
export const OPEN_COLUMNS = [
  'id',
  'document_id',
  'status',
  'expires_at',
  'max_views',
  'views_used',
  'opened_at',
  'auth_type',
  'auth_email',
  'settings',
] as const;
export type OpenRow = Pick<MagicLinkRow, (typeof OPEN_COLUMNS)[number]>;

/** Whether someone who proved `email` may open this link (policy.ts mayOpen). */
export function allows(row: OpenRow, email: string): boolean {
  return mayOpen(row.auth_email, settingsOf(row).allowedViewers, email);
}

/** Whether anyone besides auth_email may open the link: then the recipient says who they are. */
export function hasList(row: OpenRow): boolean {
  return Boolean(settingsOf(row).allowedViewers?.length);
}

/** What a recipient's request found: a usable link, or nothing to say about it. */
export interface OpenLink {
  row: OpenRow;
  document: { id: string; name: string };
  app: MagicLinkApp;
}

export function settingsOf(row: Pick<MagicLinkRow, 'settings'>): LinkSettings {
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
    watermark: s.watermark ?? null,
    allow_download: s.allowDownload ?? true,
    allowed_viewers: s.allowedViewers ?? [],
    notify_sender: s.notifySender
      ? { email: s.notifySender.email, on_first_view: s.notifySender.firstView, on_end: s.notifySender.ended }
      : null,
    remind_before: s.remindBefore ? { [s.remindBefore.unit]: s.remindBefore.amount } : null,
    message: s.message ?? null,
    notices_sent: noticesOf(row).sent,
    created_at: row.created_at,
    sent_at: row.sent_at,
    opened_at: row.opened_at,
    expires_at: row.expires_at,
    views_used: row.views_used,
    views_left: row.max_views === null ? null : Math.max(0, row.max_views - row.views_used),
    send_error: row.send_error,
    ended_at: row.ended_at,
    ended_reason: endedReason(row),
  };
}

/** Why the link ended (null while it has not): as kept with it, or read from the row of a link ended before it was kept. */
function endedReason(row: MagicLinkRow): ExpiryReason | null {
  if (row.ended_reason) return row.ended_reason as ExpiryReason;
  if (row.status === 'revoked') return 'revoked';
  return row.status === 'expired' ? expiryReason(row) : null;
}

/** The statuses of a link that has not ended. */
export const ACTIVE = ['active', 'send_failed'];

/** Outcomes of the access log that are not a refusal. */
export const ALLOWED = new Set(['ok', 'first_opening']);

/** Why a link that ended by its limits ended: its view limit, the ten-day cap, or its timer. */
export function expiryReason(row: MagicLinkRow): ExpiryReason {
  if (row.max_views !== null && row.views_used >= row.max_views) return 'views';
  // a timer from opening that never started: the link was not opened within OPEN_WITHIN
  if (row.max_views === null && row.opened_at === null && settingsOf(row).retention?.from === 'opened')
    return 'not_opened';
  const cap = row.max_views !== null ? Date.parse(row.created_at) + VIEW_LIMIT_CAP.toMillis() : undefined;
  return cap !== undefined && row.expires_at !== null && Date.parse(row.expires_at) === cap ? 'ten_day_cap' : 'time';
}

/** The e-mails a link's lifecycle sends besides the link (./notices.ts sends them), as its row records them. */
export const NOTICES = ['first_view', 'ended', 'reminder'] as const;
export type Notice = (typeof NOTICES)[number];
/** When each notice went. */
export type NoticesSent = Partial<Record<Notice, string>>;
/** A notice that could not be sent (yet): its failures in a row, the last one's time and error, and when it was given up. */
export interface NoticeFailure {
  attempts: number;
  at: string;
  error: string;
  gave_up_at?: string;
}
/** The row's `notices`: when each went (at the top, as before failures were kept), and the failures of those not sent. */
type NoticeRecord = NoticesSent & { failed?: Partial<Record<Notice, NoticeFailure>> };

function record(row: Pick<MagicLinkRow, 'notices'>): NoticeRecord {
  return row.notices ? (JSON.parse(row.notices) as NoticeRecord) : {};
}

/** The row's notices record read once: when each went, and the failures of those not sent. */
export function noticesOf(row: Pick<MagicLinkRow, 'notices'>): {
  sent: NoticesSent;
  failed: Partial<Record<Notice, NoticeFailure>>;
} {
  const all = record(row);
  return { sent: Object.fromEntries(NOTICES.filter((n) => all[n]).map((n) => [n, all[n]])), failed: all.failed ?? {} };
}
