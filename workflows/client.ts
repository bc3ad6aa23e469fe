/**
 * Typed helpers for starting and talking to Paperlink's workflows from your own code, and the
 * engine `paperlink serve` uses with ENGINE=temporal. Workflow ids come from business ids, so a
 * repeated start finds the first run instead of doing the work twice.
 *
 *   import { Client, Connection } from '@temporalio/client';
 *   import { generateDocument, linkStatus } from 'paperlink/workflows/client';
 */
import fs from 'node:fs';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type ConnectionOptions,
} from '@temporalio/client';
import { systemClock, type Clock } from '../src/clock';
import { temporalInterceptors, tracing } from '../src/tracing';
import { ConfigError, type TemporalConfig } from '../src/config';
import type { GenerateResult } from '../src/documents';
import type { Activities, Engine } from '../src/engine';
import type { Marks } from '../src/engine/marks';
import {
  PaperlinkError,
  StartupError,
  reviveError,
  TooLargeError,
  UnavailableError,
  ValidationError,
  type ErrorData,
} from '../src/errors';
import type { GenerateInput } from '../src/flows/generate';
import type { LinkChange, LinkState } from '../src/flows/link';
import type { PostcardStatus } from '../src/flows/postcard';
import { newId } from '../src/ids';
import { renderIdFor } from '../src/idempotency';
import { paperlinkDataConverter } from './codec';
import { DEFAULT_TASK_QUEUE, LINK, PASSING_FAILURE, REQUEST_FAILURE, SEARCH_ATTRIBUTES, workflowId } from './common';
import type { ExpireOptions, LinkStatusView } from './workflows';

export { DEFAULT_TASK_QUEUE, workflowId } from './common';
export { paperlinkDataConverter } from './codec';
export type { LinkStatusView } from './workflows';

/** Connection options from Paperlink's settings (TEMPORAL_ADDRESS, TLS files, API key); the worker uses them too. */
export function connectionOptions(t: TemporalConfig): Pick<ConnectionOptions, 'address' | 'tls'> & { apiKey?: string } {
  const read = (p: string | undefined) => (p ? fs.readFileSync(p) : undefined);
  const pair = t.tlsCertPath && t.tlsKeyPath ? { crt: read(t.tlsCertPath)!, key: read(t.tlsKeyPath)! } : undefined;
  const ca = read(t.tlsCaPath);
  return {
    address: t.address,
    tls: t.tls
      ? { ...(pair ? { clientCertPair: pair } : {}), ...(ca ? { serverRootCACertificate: ca } : {}) }
      : undefined,
    ...(t.apiKey ? { apiKey: t.apiKey } : {}),
  };
}

/** Whether a call failed because the server has no Worker Deployments (UNIMPLEMENTED, or FAILED_PRECONDITION where they are turned off). */
export const noWorkerDeployments = (err: unknown): boolean => [12, 9].includes((err as { code?: number }).code ?? -1);

/** What to say when the Temporal frontend cannot be reached. */
export function unreachable(t: TemporalConfig, err: unknown): PaperlinkError {
  const why = err instanceof Error ? err.message : String(err);
  return new StartupError(
    'temporal_unreachable',
    `Cannot reach Temporal at ${t.address} (namespace ${t.namespace}): ${why}. Start a Temporal server there, or set TEMPORAL_ADDRESS (with TEMPORAL_API_KEY or TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY for Temporal Cloud), or unset ENGINE to run flows in this process.`,
    { cause: err },
  );
}

const RENDER_KEY = defineSearchAttributeKey(SEARCH_ATTRIBUTES.renderId, SearchAttributeType.KEYWORD);
const TEMPLATE_KEY = defineSearchAttributeKey(SEARCH_ATTRIBUTES.templateId, SearchAttributeType.KEYWORD);

/**
 * With TEMPORAL_SEARCH_ATTRIBUTES=true, the namespace must have Paperlink's search attributes: a
 * start naming one it lacks would fail. Refused at start, saying how to create them. (Where the
 * operator service is not offered, as on Temporal Cloud, it is not checked: create them there.)
 */
