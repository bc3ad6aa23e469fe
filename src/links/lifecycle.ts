/**
 * What a link's lifecycle flow (src/flows/link.ts) reads of a link and is told about it. Types only:
 * the flows import them (and are bundled into Temporal's sandbox), the links module implements them.
 */
export interface LinkState {
  status: 'active' | 'send_failed' | 'expired' | 'revoked';
  sent: boolean;
  sendAttempts: number;
  /** ISO time until which a sender holds the link's e-mail; null when nobody is sending. */
  sendingUntil?: string | null;
  /** ISO time the failed e-mail is tried again, as the embedded engine planned it; null until planned (and under Temporal, whose timer holds it). */
  retryAt?: string | null;
  /** ISO time, or null when only views end the link. */
  expiresAt: string | null;
  viewsLeft: number | null;
  /** Views counted so far (absent in runs recorded before it was read). */
  views?: number;
  /** E-mails due besides the link (src/links/notices.ts): to the sender, the recipient's reminder. Absent in runs recorded before them. */
  notices?: string[];
  /** ISO time the next notice is due (the recipient's reminder, or the retry of one that failed), when one is to come. */
  remindAt?: string | null;
}

/** What happened to a link; each is told to its flow (under Temporal, as a signal of that name). */
export type LinkChange = 'sent' | 'send_failed' | 'opened' | 'viewed' | 'ended';
