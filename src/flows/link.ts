/**
 * The Magic Link lifecycle: make sure the e-mail went out (retrying with back-off), then wait for
 * the deadline or the last view and mark the link expired at that moment. Restartable: every step
 * starts from the link's stored state, so a runner can re-drive it after a restart.
 * The database check at every view is what enforces expiry; this flow only records it on time.
 */
import type { MagicLinks } from '../links';
import type { LinkChange, LinkState } from '../links/lifecycle';
import type { Ports } from './ports';

export interface LinkActivities {
  linkState(id: string): Promise<LinkState>;
  /** E-mails the link unless it was e-mailed already (the same URL every time); false when it is not sent (yet). */
  deliverLink(id: string): Promise<boolean>;
  expireLink(id: string): Promise<void>;
  /** Ends the link now as `revoked` (the operator's "expire now"). */
  revokeLink(id: string): Promise<void>;
}

/**
 * The activities on the service's links (what both engines register). An activity never tells its
 * own flow what it did: the flow reads the result (under Temporal a signal from an activity to its
 * own workflow only adds history, and after the workflow ends would start a new run).
 */
export function activitiesForLinks(links: Pick<MagicLinks, 'state' | 'deliver' | 'end'>): LinkActivities {
  return {
    linkState: (id) => links.state(id),
    deliverLink: async (id) => (await links.deliver(id, false)).sent,
    expireLink: async (id) => {
      await links.end(id, 'expired', false);
    },
    revokeLink: async (id) => {
      await links.end(id, 'revoked', false);
    },
  };
}

/** Waits between send attempts: 1 min, 5 min, 30 min, 2 h, 6 h. */
export const SEND_RETRY_MS = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000];
/** The signal every change of a link sends to its flow; Temporal also takes `opened` and `viewed`. */
export const CHANGED = 'changed';

/**
 * Runs a link's lifecycle to its end: `expired` or `revoked`; or `continue` when the run should go
 * on as a new one (Temporal, a long history): the new run starts from the stored state like any
 * run, so nothing but the link id is carried.
 */
export async function linkLifecycle(p: Ports<LinkActivities>, id: string): Promise<'expired' | 'revoked' | 'continue'> {
  let changed = false;
  p.onSignal(CHANGED, () => {
    changed = true;
  });
  // a change told while the state is being read must wake the wait after it, not be cleared by it
  const clearBeforeRead = p.patched('link-clear-changed-before-read');
  // a link never sent (its process died between making it and e-mailing it) is sent once its
  // sender's lease has run out; before this change only failed sends were retried
  const sendUnsent = p.patched('link-send-unsent');
  // a link that lives for years goes on as a new run when its history grows long
  const mayContinue = p.patched('link-continue-as-new');
  let state = await p.activities.linkState(id);
  for (;;) {
    if (state.status === 'expired' || state.status === 'revoked') return state.status;
    const deadline = state.expiresAt === null ? undefined : Date.parse(state.expiresAt);
    if (state.viewsLeft === 0 || (deadline !== undefined && deadline <= p.now())) {
      await p.activities.expireLink(id);
      return 'expired';
    }
    let wait = deadline === undefined ? undefined : deadline - p.now();
    const retry = !state.sent && state.sendAttempts > 0 && state.sendAttempts <= SEND_RETRY_MS.length;
    const unsent = sendUnsent && !state.sent && state.sendAttempts === 0;
    const leaseEnds = unsent && state.sendingUntil ? Date.parse(state.sendingUntil) : undefined;
    if (unsent && (leaseEnds === undefined || leaseEnds <= p.now())) {
      await p.activities.deliverLink(id);
      state = await p.activities.linkState(id);
      continue;
    }
    if (retry) wait = Math.min(wait ?? Infinity, SEND_RETRY_MS[state.sendAttempts - 1]);
    if (leaseEnds !== undefined) wait = Math.min(wait ?? Infinity, leaseEnds - p.now());
    if (mayContinue && p.continueAsNewSuggested()) return 'continue';
    if (!clearBeforeRead) changed = false;
    const signalled = await p.condition(() => changed, wait);
    if (!signalled && retry) {
      const current = await p.activities.linkState(id);
      if (
        !current.sent &&
        current.sendAttempts === state.sendAttempts &&
        (current.status === 'active' || current.status === 'send_failed')
      )
        await p.activities.deliverLink(id);
    }
    if (clearBeforeRead) changed = false;
    state = await p.activities.linkState(id);
  }
}

export type { LinkChange, LinkState };