export async function requireSearchAttributes(client: Client, namespace: string): Promise<void> {
  let have: Set<string>;
  try {
    const r = await client.connection.operatorService.listSearchAttributes({ namespace });
    have = new Set(Object.keys(r.customAttributes ?? {}));
  } catch (err) {
    if ([7, 12].includes((err as { code?: number }).code ?? -1)) return; // PERMISSION_DENIED, UNIMPLEMENTED
    throw err;
  }
  const missing = Object.values(SEARCH_ATTRIBUTES).filter((n) => !have.has(n));
  if (missing.length)
    throw new ConfigError(
      `TEMPORAL_SEARCH_ATTRIBUTES=true, but namespace "${namespace}" has no search attribute ${missing.join(', ')}: create them (temporal operator search-attribute create --namespace ${namespace} ${missing.map((n) => `--name ${n} --type Keyword`).join(' ')}), or unset TEMPORAL_SEARCH_ATTRIBUTES.`,
    );
}

export async function connectClient(t: TemporalConfig): Promise<Client> {
  const connection = await Connection.connect(connectionOptions(t)).catch((err: unknown) => {
    throw unreachable(t, err);
  });
  const client = new Client({
    connection,
    namespace: t.namespace,
    dataConverter: paperlinkDataConverter(t),
    // with tracing on (src/tracing.ts), a workflow's start carries the caller's trace to the worker
    ...(tracing()
      ? { interceptors: { workflow: [new (temporalInterceptors().OpenTelemetryWorkflowClientInterceptor)()] } }
      : {}),
  });
  if (t.searchAttributes)
    await requireSearchAttributes(client, t.namespace).catch(async (err: unknown) => {
      await connection.close();
      throw err;
    });
  return client;
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
    const type = (e as { type?: string }).type;
    if (e.name === 'ApplicationFailure' && (type === REQUEST_FAILURE || type === PASSING_FAILURE)) {
      const details = (e as { details?: unknown[] }).details;
      const data = details?.[0] as ErrorData | undefined;
      if (data && typeof data.code === 'string') return reviveError(data);
    }
    if (e instanceof PaperlinkError) return e;
  }
  return undefined;
}

/** What names a render from your code: your idempotency key (an order id, a message id), or a render id of your own. */
export type RenderName = { idempotencyKey: string; renderId?: never } | { renderId: string; idempotencyKey?: never };

/** The render id an idempotency key of yours names: the same key, the same render (and workflow, document, link). */
export function renderIdOf(name: RenderName): string {
  const [field, value] =
    name.renderId !== undefined ? ['renderId', name.renderId] : ['idempotencyKey', name.idempotencyKey];
  if (typeof value !== 'string' || value === '' || value.length > 255)
    throw new ValidationError(
      'generateDocument needs an idempotencyKey (or a renderId) of 1 to 255 characters: a retry of yours must find the first render, not start another.',
      [{ field, message: 'must be 1 to 255 characters', code: 'required' }],
    );
  if (name.renderId !== undefined) return name.renderId;
  return renderIdFor('temporal', name.idempotencyKey, '');
}

/**
 * Generates a document as workflow `generate-<render id>` and waits for the result: the same body
 * and result as POST /v1/generate. A request the API would refuse throws that PaperlinkError.
 * Idempotent: the render is named by your `idempotencyKey` (or `renderId`), so a second call with
 * it, while the first runs or after it completed, waits for that execution instead of starting
 * another (a failed one is run again). `signal` stops the wait (the workflow goes on; call again
 * to wait again).
 */
