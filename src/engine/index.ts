/**
 * What runs the flows: the embedded engine (in this process, the default) or Temporal
 * (`ENGINE=temporal`, workflows/). Both run the same flows of src/flows over the same activities,
 * so the API answers the same either way.
 */
import type { Documents, GenerateResult } from '../documents';
import { activitiesForGenerate, type GenerateActivities, type GenerateInput } from '../flows/generate';
import { activitiesForLinks, type LinkActivities, type LinkChange } from '../flows/link';
import { activitiesForPostcards, type PostcardActivities } from '../flows/postcard';
import { activitiesForWebhooks, type WebhookActivities } from '../flows/webhooks';
import type { MagicLinks } from '../links';
import type { Postcards } from '../postcards';
import type { Dispatcher } from '../webhooks';

export type Activities = GenerateActivities & LinkActivities & PostcardActivities & WebhookActivities;

export interface Engine {
  readonly kind: 'embedded' | 'temporal';
  /** Runs a generate request to the end and returns its result (Temporal: workflow `generate-<render id>`). */
  generate(input: GenerateInput): Promise<GenerateResult>;
  /** A link changed: its lifecycle starts if it is not running, and hears of it. */
  linkChanged(id: string, change: LinkChange): void;
  /** A postcard was received: its intake flow starts. */
  postcardReceived(id: string): void;
  /**
   * Begins the background work of a process that runs flows: the embedded engine's kinds on the runner, or Temporal's
   * handover of what it has not heard of. Nothing per link or postcard: what is due or marked is
   * found through an index (src/engine/claims.ts, src/engine/marks.ts).
   */
  start(): void;
  stop(): Promise<void>;
}

/**
 * Every flow's activities on the service's parts (each flow defines its own, beside it): one set for
 * both engines.
 */
export function activitiesOf(parts: {
  documents: Documents;
  links: MagicLinks;
  postcards: Postcards;
  dispatcher: Dispatcher;
}): Activities {
  return {
    ...activitiesForGenerate(parts.documents),
    ...activitiesForLinks(parts.links),
    ...activitiesForPostcards(parts.postcards),
    ...activitiesForWebhooks(parts.dispatcher),
  };
}
