/**
 * The activities Temporal workers run: the very operations the embedded engine calls
 * (src/engine activitiesOf), with one change at the boundary: a PaperlinkError (a request that
 * cannot succeed: 422, 404, 409) becomes a non-retryable ApplicationFailure carrying the error as
 * data, so the API can answer exactly as the embedded engine would. Everything else (SMTP down,
 * storage full, the database restarting) is thrown as is and retried by the workflow's policy.
 * Every activity heartbeats while it runs, so one whose worker died is retried on another soon
 * after (the heartbeat timeouts of workflows/workflows.ts).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { activitiesOf, type Activities } from '../src/engine';
import { errorData, PaperlinkError, UnavailableError, ValidationError } from '../src/errors';
import type { Service } from '../src/service';
import { PASSING_FAILURE, REQUEST_FAILURE } from './common';
import type { StepActivities } from './children';
import type { WatchActivities } from './workflows';

/**
 * The service's parts the activities work on; each holds the database, the document storage, the
 * mailer, the renderer and the clock it was made with. `createService(loadConfig())` makes them.
 */
export type ActivityDeps = Pick<Service, 'documents' | 'links' | 'postcards' | 'dispatcher'>;

/** How often a running activity tells the server it is alive (well inside the 20-second heartbeat timeout). */
export const HEARTBEAT_MS = 5_000;

export function createActivities(
  deps: ActivityDeps,
  options: { heartbeatMs?: number } = {},
): Activities & WatchActivities & StepActivities {
  const own = activitiesOf(deps);
  const plain: Activities & WatchActivities & StepActivities = {
    ...own,
    // the steps an engineer's workflow calls (workflows/children.ts stepActivities); no URL in history
    shareDocument: async ({ documentId, settings, shareKey }) => {
      if (typeof shareKey !== 'string' || !shareKey)
        throw new ValidationError('shareDocument needs a shareKey: its retry must find the link it made.', [
          { field: 'shareKey', message: 'is required', code: 'required' },
        ]);
      return (await deps.documents.share(documentId, settings, null, shareKey)).link;
    },
    getDocument: (id) => deps.documents.get(id),
    cancelLink: (id) => deps.links.end(id, 'revoked'),
    // a watch's read (linkWatch) leaves the link's mark for its lifecycle
    peekLink: (id) => deps.links.state(id),
    // the workflow's read of a link has seen what its mark stood for (src/engine/marks.ts)
    linkState: (id) => deps.links.state(id, true),
    // a Magic Link's URL is a secret: it never enters Temporal's history (the result is kept
    // there); the API derives it again for its answer (TemporalEngine.generate)
    generateDocument: async (input) => {
      const result = await own.generateDocument(input);
      if (result.destinations.magic_link) result.destinations.magic_link.url = '';
      return result;
    },
  };
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(plain) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), heartbeatMs);
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof PaperlinkError) {
          const passing = err instanceof UnavailableError;
          throw ApplicationFailure.create({
            message: err.message,
            type: passing ? PASSING_FAILURE : REQUEST_FAILURE,
            nonRetryable: !passing,
            details: [errorData(err)],
          });
        }
        throw err;
      } finally {
        clearInterval(beat);
      }
    };
  }
  return wrapped as unknown as Activities & WatchActivities & StepActivities;
}
