import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';

/**
 * Builds Temporal workflow histories by hand, as the server's History message, for
 * `Worker.runReplayHistory`. Each method appends what the server would record;
 * the workflow's commands must match them on replay, so a changed workflow fails with a
 * determinism error. No server is needed.
 */
const bytes = (s: string) => Buffer.from(s, 'utf8');
const payload = (v: unknown) => ({ metadata: { encoding: bytes('json/plain') }, data: bytes(JSON.stringify(v)) });
const seconds = (s: number) => ({ seconds: s });
const payloads = (...vs: unknown[]) => ({ payloads: vs.map(payload) });

type Event = Record<string, unknown> & { eventId: number; eventType: string };

export class HistoryBuilder {
  readonly events: Event[] = [];
  private now: number;
  private lastCompleted = 0;
  private activitySeq = 0;
  private timerSeq = 0;
  private childSeq = 0;
  private firstTask = true;
  private readonly patches = new Set<string>();
  private readonly activities = new Map<string, { scheduled: number; started: number }>();
  private readonly timers = new Map<string, number>();

  constructor(
    readonly workflowType: string,
    args: unknown[],
    start: string | number = '2026-11-22T10:00:00Z',
    readonly taskQueue = 'paperlink',
  ) {
    this.now = typeof start === 'number' ? start : Date.parse(start);
    this.add('WORKFLOW_EXECUTION_STARTED', 'workflowExecutionStartedEventAttributes', {
      workflowType: { name: workflowType },
      taskQueue: { name: taskQueue, kind: 'TASK_QUEUE_KIND_NORMAL' },
      input: payloads(...args),
      workflowTaskTimeout: seconds(10),
      originalExecutionRunId: 'run-1',
      firstExecutionRunId: 'run-1',
      attempt: 1,
    });
  }

  private add(type: string, key: string, attributes: Record<string, unknown>): number {
    const eventId = this.events.length + 1;
    this.events.push({
      eventId,
      eventTime: { seconds: Math.floor(this.now / 1000), nanos: (this.now % 1000) * 1e6 },
      eventType: `EVENT_TYPE_${type}`,
      [key]: attributes,
    });
    return eventId;
  }

  /** Moves the history's clock on (what `Date.now()` in the workflow sees at the next task). */
  advance(ms: number): this {
    this.now += ms;
    return this;
  }

  /**
   * A workflow task: scheduled, started, completed; the commands it produced follow.
   * `suggestContinueAsNew`: the server tells the workflow its history has grown long.
   */
  task(options: { suggestContinueAsNew?: boolean } = {}): this {
    const scheduled = this.add('WORKFLOW_TASK_SCHEDULED', 'workflowTaskScheduledEventAttributes', {
      taskQueue: { name: this.taskQueue },
      startToCloseTimeout: seconds(10),
      attempt: 1,
    });
    const started = this.add('WORKFLOW_TASK_STARTED', 'workflowTaskStartedEventAttributes', {
      scheduledEventId: scheduled,
      identity: 'test',
      ...(options.suggestContinueAsNew ? { suggestContinueAsNew: true } : {}),
    });
    // the first completed task carries the core's flags; without them the core skips some checks
    const sdkMetadata = this.firstTask ? { coreUsedFlags: [1, 2, 3] } : {};
    this.firstTask = false;
    this.lastCompleted = this.add('WORKFLOW_TASK_COMPLETED', 'workflowTaskCompletedEventAttributes', {
      scheduledEventId: scheduled,
      startedEventId: started,
      identity: 'test',
      sdkMetadata,
    });
    return this;
  }

  /** The workflow scheduled an activity; returns its id for `completeActivity`/`failActivity`. */
  activity(name: string, ...args: unknown[]): string {
    const id = String(++this.activitySeq);
    const scheduled = this.add('ACTIVITY_TASK_SCHEDULED', 'activityTaskScheduledEventAttributes', {
      activityId: id,
      activityType: { name },
      taskQueue: { name: this.taskQueue },
      input: payloads(...args),
      startToCloseTimeout: seconds(60),
      workflowTaskCompletedEventId: this.lastCompleted,
    });
    this.activities.set(id, { scheduled, started: 0 });
    return id;
  }

  completeActivity(id: string, result: unknown): this {
    const a = this.activities.get(id)!;
    a.started = this.add('ACTIVITY_TASK_STARTED', 'activityTaskStartedEventAttributes', {
      scheduledEventId: a.scheduled,
      attempt: 1,
    });
    this.add('ACTIVITY_TASK_COMPLETED', 'activityTaskCompletedEventAttributes', {
      scheduledEventId: a.scheduled,
      startedEventId: a.started,
      result: result === undefined ? undefined : payloads(result),
    });
    return this;
  }

  failActivity(id: string, message: string): this {
    const a = this.activities.get(id)!;
    a.started = this.add('ACTIVITY_TASK_STARTED', 'activityTaskStartedEventAttributes', {
      scheduledEventId: a.scheduled,
      attempt: 5,
    });
    this.add('ACTIVITY_TASK_FAILED', 'activityTaskFailedEventAttributes', {
      scheduledEventId: a.scheduled,
      startedEventId: a.started,
      failure: { message, applicationFailureInfo: { type: 'Error', nonRetryable: false } },
      retryState: 'RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED',
    });
    return this;
  }

