/**
 * The Temporal adapter of the flows: the only file that imports `@temporalio/workflow`. Each
 * workflow hands a flow of src/flows the ports it needs (activities, time, timers, signals), so
 * Temporal runs exactly the code the embedded engine runs. Workflow ids come from business ids
 * (`generate-<render id>`, `link-<link id>`, `postcard-<postcard id>`): starting one twice is a no-op.
 *
 * Bundled into Temporal's sandbox: no Node built-ins, and only type imports from the rest of src.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { GenerateResult } from '../src/documents';
import { generateFlow, type GenerateActivities, type GenerateInput } from '../src/flows/generate';
import { CHANGED, linkLifecycle as lifecycleFlow, type LinkActivities, type LinkState } from '../src/flows/link';
import { postcardIntake as intakeFlow, type PostcardActivities, type PostcardStatus } from '../src/flows/postcard';
import type { Ports } from '../src/flows/ports';
import { WAKE, webhookDispatch as dispatchFlow, type WebhookActivities } from '../src/flows/webhooks';
import { LINK, RENDER_RETRY, REQUEST_FAILURE, SEARCH_ATTRIBUTES, workflowId } from './common';

// Every activity heartbeats while it runs (workflows/activities.ts): one whose worker died (kill -9,
// a lost machine) is retried on another worker this long after, not at its start-to-close timeout.
// Activity options are not part of a workflow's history checks: changing them needs no patch.
const HEARTBEAT_TIMEOUT = '20 seconds';

// Rendering is CPU work of seconds; storage and the database are retried with back-off, a broken
// request (422, 409, 404) is not retried at all.
const generateActivities = proxyActivities<GenerateActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  startToCloseTimeout: '2 minutes',
  retry: RENDER_RETRY,
});
// Sending mail and reading a link: SMTP outages are retried by the activity for about 2 hours, and
// the flow itself resends later (POLICIES.link_email) when the link is still unsent.
const linkActivities = proxyActivities<LinkActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: 20,
    nonRetryableErrorTypes: [REQUEST_FAILURE],
  },
});
// A postcard's render is retried by its policy until it succeeds (every 10 minutes at most, the
// server keeps one event for all attempts); a postcard that cannot be made ends `failed` without
// an error, and a request failure (the postcard is gone) is not retried.
const postcardActivities = proxyActivities<PostcardActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    nonRetryableErrorTypes: [REQUEST_FAILURE],
  },
});
// Runs recorded before 'postcard-retry-policy' retried 5 times here, then waited in workflow code
// (POLICIES.postcard_render) and tried again: they replay with these options and the flow's loop.
const postcardActivitiesBefore = proxyActivities<PostcardActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});

/** The flows' ports on Temporal: workflow time, durable timers, conditions re-checked after every signal. */
function ports<A>(activities: A, handlers: Map<string, () => void> = new Map()): Ports<A> {
  return {
    activities,
    now: () => Date.now(), // deterministic inside a workflow: the time of the current workflow task
    sleep: (ms) => sleep(Math.max(1, ms)),
    condition: async (test, timeoutMs) => {
      if (timeoutMs === undefined) {
        await condition(test);
        return true;
      }
      return condition(test, Math.max(1, timeoutMs));
    },
    onSignal: (name, handler) => {
      handlers.set(name, handler);
    },
    patched: (id) => patched(id),
    continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
  };
}

// ---- generate ------------------------------------------------------------------------------

const DOCUMENT_KEY = defineSearchAttributeKey(SEARCH_ATTRIBUTES.documentId, SearchAttributeType.KEYWORD);

/** Renders, stores and shares one document; starts the lifecycle of the Magic Link it made. */
export async function generate(input: GenerateInput): Promise<GenerateResult> {
  const result = await generateFlow(
    {
      ...ports(generateActivities),
      startLinkLifecycle: async (linkId) => {
        try {
          await startChild(linkLifecycle, {
            workflowId: workflowId.link(linkId),
            args: [linkId],
            parentClosePolicy: ParentClosePolicy.ABANDON,
          });
        } catch (err) {
          // the API may have started it already (a view or a resend signals with start)
          if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
        }
      },
    },
    input,
  );
  // asked for by the starter (TEMPORAL_SEARCH_ATTRIBUTES): the run is found by its document too
  if (input.indexed) upsertSearchAttributes([{ key: DOCUMENT_KEY, value: result.document_id }]);
  return result;
}

// ---- link lifecycle ------------------------------------------------------------------------

/** The recipient opened the link for the first time. */
export const openedSignal = defineSignal(LINK.opened);
/** A view was counted (the API signals the view that used the last one). */
export const viewedSignal = defineSignal(LINK.viewed);
/** Anything else changed: sent, send failed, ended. */
export const changedSignal = defineSignal(LINK.changed);

export interface LinkStatusView {
  link_id: string;
  /** The link's state as the workflow last read it; null before the first read. */
  state: LinkState | null;
  /** How the lifecycle ended, once it has. */
  ended: 'expired' | 'revoked' | null;
}
/** What the workflow knows of its link. */
export const statusQuery = defineQuery<LinkStatusView>(LINK.status);
/** Revokes the link now and returns its final state; refused when the link has ended already. */
export const expireUpdate = defineUpdate<LinkState, [ExpireOptions]>(LINK.expire);
export interface ExpireOptions {
  /** Why, for the worker's log. */
  reason?: string;
}

