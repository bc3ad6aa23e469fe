/**
 * What runs the flows: the embedded engine (in this process, the default) or Temporal
 * (`ENGINE=temporal`, workflows/). Both run the same flows of src/flows over the same activities,
 * so the API answers the same either way.
 */
import type { Documents, GenerateResult } from '../documents';
import type { GenerateActivities, GenerateInput } from '../flows/generate';
import type { LinkActivities, LinkChange } from '../flows/link';
import type { PostcardActivities } from '../flows/postcard';
import type { WebhookActivities } from '../flows/webhooks';
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
   * Events were written: delivery should look. Engines that deliver webhooks elsewhere (Temporal:
   * the webhookDispatch workflow) have it; without it the service runs its dispatcher in-process.
   */
  eventsEmitted?(): void;
  /** Re-drives the flows of records that have not ended (at start). */
  resume(work: { links: string[]; postcards: string[] }): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The operations flows call, on the service's parts: one set for both engines. An activity never
 * tells its own flow what it did (the flow reads the result; under Temporal a signal from an
 * activity to its own workflow only adds history, and after the workflow ends would start a new run).
 */
export function activitiesOf(parts: {
  documents: Documents;
  links: MagicLinks;
  postcards: Postcards;
  dispatcher: Dispatcher;
}): Activities {
  const { documents, links, postcards, dispatcher } = parts;
  return {
    generateDocument: (input) => documents.generate(input.body, input.caller, input.renderId),
    linkState: (id) => links.state(id),
    deliverLink: async (id) => (await links.deliver(id, false)).sent,
    expireLink: async (id) => {
      await links.end(id, 'expired', false);
    },
    revokeLink: async (id) => {
      await links.end(id, 'revoked', false);
    },
    renderPostcard: (id) => postcards.render(id),
    deliverWebhooks: () => dispatcher.drain(),
  };
}
