/**
 * The Magic Link lifecycle: make sure the e-mail went out (retrying with back-off), then wait for
 * the deadline or the last view and mark the link expired at that moment. Restartable: every step
 * starts from the link's stored state, so a runner can re-drive it after a restart.
 * The database check at every view is what enforces expiry; this flow only records it on time.
 */
import type { MagicLinks } from '../links';
import type { LinkChange, LinkState } from '../links/lifecycle';
import { POLICIES, givesUp, waitMs } from './policies';
import type { Ports } from './ports';

export interface LinkActivities {
  linkState(id: string): Promise<LinkState>;
  /** E-mails the link unless it was e-mailed already (the same URL every time); false when it is not sent (yet). */
  deliverLink(id: string): Promise<boolean>;
  expireLink(id: string): Promise<void>;
  /** Ends the link now as `revoked` (the operator's "expire now"). */
  revokeLink(id: string): Promise<void>;
  /** Sends the notices due (the sender's e-mails, the recipient's reminder), each once; false when one could not be sent (it is due again by its policy, or given up). */
  notifyLink(id: string): Promise<boolean>;
}

/**
 * The activities on the service's links (what both engines register). An activity never tells its
 * own flow what it did: the flow reads the result (under Temporal a signal from an activity to its
 * own workflow only adds history, and after the workflow ends would start a new run).
 */
export function activitiesForLinks(links: Pick<MagicLinks, 'state' | 'deliver' | 'finish' | 'notify'>): LinkActivities {
  return {
    linkState: (id) => links.state(id),
    deliverLink: async (id) => (await links.deliver(id, false)).sent,
    expireLink: async (id) => {
      await links.finish([id], 'expired');
    },
    revokeLink: async (id) => {
      await links.finish([id], 'revoked');
    },
    notifyLink: (id) => links.notify(id),
  };
}

/**
 * What the embedded engine asks of the links to step through many at once (a burst falling due
 * together): one read and one transaction for the lot. Not activities: Temporal runs a workflow a link.
 */
export interface LinkBatch {
  linkStates(ids: readonly string[]): Promise<Map<string, LinkState>>;
  /** Expires each of the links unless it has ended: the state of each it ended, as it ended. */
  expireLinks(ids: readonly string[]): Promise<Map<string, LinkState>>;
}

export function batchForLinks(links: Pick<MagicLinks, 'states' | 'finish'>): LinkBatch {
  return {
    linkStates: (ids) => links.states(ids),
    expireLinks: (ids) => links.finish(ids, 'expired'),
  };
}

const EMAIL = POLICIES.link_email;
/** The signal every change of a link sends to its flow; Temporal also takes `opened` and `viewed`. */
export const CHANGED = 'changed';

/** What a link's lifecycle does next, from its stored state: both engines decide with this. */
export type LinkPlan =
  /** Send the notices due (before anything else: an ended link's end notice too). */
  | { kind: 'notify' }
  | { kind: 'ended'; status: 'expired' | 'revoked' }
  | { kind: 'expire' }
  /** E-mail it now (never sent, and nobody holds its send lease). */
  | { kind: 'send' }
  /** Wait for a change, or until `until` (ms; its deadline or the end of a send lease); `retry`: a failed e-mail is to be tried again. */
  | { kind: 'wait'; until: number | undefined; retry: boolean };

export function planLink(
  state: LinkState,
  now: number,
  sendUnsent = true,
  notices = true,
  noticePolicy = true,
): LinkPlan {
  if (notices && state.notices?.length) return { kind: 'notify' };
  if (state.status === 'expired' || state.status === 'revoked') {
    // an end notice that failed is tried again at its policy's time before the flow ends
    const retryAt = noticePolicy && notices && state.remindAt ? Date.parse(state.remindAt) : undefined;
    return retryAt === undefined
      ? { kind: 'ended', status: state.status }
      : { kind: 'wait', until: retryAt, retry: false };
  }
  const deadline = state.expiresAt === null ? undefined : Date.parse(state.expiresAt);
  if (state.viewsLeft === 0 || (deadline !== undefined && deadline <= now)) return { kind: 'expire' };
  const retry = !state.sent && state.sendAttempts > 0 && !givesUp(EMAIL, state.sendAttempts);
  const unsent = sendUnsent && !state.sent && state.sendAttempts === 0;
  const leaseEnds = unsent && state.sendingUntil ? Date.parse(state.sendingUntil) : undefined;
  if (unsent && (leaseEnds === undefined || leaseEnds <= now)) return { kind: 'send' };
  const remindAt = notices && state.remindAt ? Date.parse(state.remindAt) : undefined;
  const soonest = Math.min(deadline ?? Infinity, leaseEnds ?? Infinity, remindAt ?? Infinity);
  return { kind: 'wait', until: soonest === Infinity ? undefined : soonest, retry };
}