/**
 * Runs until the link ends. A link may live for years: when the server suggests it (a long
 * history), the run continues as new with the same link id, and the new run reads the link's state
 * from the database like any start (so a change told meanwhile is not lost).
 */
export async function linkLifecycle(linkId: string): Promise<'expired' | 'revoked'> {
  let last: LinkState | null = null;
  let ended: 'expired' | 'revoked' | null = null;
  const handlers = new Map<string, () => void>();
  const changed = () => handlers.get(CHANGED)?.();
  // the flow listens for CHANGED ('changed'); opened and viewed wake it the same way
  for (const s of [openedSignal, viewedSignal, changedSignal]) setHandler(s, changed);
  setHandler(statusQuery, () => ({ link_id: linkId, state: last, ended }));

  // (the proxy makes its methods on demand: it cannot be spread)
  const activities: LinkActivities = {
    linkState: async (id) => (last = await linkActivities.linkState(id)),
    deliverLink: (id) => linkActivities.deliverLink(id),
    expireLink: (id) => linkActivities.expireLink(id),
    revokeLink: (id) => linkActivities.revokeLink(id),
    notifyLink: (id) => linkActivities.notifyLink(id),
  };
  setHandler(
    expireUpdate,
    async (options) => {
      log.info('revoking magic link', { linkId, reason: options?.reason ?? null });
      await linkActivities.revokeLink(linkId);
      const state = await activities.linkState(linkId);
      changed();
      return state;
    },
    {
      validator: (options: ExpireOptions | undefined) => {
        if (ended || last?.status === 'expired' || last?.status === 'revoked')
          throw new Error(`the link has ended already (${ended ?? last?.status})`);
        if (options?.reason !== undefined && (typeof options.reason !== 'string' || options.reason.length > 500))
          throw new Error('reason must be text of at most 500 characters');
      },
    },
  );

  const outcome = await lifecycleFlow(ports(activities, handlers), linkId);
  await condition(allHandlersFinished);
  if (outcome === 'continue') return continueAsNew<typeof linkLifecycle>(linkId);
  ended = outcome;
  return ended;
}

// ---- waiting for a link, from a workflow of yours ----------------------------------------

/** What a watch reads of a link: its state, without touching what its lifecycle is to be told. */
export interface WatchActivities {
  peekLink(id: string): Promise<LinkState>;
}
const watchActivities = proxyActivities<WatchActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** What a watch waits for: the link's first counted view (or its end, whichever comes first), or its end. */
export type LinkWatchUntil = 'viewed' | 'ended';

/**
 * Waits until a link is viewed or has ended, reading it every `everyMs` (a durable timer between
 * reads), and returns its state then. Started as a child of your workflow (awaitLink in
 * paperlink/workflows/children): your history holds its start and its result, however long the
 * link lives; this one continues as new when its own grows long.
 */
export async function linkWatch(linkId: string, until: LinkWatchUntil = 'ended', everyMs = 60_000): Promise<LinkState> {
  for (;;) {
    const state = await watchActivities.peekLink(linkId);
    const ended = state.status === 'expired' || state.status === 'revoked';
    if (ended || (until === 'viewed' && (state.views ?? 0) > 0)) return state;
    if (workflowInfo().continueAsNewSuggested) return continueAsNew<typeof linkWatch>(linkId, until, everyMs);
    await sleep(Math.max(1_000, everyMs));
  }
}

// ---- postcard intake -----------------------------------------------------------------------

/**
 * Renders a received postcard; ends `rendered` or `failed`. Unexpected errors (the database or
 * storage down) are retried by the activity's policy, not by a loop here: no history grows while a
 * postcard waits for the database to come back.
 */
export async function postcardIntake(postcardId: string): Promise<PostcardStatus> {
  if (patched('postcard-retry-policy')) return postcardActivities.renderPostcard(postcardId);
  return intakeFlow(ports(postcardActivitiesBefore), postcardId, (err) =>
    log.warn('postcard render failed; retrying', { postcardId, error: String(err) }),
  );
}

// ---- webhook delivery ----------------------------------------------------------------------

// One round delivers everything due; each POST has its own timeout (WEBHOOK_TIMEOUT_MS), and a
// failed delivery is rescheduled in the database, so the activity itself rarely fails. It
// heartbeats while it runs (workflows/activities.ts): a worker that dies mid-round is noticed
// within a minute, not after the ten-minute limit.
const webhookActivities = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** New events were written: look now instead of at the next retry. */
export const wakeSignal = defineSignal(WAKE);

/**
 * Delivered webhook events (workflow `webhooks-<task queue>`) until every process delivered them
 * itself (src/flows/webhooks.ts): nothing starts it now; a run an older build started ends at its next task.
 */
export async function webhookDispatch(): Promise<'idle'> {
  const handlers = new Map<string, () => void>();
  setHandler(wakeSignal, () => handlers.get(WAKE)?.());
  const outcome = await dispatchFlow(ports(webhookActivities, handlers));
  if (outcome === 'more') await continueAsNew<typeof webhookDispatch>();
  return 'idle';
}
