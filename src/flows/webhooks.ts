/**
 * Webhook delivery as a flow (what Temporal runs; the embedded engine runs the dispatcher's own
 * loop): deliver what is due, then wait until the next retry is due or a new event wakes it.
 * After `rounds` rounds it returns 'more' (Temporal continues as new, keeping history short);
 * with nothing pending and nothing new for IDLE_MS it returns 'idle' and the next event starts it.
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

export async function webhookDispatch(p: Ports<WebhookActivities>, rounds = 100): Promise<'idle' | 'more'> {
  let woken = false;
  p.onSignal(WAKE, () => {
    woken = true;
  });
  for (let i = 0; i < rounds; i++) {
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
