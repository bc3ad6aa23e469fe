/**
 * One runner per process for every kind of background work: a link's lifecycle step and a
 * postcard's render (the embedded engine, src/engine/embedded.ts), a webhook delivery's attempt
 * (src/webhooks), and the service's housekeeping (src/service.ts). Each kind says how to take its
 * due work (under a lease of src/jobs/lease.ts: the take bumps the epoch, the final write checks
 * it), how to run one piece, how many may run at once, and when its next piece is due; its retry
 * policy is in src/flows/policies.ts. The runner does the rest the same way for all: one loop that
 * sleeps until the next piece is due (POLL_MS at most, to see what other processes made due) or a
 * poke, the sweep that frees dead processes' leases, yielding to requests, drain() for tests and
 * tools that drive a fake clock, fence() while the process has lost its presence, and a stop that
 * lets what runs finish. Work waits in the database, never here: a stop or a crash loses none.
 */
import type { Clock } from '../clock';
import { NO_LOAD, type Load } from './load';
import { watchJobs, type JobState } from '../metrics';

/** The longest the runner sleeps: how soon it sees what another process made due, and how often it sweeps. */
export const POLL_MS = 5_000;

/** A piece of work as taken: its id is unique within its kind. */
export interface Job {
  readonly id: string;
}

/** Work due and not taken: how much, and since when the oldest piece is due. */
export interface Backlog {
  due: number;
  oldest: Date | undefined;
}

/** A backlog as a count and the oldest due time read it (`count(*)` is text on PostgreSQL; no rows: no time). */
export function backlogOf(row: { n: number | string; oldest: string | null } | undefined): Backlog {
  return { due: Number(row?.n ?? 0), oldest: row?.oldest ? new Date(row.oldest) : undefined };
}

export interface JobKind<T extends Job = Job> {
  readonly name: string;
  /** How many may run at once in this process, one by one (a batch run together counts up to `together`). */
  readonly concurrency: number;
  /**
   * Whether and how it yields to requests (work nobody waits for): while they keep the process
   * busy (load.ts), at most this many run at once, and each take waits for a pause
   * first; nothing starves, as a take follows every pause whatever the load. Not set: it does not
   * yield.
   */
  readonly whileBusy?: number;
  /** What comes before a take (a webhook event's fan-out into deliveries): whether there is more of it. */
  prepare?(): Promise<boolean>;
  /**
   * Takes up to `limit` pieces due at `now`, each under its lease; never one of `running` (what
   * runs here now: its lease may have run out while it runs, and a take would fence its write out).
   */
  take(now: Date, limit: number, running: ReadonlySet<string>): Promise<T[]>;
  /** Runs one piece: its outcome is written under the lease it was taken with. */
  run(job: T): Promise<void>;
  /**
   * Runs what one take took together, where that saves round trips (links falling due in a burst:
   * one read, one transaction and one release for the lot): the pieces it leaves are run one by
   * one, `concurrency` at a time. If it fails, all of them are (each starts from its stored state).
   */
  runTogether?(jobs: T[]): Promise<T[]>;
  /** With runTogether: how many pieces one take may hold (default `concurrency`). */
  readonly together?: number;
  /** When its next piece is due, if it can say (the runner sleeps until then, or POLL_MS). */
  next?(): Promise<Date | undefined>;
  /** How many pieces are due at `now` that no process runs, and since when the oldest is (the metrics' gauges). */
  backlog?(now: Date): Promise<Backlog>;
}

interface Entry {
  readonly kind: JobKind<Job>;
  /** What runs now, by id. */
  readonly running: Map<string, Promise<void>>;
  /** Whether the next pass looks for this kind's work (it was poked). */
  wanted: boolean;
  /** When a pass last looked (the service's clock, ms): every kind is looked at every POLL_MS at least, pokes or not. */
  lastLook: number;
  /** When its next piece is due, as it said when the runner last asked (ms; Infinity: not known). */
  nextAt: number;
  /** Whether the last pass had room for it and took without error (if not, a run's end pokes, not the clock). */
  room: boolean;
  pausing: boolean;
  pausedOnce: boolean;
  /** Pieces running one by one now, and those waiting for one of the `concurrency` places. */
  alone: number;
  readonly waiting: (() => void)[];
}

