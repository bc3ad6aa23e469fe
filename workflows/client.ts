/**
 * Typed helpers for starting and talking to Paperlink's workflows from your own code, and the
 * engine `paperlink serve` uses with ENGINE=temporal. Workflow ids come from business ids, so a
 * repeated start finds the first run instead of doing the work twice.
 *
 *   import { Client, Connection } from '@temporalio/client';
 *   import { generateDocument, linkStatus } from 'paperlink/workflows/client';
 */
import fs from 'node:fs';
import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConfig } from '../src/config';
import type { GenerateResult } from '../src/documents';
import type { Activities, Engine } from '../src/engine';
import { PaperlinkError, reviveError, type ErrorData } from '../src/errors';
import type { GenerateInput } from '../src/flows/generate';
import type { LinkChange, LinkState } from '../src/flows/link';
import type { PostcardStatus } from '../src/flows/postcard';
import { newId } from '../src/ids';
import { DEFAULT_TASK_QUEUE, LINK, REQUEST_FAILURE, workflowId } from './common';
import { WAKE } from '../src/flows/webhooks';
import type { ExpireOptions, LinkStatusView } from './workflows';

export { DEFAULT_TASK_QUEUE, workflowId } from './common';
export type { LinkStatusView } from './workflows';

/** Connection options from Paperlink's settings (TEMPORAL_ADDRESS, TLS files, API key); the worker uses them too. */
export function connectionOptions(t: TemporalConfig): Pick<ConnectionOptions, 'address' | 'tls'> & { apiKey?: string } {
  const read = (p: string | undefined) => (p ? fs.readFileSync(p) : undefined);
  const pair = t.tlsCertPath && t.tlsKeyPath ? { crt: read(t.tlsCertPath)!, key: read(t.tlsKeyPath)! } : undefined;
  const ca = read(t.tlsCaPath);
  return {
    address: t.address,
    tls: t.tls ? { ...(pair ? { clientCertPair: pair } : {}), ...(ca ? { serverRootCACertificate: ca } : {}) } : undefined,
    ...(t.apiKey ? { apiKey: t.apiKey } : {}),
  };
}

/** What to say when the Temporal frontend cannot be reached. */
export function unreachable(t: TemporalConfig, err: unknown): PaperlinkError {
  const why = err instanceof Error ? err.message : String(err);
  return new PaperlinkError(
    'temporal_unreachable',
    `Cannot reach Temporal at ${t.address} (namespace ${t.namespace}): ${why}. Start a Temporal server there, or set TEMPORAL_ADDRESS (with TEMPORAL_API_KEY or TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY for Temporal Cloud), or unset ENGINE to run flows in this process.`,
  );
}

export async function connectClient(t: TemporalConfig): Promise<Client> {
  const connection = await Connection.connect(connectionOptions(t)).catch((err: unknown) => {
    throw unreachable(t, err);
  });
  return new Client({ connection, namespace: t.namespace });
}

export interface StartOptions {
  /** The task queue our worker polls (default `paperlink`). */
  taskQueue?: string;
}

/**
 * The PaperlinkError a workflow failed with (a 422, 404 or 409 of the API), or undefined when it
 * failed for another reason. Lets your code branch on `err.code` exactly as on an API error.
 */
export function requestError(err: unknown): PaperlinkError | undefined {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e.name === 'ApplicationFailure' && (e as { type?: string }).type === REQUEST_FAILURE) {
      const details = (e as { details?: unknown[] }).details;
      const data = details?.[0] as ErrorData | undefined;
      if (data && typeof data.code === 'string') return reviveError(data);
    }
    if (e instanceof PaperlinkError) return e;
  }
  return undefined;
}

/**
 * Generates a document as workflow `generate-<render id>` and waits for the result: the same body
 * and result as POST /v1/generate. A request the API would refuse throws that PaperlinkError.
 */
export async function generateDocument(
  client: Client,
  request: { body: unknown; caller?: GenerateInput['caller']; renderId?: string },
  options: StartOptions = {},
): Promise<GenerateResult> {
  const input: GenerateInput = { body: request.body, caller: request.caller ?? { keyId: null, name: 'temporal' }, renderId: request.renderId ?? newId('rnd') };
  try {
    return await client.workflow.execute<(i: GenerateInput) => Promise<GenerateResult>>('generate', {
      workflowId: workflowId.generate(input.renderId!),
      taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
      args: [input],
    });
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw requestError(err) ?? err;
    throw err;
  }
}

