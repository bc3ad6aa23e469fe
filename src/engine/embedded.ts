/**
 * The embedded engine: runs flows in this process, against the service's own activities, with the
 * service's clock. Each flow is keyed by its business id (`link-<id>`); signals reach it by that id.
 * At start, `resumeLinks` re-drives every link whose lifecycle has not ended.
 */
import type { Clock } from '../clock';
import type { GenerateResult } from '../documents';
import { generateFlow, type GenerateActivities, type GenerateInput } from '../flows/generate';
import { linkLifecycle, CHANGED, type LinkActivities } from '../flows/link';
import { postcardIntake, type PostcardActivities } from '../flows/postcard';
import type { Ports } from '../flows/ports';
import type { Engine } from '.';
import { NO_LOAD, type Load } from './load';

interface Running {
  signal(name: string): void;
  abort: AbortController;
  done: Promise<unknown>;
}

export class EmbeddedEngine implements Engine {
  readonly kind = 'embedded';
  private readonly running = new Map<string, Running>();
  private readonly queued = new Set<string>();
  private postcardsRunning = 0;
  private stopped = false;
  /** Lost its presence (fence()): runs nothing until unfence(). */
  private fenced = false;
  /** How many times it was fenced: a claim asked for before a fence is not acted on after it. */
  private epoch = 0;
  /** Postcards rendered at once. */
  postcardConcurrency = 2;
  /** How busy requests keep this process: while they do, postcards render one at a time, each after a pause (./load.ts). */
  load: Load = NO_LOAD;
  private pausing = false;

  constructor(
    private readonly clock: Clock,
    private readonly links: LinkActivities,
    private readonly onError: (id: string, err: unknown) => void = () => undefined,
    private readonly postcards?: PostcardActivities,
    private readonly generator?: GenerateActivities,
    /** Takes a job for this process (several processes on one database); without it every job is this process's. */
    private readonly claims: { link(id: string): Promise<boolean>; postcard(id: string): Promise<boolean> } = {
      link: async () => true,
      postcard: async () => true,
    },
  ) {}
  /** Jobs being claimed now: asked twice meanwhile, claimed once. */
  private readonly claiming = new Set<string>();

  /** Runs `then` once this process holds the job `key` (not when it runs already, or another process holds it). */
  private claimThen(key: string, claim: () => Promise<boolean>, then: () => void): Promise<void> {
    if (this.halted || this.running.has(key) || this.claiming.has(key)) return Promise.resolve();
    this.claiming.add(key);
    const epoch = this.epoch;
    return claim().then(
      (mine) => {
        this.claiming.delete(key);
        if (mine && epoch === this.epoch && !this.halted) then();
      },
      (err: unknown) => {
        this.claiming.delete(key);
        this.onError(key, err);
      },
    );
  }

  /** Generation runs in the request: the caller waits for the document either way. */
  generate(input: GenerateInput): Promise<GenerateResult> {
    if (!this.generator) throw new Error('this engine runs no generate flows');
    const abort = new AbortController();
    const { ports } = this.ports(this.generator, abort);
    return generateFlow({ ...ports, startLinkLifecycle: (id) => this.startLink(id) }, input);
  }

  private ports<A>(activities: A, abort: AbortController): { ports: Ports<A>; signal: (name: string) => void } {
    const handlers = new Map<string, () => void>();
    const waiters = new Set<() => void>();
    const ports: Ports<A> = {
      activities,
      now: () => this.clock.now().getTime(),
      sleep: (ms) => this.clock.sleep(ms, abort.signal),
      onSignal: (name, handler) => handlers.set(name, handler),
      // every embedded run starts from stored state with today's code
      patched: () => true,
      continueAsNewSuggested: () => false,
      condition: (test, timeoutMs) =>
        new Promise<boolean>((resolve, reject) => {
          // a flow that comes back from an activity after stop() must not start a new wait
          if (abort.signal.aborted) return reject(Object.assign(new Error('stopped'), { name: 'AbortError' }));
          if (test()) return resolve(true);
          const timer = new AbortController();
          const stop = () => timer.abort();
          abort.signal.addEventListener('abort', stop, { once: true });
          const check = () => {
            if (!test()) return;
            waiters.delete(check);
            timer.abort();
            resolve(true);
          };
          waiters.add(check);
          const finish = () => abort.signal.removeEventListener('abort', stop);
          if (timeoutMs !== undefined) {
            this.clock.sleep(Math.max(0, timeoutMs), timer.signal).then(
              () => {
                waiters.delete(check);
                finish();
                resolve(false);
              },
              (err: unknown) => {
                finish();
                if (abort.signal.aborted) {
                  waiters.delete(check);
                  reject(err);
                }
              },
            );
          } else {
            abort.signal.addEventListener(
              'abort',
              () => reject(Object.assign(new Error('stopped'), { name: 'AbortError' })),
              { once: true },
            );
          }
        }),
    };
    return {
      ports,
      signal: (name) => {
        handlers.get(name)?.();
        for (const w of [...waiters]) w();
      },
    };
  }