export class Runner {
  /** How busy requests keep this process (what kinds with `whileBusy` yield to). */
  load: Load = NO_LOAD;
  private readonly entries = new Map<string, Entry>();
  private stopped = false;
  /** Lost its presence (fence()): takes nothing until unfence(). */
  private fenced = false;
  private started = false;
  private loop: Promise<void> = Promise.resolve();
  /** Ends the sleep (a poke). */
  private sleeping: AbortController | undefined;
  private poked = false;
  /** One pass at a time (the loop's and drain()'s). */
  private passing: Promise<boolean> = Promise.resolve(false);
  private lastSweep = -Infinity;
  private unwatch = () => undefined as void;

  constructor(
    private readonly clock: Clock,
    private readonly onError: (where: string, err: unknown) => void = () => undefined,
    /** Frees dead processes' leases (and this one's on work it does not run): how many; every POLL_MS. */
    private readonly sweep?: (now: Date, running: ReadonlySet<string>) => Promise<number>,
  ) {}

  /** Adds a kind of work (before start()). */
  add<T extends Job>(kind: JobKind<T>): void {
    if (this.entries.has(kind.name)) throw new Error(`a job kind named ${kind.name} runs already`);
    this.entries.set(kind.name, {
      kind,
      running: new Map(),
      wanted: true,
      lastLook: -Infinity,
      nextAt: Infinity,
      room: true,
      pausing: false,
      pausedOnce: false,
      alone: 0,
      waiting: [],
    });
  }

  /** Starts the loop (once); the metrics read its kinds from then until the stop. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.unwatch = watchJobs(() => this.state());
    this.loop = this.run();
  }

  /** Each kind: how many run here, how many are due, and how long the oldest due has waited. */
  private state(): Promise<JobState[]> {
    const now = this.clock.now();
    return Promise.all(
      [...this.entries].map(async ([kind, e]) => {
        const backlog = await e.kind.backlog?.(now);
        return {
          kind,
          running: e.running.size,
          due: backlog?.due,
          oldestDueSeconds:
            backlog && (backlog.oldest ? Math.max(0, now.getTime() - backlog.oldest.getTime()) / 1000 : 0),
        };
      }),
    );
  }

  /** Something of `kind` (of every kind when not said) may be due now: the loop looks at once. */
  poke(kind?: string): void {
    for (const [name, e] of this.entries) if (kind === undefined || name === kind) e.wanted = true;
    this.poked = true;
    this.sleeping?.abort();
  }

  /** How many pieces run now (of `kind`, or of all). */
  size(kind?: string): number {
    let n = 0;
    for (const [name, e] of this.entries) if (kind === undefined || name === kind) n += e.running.size;
    return n;
  }

  private get halted(): boolean {
    return this.stopped || this.fenced;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.poked = false;
      let more = false;
      if (!this.fenced) {
        try {
          more = await this.pass();
        } catch (err) {
          this.onError('runner', err);
        }
      }
      if (this.stopped) break;
      if (more || this.poked) {
        // the next batch after the requests that arrived meanwhile (setImmediate runs after I/O)
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const ms = this.fenced ? POLL_MS : await this.untilNext().catch(() => POLL_MS);
      if (this.poked || this.stopped || ms <= 0) continue;
      // the clock wakes it for what is due then (pass(): what is due, and what was not looked at for POLL_MS)
      this.sleeping = new AbortController();
      await this.clock.sleep(ms, this.sleeping.signal).catch(() => undefined);
      this.sleeping = undefined;
    }
  }

