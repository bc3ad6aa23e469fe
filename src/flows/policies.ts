/**
 * How each background effect is retried after a failure, and when it gives up: declared here, in
 * one place, for both engines (the embedded one and Temporal's workflows read these). A failure is
 * an answer that says "not now" (a mail server's error, a receiver's 500, a timeout); each policy
 * waits `waitMs(policy, failures)` before the next attempt and gives up once `givesUp` says so,
 * with the final state and event `final` names. docs/guarantees.md's "Retries" table says the same
 * and is checked against this (test/flows/policies.test.ts). Pure: Temporal's sandbox bundles it.
 */

export interface RetryPolicy {
  /** What is tried, in the words of the docs. */
  readonly what: string;
  /** The wait after the n-th failure in a row is `waits[n-1]`; after more failures than listed, the last one. */
  readonly waits: readonly number[];
  /** Attempts in all before it gives up (undefined: it does not give up by count). */
  readonly attempts?: number;
  /** Time from its first attempt after which a failure is final (undefined: not by time). */
  readonly forMs?: number;
  /** What giving up leaves: the state, and the event a webhook subscriber hears. */
  readonly final: string;
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** 10 s doubling to 1 h: the webhook delivery's back-off. */
const doubling = (from: number, most: number) => {
  const out: number[] = [];
  for (let w = from; w < most; w *= 2) out.push(w);
  return [...out, most];
};

export const POLICIES = {
  /** A Magic Link's e-mail to its recipient (src/links/delivery.ts, src/flows/link.ts). */
  link_email: {
    what: "A Magic Link's e-mail",
    waits: [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR],
    attempts: 6,
    final:
      'the link stays `send_failed` (`magic_link.send_failed` at the first failure); send it again with `POST /v1/magic_links/:id/resend`',
  },
  /** The sender's notices (first view, end) and the recipient's reminder (src/links/notices.ts). */
  link_notice: {
    what: "A link's notices: the sender's first-view and end e-mails, the recipient's reminder",
    waits: [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR],
    attempts: 6,
    final: 'the notice is given up, `magic_link.notice_failed` with the notice and the last error',
  },
  /** A webhook delivery (src/webhooks). Jittered ±10 %; WEBHOOK_RETRY_HOURS sets `forMs`. */
  webhook_delivery: {
    what: 'A webhook delivery',
    waits: doubling(10 * SECOND, HOUR),
    forMs: 24 * HOUR,
    final: 'the delivery is `failed` (in `GET /v1/webhooks/:id/deliveries`); the next one for the same resource goes',
  },
  /** A received postcard's render (src/postcards, src/flows/postcard.ts). */
  postcard_render: {
    what: "A received postcard's render: a render that failed for a passing reason (a timeout, a busy renderer) is tried again; an unexpected error (the database, the disk) until it clears",
    waits: [SECOND, 5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE],
    attempts: 5,
    final:
      'the postcard is `failed` with its reason (`postcard.failed`); an unexpected error never gives up: what was answered `202` is rendered',
  },
  /** A live postcard's hand-off to its mail partner (src/postcards/handoff.ts). */
  postcard_handoff: {
    what: "A live postcard's hand-off to its mail partner: a timeout, the partner's 5xx or rate limit, a key or URL it does not take",
    // within the 24 hours Lob keeps an idempotency key: a retry to Lob is never a second mail piece
    waits: [30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR, 4 * HOUR],
    forMs: 20 * HOUR,
    final:
      'the postcard is `failed` with the last error (`postcard.failed`); a partner that refuses the postcard itself (its 400 or 422) fails it at once',
  },
} as const satisfies Record<string, RetryPolicy>;

/** The wait after `failures` failures in a row (1 or more), before any jitter. */
export function waitMs(policy: RetryPolicy, failures: number): number {
  const n = Math.max(1, Math.floor(failures));
  return policy.waits[Math.min(n, policy.waits.length) - 1];
}

/** Whether `failures` failures in a row (and the time since the first attempt) end the tries. */
export function givesUp(policy: RetryPolicy, failures: number, sinceFirstMs = 0): boolean {
  if (policy.attempts !== undefined && failures >= policy.attempts) return true;
  return policy.forMs !== undefined && sinceFirstMs >= policy.forMs;
}

/** A wait as the docs write it: 2 h, 30 min, 80 s, 2.7 min. */
function inWords(ms: number): string {
  if (ms % HOUR === 0) return `${ms / HOUR} h`;
  if (ms % MINUTE === 0) return `${ms / MINUTE} min`;
  if (ms < 2 * MINUTE) return `${ms / SECOND} s`;
  return `${(ms / MINUTE).toFixed(1)} min`;
}

/** docs/guarantees.md's "Retries" table, as these policies declare it (test/flows/policies.test.ts checks the docs hold it). */
export function policyTable(): string {
  const rows = Object.entries(POLICIES).map(([kind, p]: [string, RetryPolicy]) => {
    const waits = `${p.waits.map(inWords).join(', ')}${p.attempts === undefined ? ', then the last again' : ''}`;
    const ends = [
      p.attempts === undefined ? undefined : `after ${p.attempts} attempts`,
      p.forMs === undefined ? undefined : `${inWords(p.forMs)} after the first`,
    ].filter(Boolean);
    return `| ${p.what} (\`${kind}\`) | ${waits} | ${ends.join(', ') || 'never'} | ${p.final} |`;
  });
  return ['| what | waits after each failure | gives up | then |', '|---|---|---|---|', ...rows].join('\n');
}