export async function generateDocument(
  client: Client,
  request: { body: unknown; caller?: GenerateInput['caller'] } & RenderName,
  options: StartOptions & {
    signal?: AbortSignal;
    /** Sets the render's search attributes (render, template and document ids); the server must have them (TEMPORAL_SEARCH_ATTRIBUTES). */
    searchAttributes?: boolean;
  } = {},
): Promise<GenerateResult> {
  const input: GenerateInput = {
    body: request.body,
    caller: request.caller ?? { keyId: null, name: 'temporal' },
    renderId: renderIdOf(request),
    ...(options.searchAttributes ? { indexed: true } : {}),
  };
  const templateId = (request.body as { template_id?: unknown } | null)?.template_id;
  const id = workflowId.generate(input.renderId!);
  const wait = async () => {
    try {
      await client.workflow.start<(i: GenerateInput) => Promise<GenerateResult>>('generate', {
        workflowId: id,
        taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        ...(options.searchAttributes
          ? {
              typedSearchAttributes: [
                { key: RENDER_KEY, value: input.renderId! },
                ...(typeof templateId === 'string' ? [{ key: TEMPLATE_KEY, value: templateId.slice(0, 200) }] : []),
              ],
            }
          : {}),
      });
    } catch (err) {
      // it completed before: its result is the answer
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return client.workflow.getHandle<(i: GenerateInput) => Promise<GenerateResult>>(id).result();
  };
  try {
    return await (options.signal ? client.withAbortSignal(options.signal, wait) : wait());
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw requestError(err) ?? err;
    throw err;
  }
}

/** Starts the intake flow of a postcard the API accepted (its `pc_…` id); a second start is a no-op. */
export async function startPostcardIntake(
  client: Client,
  postcardId: string,
  options: StartOptions = {},
): Promise<void> {
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
export async function signalLink(
  client: Client,
  linkId: string,
  signal: 'opened' | 'viewed' | 'changed' = 'changed',
  options: StartOptions = {},
): Promise<void> {
  await client.workflow.signalWithStart<(id: string) => Promise<'expired' | 'revoked'>, []>('linkLifecycle', {
    workflowId: workflowId.link(linkId),
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    args: [linkId],
    signal: LINK[signal],
    signalArgs: [],
  });
}

/** What the link's lifecycle workflow knows of it. */
export function linkStatus(client: Client, linkId: string): Promise<LinkStatusView> {
  return client.workflow.getHandle(workflowId.link(linkId)).query<LinkStatusView, []>(LINK.status);
}

/** Revokes a link now through its lifecycle workflow; returns the link's final state. */
export function expireLink(client: Client, linkId: string, options: ExpireOptions = {}): Promise<LinkState> {
  return client.workflow
    .getHandle(workflowId.link(linkId))
    .executeUpdate<LinkState, [ExpireOptions]>(LINK.expire, { args: [options] });
}

/** Waits for a link's lifecycle to end: `expired` or `revoked`. */
export function linkResult(client: Client, linkId: string): Promise<'expired' | 'revoked'> {
  return client.workflow.getHandle<(id: string) => Promise<'expired' | 'revoked'>>(workflowId.link(linkId)).result();
}

/** The signal each change of a link is told by. */
const SIGNAL_OF: Record<LinkChange, 'opened' | 'viewed' | 'changed'> = {
  opened: 'opened',
  viewed: 'viewed',
  sent: 'changed',
  send_failed: 'changed',
  ended: 'changed',
};

/** Options of the Temporal engine; `marks` is required to keep a failed start or signal for later. */
export interface TemporalEngineOptions {
  onError?: (id: string, err: unknown) => void;
  /** Where the rows Temporal has not been told of are marked (src/engine/marks.ts). */
  marks?: Marks;
  /** A Magic Link's URL, derived again (it is kept out of Temporal's history): generate answers carry it. */
  linkUrl?: (linkId: string) => Promise<string>;
  /** How long one start or signal may take before it counts as failed (and is marked for later). */
  callTimeoutMs?: number;
  /** How long POST /v1/generate waits for its workflow before answering 503 engine_unavailable. */
  resultTimeoutMs?: number;
  /** The largest generate input sent to Temporal, in bytes (its payload limit, 2 MB by default). */
  maxPayloadBytes?: number;
  /** Sets each render's search attributes (TEMPORAL_SEARCH_ATTRIBUTES). */
  searchAttributes?: boolean;
  clock?: Clock;
}

/**
 * ENGINE=temporal: the API hands its flows to Temporal workers. Generation waits for its workflow
 * (the API answers as before); link changes and received postcards start or signal their
 * workflows and do not wait: the database holds the truth. What Temporal may not have heard of
 * is marked in its row (src/engine/marks.ts): made while Temporal was unreachable, or by a process
 * killed before its start. Each process hands the marked rows over at its start and every
 * HANDOVER_MS after, a batch at a time, through an index: nothing per link or postcard held.
 */
/** Temporal's default payload limit (limit.blobSize.error, 2 MiB), less room for the payload's own envelope. */
export const MAX_PAYLOAD_BYTES = 2 * 1024 * 1024 - 4096;

export class TemporalEngine implements Engine {
  readonly kind = 'temporal';
  private timer: NodeJS.Timeout | undefined;
  /** Generate calls still talking to Temporal (their answer may have gone already): stop() lets them end first. */
  private readonly calls = new Set<Promise<unknown>>();
  private readonly onError: (id: string, err: unknown) => void;
  private readonly marks: Marks | undefined;
  private readonly linkUrl: ((linkId: string) => Promise<string>) | undefined;
  private readonly callTimeoutMs: number;
  private readonly resultTimeoutMs: number;
  private readonly maxPayloadBytes: number;
  private readonly searchAttributes: boolean;
  private readonly clock: Clock;
  private handing: Promise<number> | undefined;
  /** How often marked rows are handed over, and how old a mark is before it is (a start or signal under way has its own answer first). */
  static HANDOVER_MS = 15_000;
  /** Rows one handover statement reads at most. */
  static HANDOVER_BATCH = 200;

  constructor(
    /** The client it starts and signals with (its connection closes with the engine). */
    readonly client: Client,
    private readonly taskQueue: string,
    options: TemporalEngineOptions = {},
  ) {
    this.onError = options.onError ?? (() => undefined);
    this.marks = options.marks;
    this.linkUrl = options.linkUrl;
    this.callTimeoutMs = options.callTimeoutMs ?? 10_000;
    this.resultTimeoutMs = options.resultTimeoutMs ?? 60_000;
    this.maxPayloadBytes = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
    this.searchAttributes = options.searchAttributes ?? false;
    this.clock = options.clock ?? systemClock;
  }

  static async connect(t: TemporalConfig, options: TemporalEngineOptions = {}): Promise<TemporalEngine> {
    return new TemporalEngine(await connectClient(t), t.taskQueue, {
      searchAttributes: t.searchAttributes,
      ...options,
    });
  }

  /** Hands over what is marked now, then every HANDOVER_MS; returns at once (the start of a process does not wait for it). */
  start(): void {
    if (this.timer) return;
    const pass = () => void this.handOver().catch((err: unknown) => this.onError('handover', err));
    this.timer = setInterval(pass, TemporalEngine.HANDOVER_MS);
    this.timer.unref();
    pass();
  }

  /**
   * Tells Temporal of every row marked more than HANDOVER_MS ago (at once with `all`): a link's
   * workflow is signalled with start, a postcard's started (one that runs already counts), a batch
   * at a time; each mark goes once its call is answered. How many rows were handed over.
   */
  handOver(all = false): Promise<number> {
    this.handing ??= this.handOverNow(all).finally(() => (this.handing = undefined));
    return this.handing;
  }

  private async handOverNow(all: boolean): Promise<number> {
    const marks = this.marks;
    if (!marks) return 0;
    let handed = 0;
    for (const table of ['magic_links', 'postcards'] as const) {
      const tell =
        table === 'magic_links'
          ? (id: string) => signalLink(this.client, id, 'changed', { taskQueue: this.taskQueue })
          : (id: string) => startPostcardIntake(this.client, id, { taskQueue: this.taskQueue });
      for (;;) {
        const now = this.clock.now();
        const before = all ? now : new Date(now.getTime() - TemporalEngine.HANDOVER_MS);
        const ids = await marks.due(table, before, TemporalEngine.HANDOVER_BATCH);
        // each call's answer after `now`: the marks read (older than `now`) are covered by it
        const told: string[] = [];
        const failed: unknown[] = [];
        await Promise.all(
          ids.map((id) =>
            this.call(() => tell(id)).then(
              () => told.push(id),
              (err: unknown) => failed.push(err),
            ),
          ),
        );
        await marks.clear(table, told, now);
        handed += told.length;
        // Temporal is not answering: the rest waits for the next pass
        if (failed.length > 0)
          throw new Error(`${failed.length} of ${ids.length} could not be handed to Temporal`, { cause: failed[0] });
        if (ids.length < TemporalEngine.HANDOVER_BATCH) break;
      }
    }
    return handed;
  }

  /** One start or signal, given callTimeoutMs. */
  private call(fn: () => Promise<void>): Promise<void> {
    return this.client.withDeadline(Date.now() + this.callTimeoutMs, fn);
  }

  /**
   * Runs the render's workflow (or finds the one running or completed for this render id) and
   * waits for its result, at most `resultTimeoutMs`: then answers 503 engine_unavailable (no
   * worker polls the task queue, or Temporal is down). The workflow is not lost: a retry with the
   * same Idempotency-Key waits for the same execution.
   */
  async generate(input: GenerateInput): Promise<GenerateResult> {
    // the input travels in the workflow's history: one over Temporal's payload limit would fail at
    // its start, and again at every retry (a 503 would send the client round in circles)
    const size = Buffer.byteLength(JSON.stringify(input));
    if (size > this.maxPayloadBytes)
      throw new TooLargeError(
        `This request is ${size} bytes; with ENGINE=temporal a generate request travels in its workflow's history, which Temporal limits to ${this.maxPayloadBytes} bytes. Store large images with the template, send fewer or smaller attachments and appended PDFs, or split the document.`,
      );
    const abort = new AbortController();
    const retry = 'send the same request with the same Idempotency-Key again';
    // a request without an Idempotency-Key names its render here: a retry inside this call finds it
    const renderId = input.renderId ?? newId('rnd');
    // a request the API refuses is that answer; anything else is Temporal's or the worker's trouble
    const work = generateDocument(
      this.client,
      { ...input, renderId },
      { taskQueue: this.taskQueue, signal: abort.signal, searchAttributes: this.searchAttributes },
    ).catch((err: unknown) => {
      if (err instanceof PaperlinkError) throw err;
      throw new UnavailableError(
        'engine_unavailable',
        `The render ${renderId} could not be run on Temporal (${err instanceof Error ? err.message : String(err)}); ${retry}.`,
        5,
      );
    });
    const call: Promise<unknown> = work.catch(() => undefined).finally(() => this.calls.delete(call));
    this.calls.add(call);
    // the client's own retries against an unreachable server do not all stop at the signal: the
    // answer does not wait for them
    const deadline = this.clock.sleep(this.resultTimeoutMs, abort.signal).then(() => {
      throw new UnavailableError(
        'engine_unavailable',
        `The render ${renderId} did not finish within ${Math.round(this.resultTimeoutMs / 1000)} s: no Temporal worker took it up (is \`paperlink worker\` running on task queue ${this.taskQueue}?) or Temporal is unreachable. It stays queued; ${retry} to wait for it.`,
        Math.ceil(this.resultTimeoutMs / 1000),
      );
    });
    try {
      const result = await Promise.race([work, deadline]);
      const link = result.destinations.magic_link;
      if (link && !link.url && this.linkUrl) link.url = await this.linkUrl(link.id);
      return result;
    } finally {
      abort.abort();
      deadline.catch(() => undefined);
    }
  }

  linkChanged(id: string, change: LinkChange): void {
    this.tell('magic_links', id, () => signalLink(this.client, id, SIGNAL_OF[change], { taskQueue: this.taskQueue }));
  }

  postcardReceived(id: string): void {
    this.tell('postcards', id, () => startPostcardIntake(this.client, id, { taskQueue: this.taskQueue }));
  }

  /**
   * Tells Temporal now. A row is made marked (src/engine/marks.ts), and the workflow's read of it
   * clears that; a failed call marks it, for the next handover. So nothing is written when the call
   * goes through, and nothing waits in memory when it does not.
   */
  private tell(table: 'magic_links' | 'postcards', id: string, fn: () => Promise<void>): void {
    const key = table === 'magic_links' ? workflowId.link(id) : workflowId.postcard(id);
    this.call(fn).catch(async (err: unknown) => {
      this.onError(key, err);
      await this.marks?.mark(table, id, this.clock.now()).catch((e: unknown) => this.onError(key, e));
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.handing?.catch(() => undefined);
    // the client's own retries of a call go on after it is cancelled (about 20 s against a server
    // that is down) and throw if the connection closes under them: close it once they have ended
    const close = () => this.client.connection.close();
    if (this.calls.size === 0) return close();
    void Promise.all(this.calls)
      .then(close, close)
      .catch(() => undefined);
  }
}

/** For a worker of your own: the activities to register beside `workflowsPath`. */
export type { Activities };