  /**
   * How long until a kind is due to be looked at: its next piece's time (of the kinds the last pass
   * had room for), or POLL_MS after it was last looked at, whichever is sooner.
   */
  private async untilNext(): Promise<number> {
    const entries = [...this.entries.values()].filter((e) => e.room);
    const next = await Promise.all(entries.map((e) => (e.kind.next ? e.kind.next() : Promise.resolve(undefined))));
    entries.forEach((e, i) => (e.nextAt = next[i]?.getTime() ?? Infinity));
    const at = Math.min(Infinity, ...entries.map((e) => Math.min(e.nextAt, e.lastLook + POLL_MS)));
    return Math.min(POLL_MS, Math.max(0, at - this.clock.now().getTime()));
  }

  /** Whether a pass at `now` looks at `e`: poked, due by its own word, or not looked at for POLL_MS. */
  private looksAt(e: Entry, now: number): boolean {
    return e.wanted || e.nextAt <= now || now - e.lastLook >= POLL_MS;
  }

  /**
   * Takes and starts what is due and has room (of `only`'s kinds, when said); whether there may
   * be more. What it looks at, and the `now` it takes with, are decided at its start: a poke (or a
   * drain) after it began is for the next pass. One kind's error is reported and the others go on.
   */
  private pass(only?: ReadonlySet<string>, draining = false): Promise<boolean> {
    const pass = this.passing.then(async () => {
      if (this.halted) return false;
      const now = this.clock.now();
      const t = now.getTime();
      const visit = [...this.entries].filter(([name, e]) => (only ? only.has(name) : this.looksAt(e, t)));
      for (const [, e] of visit) {
        e.wanted = false;
        e.lastLook = t;
        e.nextAt = Infinity;
      }
      let more = false;
      if (this.sweep && t - this.lastSweep >= POLL_MS) {
        this.lastSweep = t;
        const running = new Set<string>();
        for (const e of this.entries.values()) for (const id of e.running.keys()) running.add(id);
        // what it freed is due now: the next pass looks for it
        if ((await this.sweep(now, running)) > 0) {
          for (const e of this.entries.values()) e.wanted = true;
          more = true;
        }
      }
      // each kind on its own: one's slow preparation (a webhook fan-out) does not hold up another's take
      const wanted = await Promise.all(visit.map(([name, e]) => this.visitKind(name, e, now, draining)));
      return more || wanted.includes(true);
    });
    this.passing = pass.catch(() => false);
    return pass;
  }

  /** Takes and starts what is due of one kind and has room: whether it may have more. */
  private async visitKind(name: string, e: Entry, now: Date, draining: boolean): Promise<boolean> {
    if (this.halted) return false;
    const room = this.room(e, draining);
    e.room = room > 0;
    if (room === 0) return false; // a running one pokes when it ends
    try {
      // what comes before a take waits as the take does (for room, for the load)
      if (e.kind.prepare && (await e.kind.prepare())) e.wanted = true;
      const jobs = this.halted ? [] : await e.kind.take(now, room, new Set(e.running.keys()));
      const left =
        e.kind.runTogether && jobs.length > 1
          ? Promise.resolve(jobs)
              .then((taken) => e.kind.runTogether!(taken))
              .then(
                (rest) => new Set(rest),
                (err: unknown) => {
                  this.onError(name, err);
                  return new Set(jobs);
                },
              )
          : undefined;
      for (const job of jobs) this.launch(name, e, job, left);
      // a full batch: there may be more
      if (jobs.length === room) e.wanted = true;
    } catch (err) {
      // a drain says so; the loop does not look at it again before POLL_MS (or a poke): a
      // database that fails is not hammered
      if (draining) throw err;
      e.room = false;
      e.wanted = false;
      this.onError(name, err);
    }
    return e.wanted;
  }