  /**
   * The workflow called `patched(id)` for the first time in a run recorded with that change: the
   * SDK's `core_patch` marker, then its update of the TemporalChangeVersion search attribute (every
   * patch of the run so far), as the SDK records them.
   */
  patch(id: string): this {
    this.add('MARKER_RECORDED', 'markerRecordedEventAttributes', {
      markerName: 'core_patch',
      details: { 'patch-data': payloads({ id, deprecated: false }) },
      workflowTaskCompletedEventId: this.lastCompleted,
    });
    this.patches.add(id);
    const versions = {
      metadata: { encoding: bytes('json/plain'), type: bytes('KeywordList') },
      data: bytes(JSON.stringify([...this.patches].sort())),
    };
    this.add('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'upsertWorkflowSearchAttributesEventAttributes', {
      workflowTaskCompletedEventId: this.lastCompleted,
      searchAttributes: { indexedFields: { TemporalChangeVersion: versions } },
    });
    return this;
  }

  /** The workflow upserted Keyword search attributes (`upsertSearchAttributes`). */
  upsertKeywords(fields: Record<string, string>): this {
    const indexedFields: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(fields))
      indexedFields[name] = {
        metadata: { encoding: bytes('json/plain'), type: bytes('Keyword') },
        data: bytes(JSON.stringify(value)),
      };
    this.add('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'upsertWorkflowSearchAttributesEventAttributes', {
      workflowTaskCompletedEventId: this.lastCompleted,
      searchAttributes: { indexedFields },
    });
    return this;
  }

  /** The run ended by continuing as a new run of the same workflow with these arguments. */
  continueAsNew(args: unknown[]): this {
    this.add('WORKFLOW_EXECUTION_CONTINUED_AS_NEW', 'workflowExecutionContinuedAsNewEventAttributes', {
      newExecutionRunId: 'run-2',
      workflowType: { name: this.workflowType },
      taskQueue: { name: this.taskQueue, kind: 'TASK_QUEUE_KIND_NORMAL' },
      input: payloads(...args),
      workflowTaskTimeout: seconds(10),
      workflowTaskCompletedEventId: this.lastCompleted,
      initiator: 'CONTINUE_AS_NEW_INITIATOR_WORKFLOW',
    });
    return this;
  }

  /** One activity scheduled by the last task and completed: the common case. */
  call(name: string, args: unknown[], result: unknown): this {
    return this.completeActivity(this.activity(name, ...args), result);
  }

  /** The workflow started a timer; returns its id. */
  timer(ms: number): string {
    const id = String(++this.timerSeq);
    this.timers.set(
      id,
      this.add('TIMER_STARTED', 'timerStartedEventAttributes', {
        timerId: id,
        startToFireTimeout: seconds(Math.ceil(ms / 1000)),
        workflowTaskCompletedEventId: this.lastCompleted,
      }),
    );
    return id;
  }

  fireTimer(id: string): this {
    this.add('TIMER_FIRED', 'timerFiredEventAttributes', { timerId: id, startedEventId: this.timers.get(id) });
    return this;
  }

  /** The workflow cancelled a timer (a condition came true before its timeout). */
  cancelTimer(id: string): this {
    this.add('TIMER_CANCELED', 'timerCanceledEventAttributes', {
      timerId: id,
      startedEventId: this.timers.get(id),
      workflowTaskCompletedEventId: this.lastCompleted,
      identity: 'test',
    });
    return this;
  }

  signal(name: string, ...args: unknown[]): this {
    this.add('WORKFLOW_EXECUTION_SIGNALED', 'workflowExecutionSignaledEventAttributes', {
      signalName: name,
      input: payloads(...args),
      identity: 'test',
    });
    return this;
  }

  /** The workflow started a child; the server reports it started. */
  child(workflowType: string, workflowId: string, args: unknown[]): this {
    this.childSeq++;
    const initiated = this.add(
      'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
      'startChildWorkflowExecutionInitiatedEventAttributes',
      {
        namespace: 'default',
        workflowId,
        workflowType: { name: workflowType },
        taskQueue: { name: this.taskQueue },
        input: payloads(...args),
        parentClosePolicy: 'PARENT_CLOSE_POLICY_ABANDON',
        workflowTaskCompletedEventId: this.lastCompleted,
      },
    );
    this.add('CHILD_WORKFLOW_EXECUTION_STARTED', 'childWorkflowExecutionStartedEventAttributes', {
      namespace: 'default',
      initiatedEventId: initiated,
      workflowExecution: { workflowId, runId: `child-run-${this.childSeq}` },
      workflowType: { name: workflowType },
    });
    return this;
  }

  /** The workflow accepted an update (in the task just completed); returns the accepted event's id. */
  acceptUpdate(name: string, updateId: string, ...args: unknown[]): number {
    return this.add('WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'workflowExecutionUpdateAcceptedEventAttributes', {
      protocolInstanceId: updateId,
      acceptedRequestMessageId: `${updateId}/request`,
      acceptedRequestSequencingEventId: this.lastCompleted - 2,
      acceptedRequest: { meta: { updateId, identity: 'test' }, input: { name, args: payloads(...args) } },
    });
  }

  /** The update's handler returned (in the task just completed). */
  completeUpdate(updateId: string, acceptedEventId: number, result: unknown): this {
    this.add('WORKFLOW_EXECUTION_UPDATE_COMPLETED', 'workflowExecutionUpdateCompletedEventAttributes', {
      meta: { updateId },
      acceptedEventId,
      outcome: { success: payloads(result) },
    });
    return this;
  }

  complete(result: unknown): this {
    this.add('WORKFLOW_EXECUTION_COMPLETED', 'workflowExecutionCompletedEventAttributes', {
      result: payloads(result),
      workflowTaskCompletedEventId: this.lastCompleted,
    });
    return this;
  }

  toHistory(): temporal.api.history.v1.History {
    return temporal.api.history.v1.History.fromObject({ events: this.events });
  }

  /** The history as the JSON file `temporal workflow show --output json` writes. */
  toJSON(): string {
    return historyToJSON(this.toHistory());
  }
}
