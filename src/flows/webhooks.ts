/**
 * Webhook delivery as a flow: what Temporal ran before every process delivered webhooks itself.
 * Deliveries are sent by the dispatcher of every process that runs background work (serve and
 * `paperlink worker` alike, on either engine; src/webhooks): each claims due deliveries in the
 * database, so delivery grows with processes and needs no wake-up from the process that wrote an
 * event. One workflow that every process signalled was a bottleneck (it stalled for minutes under
 * load, its history grew past the continue-as-new hint). It stays registered only so that a run
 * started by an older build replays as recorded and then ends (patch 'webhooks-in-every-process').
 */
import type { Dispatcher } from '../webhooks';
import type { Ports } from './ports';

export interface WebhookActivities {
  /** Delivers every due delivery; returns when the next pending one is due (ISO), or null. */
  deliverWebhooks(): Promise<string | null>;
}

/** The activity on the service's webhook dispatcher (what both engines register). */
export function activitiesForWebhooks(dispatcher: Pick<Dispatcher, 'drain'>): WebhookActivities {
  return { deliverWebhooks: () => dispatcher.drain() };
}

export const WAKE = 'wake';
export const IDLE_MS = 3_600_000;
/** The shortest wait between rounds, so a receiver failing at once is not hammered. */
export const MIN_WAIT_MS = 1_000;

/** The change that ends the dispatch workflow: every process delivers instead. */
export const IN_EVERY_PROCESS = 'webhooks-in-every-process';

export async function webhookDispatch(p: Ports<WebhookActivities>, rounds = 100): Promise<'idle' | 'more'> {
  let woken = false;
  p.onSignal(WAKE, () => {
    woken = true;
  });
  for (let i = 0; i < rounds; i++) {
    // a run of an older build ends at its next task: the dispatchers deliver what it would have
    if (p.patched(IN_EVERY_PROCESS)) return 'idle';
    woken = false;
    const next = await p.activities.deliverWebhooks();
    if (next === null) {
      if (!(await p.condition(() => woken, IDLE_MS))) return 'idle';
      continue;
    }
    await p.condition(() => woken, Math.max(MIN_WAIT_MS, Date.parse(next) - p.now()));
  }
  return 'more';
}