  /** Pieces of `e` to take now: its free slots, or while requests keep the process busy (a kind that yields), its share after a pause. */
  private room(e: Entry, draining: boolean): number {
    const free = (e.kind.together ?? e.kind.concurrency) - e.running.size;
    if (free <= 0) return 0;
    if (e.kind.whileBusy === undefined || draining || !this.load.busy()) return free;
    const share = Math.min(free, e.kind.whileBusy - e.running.size);
    if (share <= 0) return 0; // a running one pokes when it ends
    if (e.pausedOnce) {
      e.pausedOnce = false;
      return share;
    }
    if (!e.pausing) {
      e.pausing = true;
      void this.load.pause().then(() => {
        e.pausing = false;
        e.pausedOnce = true;
        this.poke(e.kind.name);
      });
    }
    return 0;
  }

  /** Runs `job`, once what ran it together with others (`left`) has left it to run alone, if it did. */
  private launch(name: string, e: Entry, job: Job, left?: Promise<ReadonlySet<Job>>): void {
    const run = (left ?? Promise.resolve(undefined)).then((rest) =>
      !rest || rest.has(job) ? this.alone(e, job) : undefined,
    );
    const done = run.then(
      () => undefined,
      (err: unknown) => this.onError(job.id === name ? name : `${name} ${job.id}`, err),
    );
    e.running.set(job.id, done);
    void done.finally(() => {
      e.running.delete(job.id);
      this.poke(name);
    });
  }

  /** Runs `job` on its own, in one of its kind's `concurrency` places (waiting for one when a batch left many). */
  private async alone(e: Entry, job: Job): Promise<void> {
    if (e.alone >= e.kind.concurrency) await new Promise<void>((resolve) => e.waiting.push(resolve));
    else e.alone++;
    try {
      await e.kind.run(job);
    } finally {
      // the place goes to the next waiting, or is freed
      const next = e.waiting.shift();
      if (next) next();
      else e.alone--;
    }
  }

  /**
   * Runs what is due of `kinds` (of every kind when not said) until nothing is, or only what
   * waits for the clock or for another process: for tests and tools that drive a fake clock.
   * Never yields to requests. Resolves when none of it runs.
   */
  async drain(kinds?: readonly string[]): Promise<void> {
    const names = new Set(kinds ?? this.entries.keys());
    for (;;) {
      const more = await this.pass(names, true);
      const running = this.runs(names);
      if (running.length) {
        await Promise.all(running);
        continue;
      }
      if (!more || this.halted) return;
    }
  }

  /** The runs under way of the kinds `names` (of every kind when not said). */
  private runs(names?: ReadonlySet<string>): Promise<void>[] {
    return [...this.entries].filter(([name]) => !names || names.has(name)).flatMap(([, e]) => [...e.running.values()]);
  }

  private async settle(): Promise<void> {
    await this.passing;
    await Promise.all(this.runs());
  }

  /**
   * This process lost its presence, so other processes take its work: it takes nothing until
   * unfence(). Resolves when what runs has ended (each final write is fenced by its lease, so one
   * that ends after another process took the work over changes nothing).
   */
  async fence(): Promise<void> {
    this.fenced = true;
    await this.settle();
  }

  /** Back with a new presence: takes work again. */
  unfence(): void {
    this.fenced = false;
    this.lastSweep = -Infinity;
    this.poke();
  }

  /** Stops taking work; what runs ends first (each piece is short). The database keeps the rest. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unwatch();
    this.sleeping?.abort();
    await this.loop;
    await this.settle();
  }
}

/**
 * A kind of work on a timetable of this process's own: due `everyMs` after the start, then `everyMs`
 * after each run began, in wall time (upkeep, not a deadline: what a run deletes is chosen by the service's
 * clock). Nothing to lease: every process runs it, and what one run deletes another finds gone.
 * One run at a time: a run that is due during a long one waits for it to end.
 */
export function periodic(
  name: string,
  everyMs: number,
  work: () => Promise<unknown>,
  wall: () => number = Date.now,
): JobKind {
  let dueAt = wall() + everyMs;
  return {
    name,
    concurrency: 1,
    take: () => {
      if (wall() < dueAt) return Promise.resolve([]);
      dueAt = wall() + everyMs;
      return Promise.resolve([{ id: name }]);
    },
    run: async () => {
      await work();
    },
  };
}