/** Starts the intake flow of a postcard the API accepted (its `pc_…` id); a second start is a no-op. */
export async function startPostcardIntake(client: Client, postcardId: string, options: StartOptions = {}): Promise<void> {
  try {
    await client.workflow.start<(id: string) => Promise<PostcardStatus>>('postcardIntake', {
      workflowId: workflowId.postcard(postcardId),
      taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
      args: [postcardId],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** Waits for a postcard's intake to end: `rendered` or `failed`. */
export function postcardResult(client: Client, postcardId: string): Promise<PostcardStatus> {
  return client.workflow.getHandle<(id: string) => Promise<PostcardStatus>>(workflowId.postcard(postcardId)).result();
}

/** Tells a link's lifecycle what happened, starting the lifecycle if it is not running. */
export async function signalLink(client: Client, linkId: string, signal: 'opened' | 'viewed' | 'changed' = 'changed', options: StartOptions = {}): Promise<void> {
  await client.workflow.signalWithStart<(id: string) => Promise<'expired' | 'revoked'>, []>('linkLifecycle', {
    workflowId: workflowId.link(linkId),
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    args: [linkId],
    signal: LINK[signal],
    signalArgs: [],
  });
}

/** Starts or wakes the webhook dispatcher workflow of the task queue. */
export async function wakeWebhooks(client: Client, options: StartOptions = {}): Promise<void> {
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  await client.workflow.signalWithStart<() => Promise<'idle'>, []>('webhookDispatch', {
    workflowId: workflowId.webhooks(taskQueue),
    taskQueue,
    args: [],
    signal: WAKE,
    signalArgs: [],
  });
}

/** What the link's lifecycle workflow knows of it. */
export function linkStatus(client: Client, linkId: string): Promise<LinkStatusView> {
  return client.workflow.getHandle(workflowId.link(linkId)).query<LinkStatusView, []>(LINK.status);
}

/** Revokes a link now through its lifecycle workflow; returns the link's final state. */
export function expireLink(client: Client, linkId: string, options: ExpireOptions = {}): Promise<LinkState> {
  return client.workflow.getHandle(workflowId.link(linkId)).executeUpdate<LinkState, [ExpireOptions]>(LINK.expire, { args: [options] });
}

/** Waits for a link's lifecycle to end: `expired` or `revoked`. */
export function linkResult(client: Client, linkId: string): Promise<'expired' | 'revoked'> {
  return client.workflow.getHandle<(id: string) => Promise<'expired' | 'revoked'>>(workflowId.link(linkId)).result();
}

/** The signal each change of a link is told by. */
const SIGNAL_OF: Record<LinkChange, 'opened' | 'viewed' | 'changed'> = { opened: 'opened', viewed: 'viewed', sent: 'changed', send_failed: 'changed', ended: 'changed' };

/**
 * ENGINE=temporal: the API hands its flows to Temporal workers. Generation waits for its workflow
 * (the API answers as before); link changes and received postcards start or signal their
 * workflows and do not wait: the database holds the truth, and a start or signal that fails is
 * retried every 30 s (and at the next start of the service, by resume).
 */
export class TemporalEngine implements Engine {
  readonly kind = 'temporal';
  /** Starts and signals that failed (Temporal unreachable for a moment), retried every RETRY_MS. */
  private readonly pending = new Map<string, () => Promise<void>>();
  private readonly timer: NodeJS.Timeout;
  private wakeScheduled = false;
  static RETRY_MS = 30_000;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly onError: (id: string, err: unknown) => void = () => undefined,
    /** How long one start or signal may take before it counts as failed (and is kept for later). */
    private readonly callTimeoutMs = 10_000,
  ) {
    this.timer = setInterval(() => void this.retry(), TemporalEngine.RETRY_MS);
    this.timer.unref();
  }

  static async connect(t: TemporalConfig, onError?: (id: string, err: unknown) => void): Promise<TemporalEngine> {
    return new TemporalEngine(await connectClient(t), t.taskQueue, onError);
  }

  generate(input: GenerateInput): Promise<GenerateResult> {
    return generateDocument(this.client, input, { taskQueue: this.taskQueue });
  }

  linkChanged(id: string, change: LinkChange): void {
    this.attempt(workflowId.link(id), () => signalLink(this.client, id, SIGNAL_OF[change], { taskQueue: this.taskQueue }));
  }

  /** Wakes the webhook dispatcher workflow (starting it if needed), at most once per 200 ms. */
  eventsEmitted(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setTimeout(() => {
      this.wakeScheduled = false;
      this.attempt(workflowId.webhooks(this.taskQueue), () => wakeWebhooks(this.client, { taskQueue: this.taskQueue }));
    }, 200).unref();
  }

  postcardReceived(id: string): void {
    this.attempt(workflowId.postcard(id), () => startPostcardIntake(this.client, id, { taskQueue: this.taskQueue }));
  }

  /** Runs it now; if Temporal cannot be reached, keeps it and tries again later (the database holds the record meanwhile). */
  private attempt(key: string, call: () => Promise<void>): void {
    const fn = () => this.client.withDeadline(Date.now() + this.callTimeoutMs, call);
    fn().then(
      () => this.pending.delete(key),
      (err: unknown) => {
        this.pending.set(key, fn);
        this.onError(key, err);
      },
    );
  }

  /** Tries the failed starts and signals again; returns how many are still pending. */
  async retry(): Promise<number> {
    for (const [key, fn] of [...this.pending]) {
      try {
        await fn();
        this.pending.delete(key);
      } catch (err) {
        this.onError(key, err);
      }
    }
    return this.pending.size;
  }

  async resume(work: { links: string[]; postcards: string[] }): Promise<void> {
    await wakeWebhooks(this.client, { taskQueue: this.taskQueue });
    for (const id of work.links) await signalLink(this.client, id, 'changed', { taskQueue: this.taskQueue });
    for (const id of work.postcards) await startPostcardIntake(this.client, id, { taskQueue: this.taskQueue });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.client.connection.close();
  }
}

/** For a worker of your own: the activities to register beside `workflowsPath`. */
export type { Activities };
