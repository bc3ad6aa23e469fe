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
import {
  ApplicationFailure,
  executeChild,
  ParentClosePolicy,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { Caller, DocumentInfo, GenerateResult } from '../src/documents';
import type { GenerateInput } from '../src/flows/generate';
import type { LinkInfo } from '../src/links/model';
import type { LinkState } from '../src/links/lifecycle';
import { RENDER_RETRY, workflowId } from './common';
import type { generate, linkWatch, LinkWatchUntil } from './workflows';

export type { LinkState, LinkWatchUntil };

export interface ChildOptions {
  /** The task queue the child runs on (default: your workflow's). */
  taskQueue?: string;
}

/** The longest render id a child is named by (a workflow id is at most 1,000 characters). */
const MAX_RENDER_ID = 900;

/**
 * The render id your workflow's key names: your workflow's id and the key, length-prefixed so that
 * no two pairs make the same id. Scoped to the workflow id, not the run: a run continued as new (or
 * a cron run) that uses the key again finds the first render.
 */
export function renderIdIn(workflowId: string, key: string): string {
  const id = `rnd_${workflowId.length}_${workflowId}_${key}`;
  if (!key || id.length > MAX_RENDER_ID)
    throw ApplicationFailure.nonRetryable(
      `executeGenerate needs an idempotencyKey of 1 to ${MAX_RENDER_ID - workflowId.length - 10} characters here (or a renderId of your own).`,
      'PaperlinkInvalidKey',
    );
  return id;
}

/**
 * Generates a document as a child workflow (`generate-<render id>`) and returns the API's 201 body
 * (the Magic Link's `url` empty: it is a secret and never enters history; the recipient gets it
 * by e-mail). The render is named by `idempotencyKey` (unique within your workflow, e.g. an order
 * id; see renderIdIn) or `renderId`: replays and retries of your workflow find the same render. A request
 * the API would refuse fails the child with that error (requestError() on the client reads it).
 */
export function executeGenerate(
  request: { body: unknown; caller?: Caller } & ({ idempotencyKey: string } | { renderId: string }),
  options: ChildOptions = {},
): Promise<GenerateResult> {
  const renderId =
    'renderId' in request ? request.renderId : renderIdIn(workflowInfo().workflowId, request.idempotencyKey);
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

/**
 * Paperlink's steps as activities of your workflow (the plugin registers them). None carries PDF
 * bytes: a document is stored and named by its id. Each is safe to retry: a render is named by its
 * render id, a share by `shareKey`.
 */
export interface StepActivities {
  /** Renders, stores and/or shares, as POST /v1/generate (the link's `url` empty: it is e-mailed, never in history). */
  generateDocument(input: GenerateInput & { renderId: string }): Promise<GenerateResult>;
  /** Shares a stored document with a new Magic Link, e-mailed to the recipient (the body of POST /v1/documents/:id/magic_links); its lifecycle starts. */
  shareDocument(request: { documentId: string; settings: unknown; shareKey: string }): Promise<LinkInfo>;
  /** A stored document's record and its links, as GET /v1/documents/:id. */
  getDocument(documentId: string): Promise<DocumentInfo>;
  /** Revokes a link now, as DELETE /v1/magic_links/:id does (its lifecycle hears of it); returns it. Revoking twice is harmless. */
  cancelLink(linkId: string): Promise<LinkInfo>;
  /** A link's state now. */
  peekLink(linkId: string): Promise<LinkState>;
}

/**
 * Paperlink's step activities with Paperlink's retry rules: the database, storage and mail server
 * retried with back-off (1 s doubling to 1 min, 8 attempts), a request Paperlink refuses (422, 404,
 * 409) never.
 */
export function stepActivities(options: { taskQueue?: string } = {}): StepActivities {
  return proxyActivities<StepActivities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '20 seconds',
    retry: RENDER_RETRY,
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
  });
}