  /** Starts the lifecycle of a link unless it is already running here or in another live process. */
  startLink(id: string): Promise<void> {
    const key = `link-${id}`;
    return this.claimThen(
      key,
      () => this.claims.link(id),
      () => void this.start(key, this.links, (ports) => linkLifecycle(ports, id)),
    );
  }

  /**
   * Queues the intake flow of a received postcard. At most `postcardConcurrency` run at once (they
   * render, which is CPU work); the queue holds only ids, and the database holds the postcards, so
   * a stop drops the queue and the next start picks the postcards up again.
   */
  startPostcard(id: string): Promise<void> {
    this.postcardFlows();
    if (this.queued.has(id)) return Promise.resolve();
    return this.claimThen(
      `postcard-${id}`,
      () => this.claims.postcard(id),
      () => this.enqueue(id),
    );
  }

  private postcardFlows(): PostcardActivities {
    if (!this.postcards) throw new Error('this engine runs no postcard flows');
    return this.postcards;
  }

  /** Queues a postcard this process holds, unless it is queued or running already. */
  private enqueue(id: string): void {
    if (this.halted || this.queued.has(id) || this.running.has(`postcard-${id}`)) return;
    this.queued.add(id);
    this.pump();
  }

  private pump(): void {
    while (!this.halted && this.postcardsRunning < this.postcardConcurrency && this.queued.size) {
      if (this.load.busy()) return this.pauseThenRender();
      this.renderNext();
    }
  }

  /** While busy: once nothing renders, one render after a pause, whatever the load then. */
  private pauseThenRender(): void {
    if (this.pausing || this.postcardsRunning > 0) return; // the running one pumps when it ends
    this.pausing = true;
    void this.load.pause().then(() => {
      this.pausing = false;
      if (!this.halted && this.queued.size && this.postcardsRunning === 0) this.renderNext();
      this.pump();
    });
  }

  private renderNext(): void {
    const id = this.queued.values().next().value as string;
    this.queued.delete(id);
    this.postcardsRunning++;
    const done = this.start(`postcard-${id}`, this.postcardFlows(), (ports) =>
      postcardIntake(ports, id, (err) => this.onError(`postcard-${id}`, err)),
    );
    void done.finally(() => {
      this.postcardsRunning--;
      this.pump();
    });
  }

  private start<A>(key: string, activities: A, flow: (ports: Ports<A>) => Promise<unknown>): Promise<unknown> {
    const existing = this.running.get(key);
    if (existing) return existing.done;
    if (this.halted) return Promise.resolve();
    const abort = new AbortController();
    const { ports, signal } = this.ports(activities, abort);
    const entry: Running = { signal, abort, done: Promise.resolve() };
    this.running.set(key, entry);
    entry.done = flow(ports)
      .then(
        () => undefined,
        (err: unknown) => {
          if (!abort.signal.aborted) this.onError(key, err);
        },
      )
      .finally(() => {
        if (this.running.get(key) === entry) this.running.delete(key);
      });
    return entry.done;
  }

  /** Tells a link's flow that the link changed, starting it first if it is not running. */
  linkChanged(id: string): void {
    const running = this.running.get(`link-${id}`);
    if (running) running.signal(CHANGED);
    else void this.startLink(id);
  }

  /** A postcard this process just accepted: claimed for it in the same write (Postcards.owner), so it is queued as it is. */
  postcardReceived(id: string): void {
    this.postcardFlows();
    this.enqueue(id);
  }

  /** Re-drives the flow of each link and postcard that has not ended. */
  async resume(work: { links: string[]; postcards: string[] }): Promise<void> {
    await Promise.all([
      ...work.links.map((id) => this.startLink(id)),
      ...work.postcards.map((id) => this.startPostcard(id)),
    ]);
  }

  /** How many flows are running or queued, e.g. for tests and /healthz. */
  get size(): number {
    return this.running.size + this.queued.size;
  }

  private get halted(): boolean {
    return this.stopped || this.fenced;
  }

  /** Stops every flow; their state is in the database, so the next start resumes them. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.fence();
  }

  /**
   * This process lost its presence, so other processes adopt its work: stops every flow now and
   * starts none until unfence() (an activity under way ends; every write a flow makes is
   * conditional on the state it read, so one that ends after another process took over changes
   * nothing). Resolves when every flow has stopped.
   */
  async fence(): Promise<void> {
    this.fenced = true;
    this.epoch++;
    this.queued.clear();
    const all = [...this.running.values()];
    for (const r of all) r.abort.abort();
    await Promise.all(all.map((r) => r.done));
  }

  /** Back with a new presence: flows may start again (resume() re-drives those this process claims). */
  unfence(): void {
    this.fenced = false;
  }
}
