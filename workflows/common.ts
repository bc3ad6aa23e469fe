/**
 * Names shared by the workflows (inside Temporal's sandbox), the activities, the worker and the
 * client helpers. No imports: the workflow bundle includes this file.
 */

/** The task queue the worker polls unless TEMPORAL_TASK_QUEUE says otherwise. */
export const DEFAULT_TASK_QUEUE = 'paperlink';

/** The ApplicationFailure type of a request that cannot succeed (a PaperlinkError): never retried. */
export const REQUEST_FAILURE = 'PaperlinkError';

/**
 * The ApplicationFailure type of a PaperlinkError that passes (an UnavailableError: the disk full,
 * the database or a printer away): retried by the activity's policy, and the API's answer once it
 * gives up.
 */
export const PASSING_FAILURE = 'PaperlinkUnavailable';

/** Workflow ids from business ids, so starting the same work twice finds the first run. */
export const workflowId = {
  generate: (renderId: string) => `generate-${renderId}`,
  link: (linkId: string) => `link-${linkId}`,
  postcard: (postcardId: string) => `postcard-${postcardId}`,
  /** One dispatcher for the whole namespace and task queue. */
  webhooks: (taskQueue: string) => `webhooks-${taskQueue}`,
};

/** Names of the link lifecycle's signals, query and update (the client helpers use them without loading the workflow library). */
export const LINK = {
  /** Signals: the first opening, a counted view, anything else (sent, send failed, ended). */
  opened: 'opened',
  viewed: 'viewed',
  changed: 'changed',
  /** Query: what the workflow last read of its link. */
  status: 'status',
  /** Update: revoke now. */
  expire: 'expire',
} as const;

/**
 * The retry of a render or a store (the generate workflow's activity, and the step activities an
 * engineer's workflow calls): the database, storage and mail retried with back-off, a request that
 * cannot succeed never.
 */
export const RENDER_RETRY = {
  initialInterval: '1 second' as const,
  backoffCoefficient: 2,
  maximumInterval: '1 minute' as const,
  maximumAttempts: 8,
  nonRetryableErrorTypes: [REQUEST_FAILURE],
};

/**
 * The search attributes (type Keyword) a render is found by in Temporal's UI, set where
 * TEMPORAL_SEARCH_ATTRIBUTES=true: the server must have them (`temporal operator search-attribute create`).
 */
export const SEARCH_ATTRIBUTES = {
  renderId: 'PaperlinkRenderId',
  templateId: 'PaperlinkTemplateId',
  documentId: 'PaperlinkDocumentId',
} as const;
