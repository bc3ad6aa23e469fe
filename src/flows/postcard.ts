/**
 * The postcard intake: render a received postcard. The activity itself marks it `rendered` or
 * `failed` (a request that cannot make a postcard); an unexpected error (the database down, a full
 * disk) is retried with back-off by POLICIES.postcard_render, so nothing answered 202 is dropped.
 * Neither engine loops here: the embedded engine runs one attempt each time the postcard is due and
 * writes when it is due again (src/engine/embedded.ts), and under Temporal the activity's retry
 * policy retries it (workflows/workflows.ts). `postcardIntake`, the loop below, is kept only for the
 * Temporal runs recorded before that change, which replay it.
 */
import type { Postcards } from '../postcards';
import { POLICIES, waitMs } from './policies';
import type { Ports } from './ports';

export type PostcardStatus = 'received' | 'rendered' | 'submitted' | 'mailed' | 'returned' | 'failed';

export interface PostcardActivities {
  renderPostcard(id: string): Promise<PostcardStatus>;
}

/** The activity on the service's postcards (what both engines register). */
export function activitiesForPostcards(postcards: Pick<Postcards, 'render'>): PostcardActivities {
  return { renderPostcard: (id) => postcards.render(id) };
}

const RENDER = POLICIES.postcard_render;

export async function postcardIntake(
  p: Ports<PostcardActivities>,
  id: string,
  onError: (err: unknown) => void = () => undefined,
): Promise<PostcardStatus> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await p.activities.renderPostcard(id);
    } catch (err) {
      onError(err);
      await p.sleep(waitMs(RENDER, attempt + 1));
    }
  }
}