/**
 * Runs a link's lifecycle to its end (the Temporal workflow): `expired` or `revoked`; or `continue`
 * when the run should go on as a new one (a long history): the new run starts from the stored
 * state like any run, so nothing but the link id is carried. The workflow's durable timer holds
 * the wait; the embedded engine runs linkStep instead, at each wake-up.
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
  // e-mails besides the link: to the sender (first view, end), a reminder to the recipient; after
  // this change a run reads the link again once it ended it, for the end notice
  const notices = p.patched('link-notices');
  // a notice that cannot be sent is retried by its policy and given up, not every minute forever
  const noticePolicy = notices && p.patched('link-notice-policy');
  let state = await p.activities.linkState(id);
  /** Whether the last thing this run did was send the notices (the policy's runs). */
  let notified = false;
  for (;;) {
    const plan = planLink(state, p.now(), sendUnsent, notices, noticePolicy);
    if (plan.kind === 'ended') return plan.status;
    if (plan.kind === 'notify') {
      if (noticePolicy && notified) {
        // due again at once after a send: the activity's clock and the state's disagree (another
        // worker's), or a notice came due meanwhile; looked at after a change or a minute, never
        // in a loop of activities
        if (mayContinue && p.continueAsNewSuggested()) return 'continue';
        await p.condition(() => changed, EMAIL.waits[0]);
        changed = false;
        notified = false;
        state = await p.activities.linkState(id);
        continue;
      }
      const all = await p.activities.notifyLink(id);
      notified = true;
      // runs before the notice policy waited a minute after a failure, however many there were;
      // since, a failed notice is due again after its policy's wait (read in the state, like any
      // wake-up, so a long run of failures goes through the wait below and its continue-as-new)
      if (!all && !noticePolicy) await p.condition(() => changed, EMAIL.waits[0]);
      state = await p.activities.linkState(id);
      continue;
    }
    notified = false;
    if (plan.kind === 'expire') {
      await p.activities.expireLink(id);
      if (!notices) return 'expired';
      // read again for the end notice; a link that still reads as due to end has ended elsewhere
      state = await p.activities.linkState(id);
      if (planLink(state, p.now(), sendUnsent, notices, noticePolicy).kind === 'expire') return 'expired';
      continue;
    }
    if (plan.kind === 'send') {
      await p.activities.deliverLink(id);
      state = await p.activities.linkState(id);
      continue;
    }
    let wait = plan.until === undefined ? undefined : plan.until - p.now();
    if (plan.retry) wait = Math.min(wait ?? Infinity, waitMs(EMAIL, state.sendAttempts));
    if (mayContinue && p.continueAsNewSuggested()) return 'continue';
    if (!clearBeforeRead) changed = false;
    const signalled = await p.condition(() => changed, wait);
    if (!signalled && plan.retry) {
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

/** When the embedded engine looks at a link next (ms since the epoch; null: not before it changes), and the retry it planned. */
export interface LinkWake {
  at: number | null;
  retryAt: number | null;
}

/**
 * One step of a link's lifecycle in the embedded engine, run when the link is due (its wake-up
 * time came, or it changed): does what is due now, as linkLifecycle would, and says when to look
 * again. Nothing waits in memory meanwhile: the engine writes the answer into the link's row. A
 * failed e-mail's retry is planned by its policy after the step that found it failed, and kept in
 * the row (`retryAt`) so a change meanwhile does not put it off.
 */
export async function linkStep(a: LinkActivities, id: string, now: () => number): Promise<LinkWake> {
  let state = await a.linkState(id);
  /** Whether this step has tried a send already (one try a step), and its notices. */
  let tried = false;
  let notified = false;
  for (;;) {
    const t = now();
    const plan = planLink(state, t);
    if (plan.kind === 'ended') return { at: null, retryAt: null };
    if (plan.kind === 'notify') {
      // once a step: a failed notice is due again after its policy's wait (the state's remindAt)
      if (notified) return { at: t + EMAIL.waits[0], retryAt: null };
      notified = true;
      await a.notifyLink(id);
      state = await a.linkState(id);
      continue;
    }
    if (plan.kind === 'expire') {
      await a.expireLink(id);
      // read again for the end notice
      state = await a.linkState(id);
      if (planLink(state, now()).kind === 'expire') return { at: null, retryAt: null };
      continue;
    }
    const retryAt =
      plan.kind === 'wait' && plan.retry
        ? state.retryAt
          ? Date.parse(state.retryAt)
          : t + waitMs(EMAIL, state.sendAttempts)
        : null;
    const due = plan.kind === 'send' || (retryAt !== null && retryAt <= t);
    if (due && !tried) {
      tried = true;
      await a.deliverLink(id);
      state = await a.linkState(id);
      continue;
    }
    // still due after this step's send: another sender holds the lease; look again when it ends
    if (due) return { at: state.sendingUntil ? Date.parse(state.sendingUntil) : t + EMAIL.waits[0], retryAt };
    const until = plan.kind === 'wait' ? plan.until : undefined;
    const at = Math.min(until ?? Infinity, retryAt ?? Infinity);
    return { at: at === Infinity ? null : at, retryAt };
  }
}

/**
 * linkStep for many links at once, where a burst of them falling due does the same thing: each
 * whose step is to expire it (and nothing else is due) is expired in one transaction with the
 * others, and is done: the ids it returns have nothing to look at until they change. The others
 * (an e-mail to send, a notice due, an end notice after the expiry, a link gone or ended
 * elsewhere meanwhile) are for linkStep, one by one; it starts from their stored state, as every step does.
 */
export async function linkStepsTogether(b: LinkBatch, ids: readonly string[], now: () => number): Promise<string[]> {
  const plans = (states: Map<string, LinkState>, kind: LinkPlan['kind']) =>
    [...states].filter(([, state]) => planLink(state, now()).kind === kind).map(([id]) => id);
  const expiring = plans(await b.linkStates(ids), 'expire');
  return expiring.length ? plans(await b.expireLinks(expiring), 'ended') : [];
}

export type { LinkChange, LinkState };
