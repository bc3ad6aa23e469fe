/**
 * Paperlink's workflows as children of yours: typed helpers to call from workflow code (they run
 * in Temporal's sandbox, like the workflows they start). Your worker runs Paperlink's workflows
 * too (the plugin, ./plugin.ts), or a `paperlink worker` polls `taskQueue`.
 *
 *   import { executeGenerate, awaitLink } from 'paperlink/workflows/children';
 *
 *   export async function sendContract(order: Order): Promise<string> {
 *     const render = await executeGenerate({ body: {...}, idempotencyKey: `contract-${order.id}` });
 *     const link = await awaitLink(render.magic_link_piece_id!, 'viewed');
 *     return link.views ? 'read' : 'unread';
 *   }
 */
import { executeChild, ParentClosePolicy, workflowInfo } from '@temporalio/workflow';
import type { GenerateResult } from '../src/documents';
import type { Caller } from '../src/documents';
import type { LinkState } from '../src/links/lifecycle';
import { workflowId } from './common';
import type { generate, linkWatch, LinkWatchUntil } from './workflows';

export type { LinkState, LinkWatchUntil };

export interface ChildOptions {
  /** The task queue the child runs on (default: your workflow's). */
  taskQueue?: string;
}

/**
 * Generates a document as a child workflow (`generate-<render id>`) and returns the API's 201 body
 * (the Magic Link's `url` empty: it is a secret and never enters history; the recipient gets it
 * by e-mail). The render is named by `idempotencyKey` (unique within your workflow's run, e.g. an
 * order id) or `renderId`: replays and retries of your workflow find the same render. A request
 * the API would refuse fails the child with that error (requestError() on the client reads it).
 */
export function executeGenerate(
  request: { body: unknown; caller?: Caller } & ({ idempotencyKey: string } | { renderId: string }),
  options: ChildOptions = {},
): Promise<GenerateResult> {
  const renderId =
    'renderId' in request ? request.renderId : `rnd_${workflowInfo().workflowId}-${request.idempotencyKey}`;
  return executeChild<typeof generate>('generate', {
    workflowId: workflowId.generate(renderId),
    args: [{ body: request.body, caller: request.caller ?? { keyId: null, name: 'temporal' }, renderId }],
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
  });
}

/**
 * Waits until the link is viewed (`'viewed'`: its first counted view, or its end) or has ended
 * (`'ended'`: expired or revoked), and returns its state then (`status`, `views`, `viewsLeft`,
 * `expiresAt`). A child workflow reads the link every `everyMs` (default a minute); your history
 * holds only its start and result, however long the link lives.
 */
export function awaitLink(
  linkId: string,
  until: LinkWatchUntil = 'ended',
  options: ChildOptions & { everyMs?: number } = {},
): Promise<LinkState> {
  return executeChild<typeof linkWatch>('linkWatch', {
    workflowId: `link-watch-${until}-${linkId}-${workflowInfo().workflowId}`,
    args: [linkId, until, options.everyMs ?? 60_000],
    parentClosePolicy: ParentClosePolicy.TERMINATE,
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
  });
}
