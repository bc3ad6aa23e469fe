/**
 * The embedded engine: runs the flows in this process, with the service's clock. Generation runs in
 * the request. A link's lifecycle and a postcard's render wait in the database, not in memory: each
 * row says when it is next due (`wake_at`, ./claims.ts), and the process's runner (src/jobs/runner.ts,
 * which runs every kind of background work) takes what is due in batches as two kinds, `link_step`
 * and `postcard_render`, runs one step of each (src/flows: linkStep, the postcard render), and the
 * step writes when it is due again. So a million links waiting for their deadlines cost an index and nothing else:
 * no flow, no timer, no work at start. A change (a view, a revoke, a send) marks the link due now.
 * Several processes on one database share the work by their claims; a dead one's are swept free.
 */
import { iso, type Clock } from '../clock';
import type { GenerateResult } from '../documents';
import { generateFlow, type GenerateActivities, type GenerateInput } from '../flows/generate';
import { linkStep, linkStepsTogether, type LinkActivities, type LinkBatch } from '../flows/link';
import type { PostcardActivities } from '../flows/postcard';
import { POLICIES, waitMs } from '../flows/policies';
import type { Ports } from '../flows/ports';
import type { Engine } from '.';
import type { Held } from '../jobs/lease';
import type { Claims } from './claims';
import type { Load } from '../jobs/load';
import { Runner, type JobKind } from '../jobs/runner';

/** How many link steps run at once (each is a few queries, and an e-mail now and then). */
export const LINK_STEPS = 50;
/** How many due links one take holds, to step through together (src/flows/link.ts linkStepsTogether). */
export const LINK_BATCH = 500;

/** The runner's names of the engine's two kinds of work. */
const KINDS = ['link_step', 'postcard_render'] as const;

export class EmbeddedEngine implements Engine {
  readonly kind = 'embedded';
  /** Changes being marked on their rows (linkChanged): drain() waits for them, so that it sees what they made due. */
  private readonly marking = new Set<Promise<void>>();
  /** Unexpected render errors in a row, per postcard (for the back-off; gone once it renders). */
  private readonly renderErrors = new Map<string, number>();
  private readonly runner: Runner;
  private readonly renders: JobKind<Held> & { concurrency: number };

  constructor(
    private readonly clock: Clock,
    private readonly activities: LinkActivities & LinkBatch & PostcardActivities & GenerateActivities,
    private readonly claims: Claims,
    private readonly onError: (id: string, err: unknown) => void = () => undefined,
    /** The process's runner (src/jobs/runner.ts); one of its own when not given. */
    runner?: Runner,
  ) {
    this.runner = runner ?? new Runner(clock, onError, (now, running) => claims.sweep(now, running));
    this.runner.add<Held>({
      name: 'link_step',
      concurrency: LINK_STEPS,
      take: (now, n) => claims.due('magic_links', now, n),
      run: (held) => this.linkStep(held),
      runTogether: (held) => this.linkStepsTogether(held),
      together: LINK_BATCH,
      next: () => claims.nextWake('magic_links'),
      backlog: (now) => claims.backlog('magic_links', now),
    });
    this.renders = {
      name: 'postcard_render',
      concurrency: 2,
      whileBusy: 1,
      take: (now, n) => claims.due('postcards', now, n),
      run: (held) => this.render(held),
      next: () => claims.nextWake('postcards'),
      backlog: (now) => claims.backlog('postcards', now),
    };
    this.runner.add(this.renders);
  }

  /** Postcards rendered at once. */
  get postcardConcurrency(): number {
    return this.renders.concurrency;
  }

  set postcardConcurrency(n: number) {
    this.renders.concurrency = n;
  }

  /** How busy requests keep this process: while they do, postcards render one at a time, each after a pause (src/jobs/load.ts). */
  set load(load: Load) {
    this.runner.load = load;
  }

  /** Generation runs in the request: the caller waits for the document either way. */
  generate(input: GenerateInput): Promise<GenerateResult> {
    const ports: Ports<GenerateActivities> = {
      activities: this.activities,
      now: () => this.clock.now().getTime(),
      sleep: (ms) => this.clock.sleep(ms),
      onSignal: () => undefined,
      patched: () => true,
      continueAsNewSuggested: () => false,
      condition: () => Promise.reject(new Error('generate waits for no signal')),
    };
    return generateFlow({ ...ports, startLinkLifecycle: async (id) => this.linkChanged(id) }, input);
  }

  /** A link changed (or was made): its step runs now, here or in whichever process claims it first. */
  linkChanged(id: string): void {
    const marking = this.claims.linkDue(id, this.clock.now()).then(
      () => this.runner.poke('link_step'),
      (err: unknown) => this.onError(`link-${id}`, err),
    );
    this.marking.add(marking);
    void marking.finally(() => this.marking.delete(marking));
  }

  /** A postcard was accepted (its row is due already): render it soon. */
  postcardReceived(): void {
    this.runner.poke('postcard_render');
  }

  /** Starts taking what is due: no work per link or postcard. */
  start(): void {
    this.runner.start();
  }

  /** One step of the link's lifecycle; it is released with its next wake-up (a failed step: due again in a minute). */
  private async linkStep(held: Held): Promise<void> {
    const id = held.id;
    let wake;
    try {
      wake = await linkStep(this.activities, id, () => this.clock.now().getTime());
    } catch (err) {
      this.onError(`link-${id}`, err);
      await this.claims.release('magic_links', [held], new Date(this.clock.now().getTime() + 60_000));
      return;
    }
    await this.claims.release('magic_links', [held], wake.at === null ? null : new Date(wake.at), {
      send_retry_at: wake.retryAt === null ? null : iso(new Date(wake.retryAt)),
    });
  }

  /**
   * Steps through links taken together: those that only expire are expired and released as one
   * batch (10,000 falling due in one second take a few statements per batch of LINK_BATCH, not
   * ten each); the rest are left to linkStep.
   */
  private async linkStepsTogether(held: Held[]): Promise<Held[]> {
    const done = new Set(
      await linkStepsTogether(
        this.activities,
        held.map((h) => h.id),
        () => this.clock.now().getTime(),
      ),
    );
    await this.claims.release(
      'magic_links',
      held.filter((h) => done.has(h.id)),
      null,
      { send_retry_at: null },
    );
    return held.filter((h) => !done.has(h.id));
  }

  /**
   * Renders a received postcard. The render marks it `rendered` or `failed`; an unexpected error
   * (the database down, a full disk) makes it due again after its policy's back-off (POLICIES.postcard_render), so
   * nothing answered 202 is dropped.
   */
  private async render(held: Held): Promise<void> {
    const id = held.id;
    try {
      await this.activities.renderPostcard(id);
    } catch (err) {
      this.onError(`postcard-${id}`, err);
      const n = this.renderErrors.get(id) ?? 0;
      this.renderErrors.set(id, n + 1);
      const wait = waitMs(POLICIES.postcard_render, n + 1);
      await this.claims.release('postcards', [held], new Date(this.clock.now().getTime() + wait));
      return;
    }
    this.renderErrors.delete(id);
    await this.claims.release('postcards', [held], null);
  }

  /**
   * Runs what is due until nothing is (or only what waits for the clock): for tests and tools that
   * drive the engine with a fake clock. Resolves when no step is under way.
   */
  async drain(): Promise<void> {
    await Promise.all(this.marking);
    await this.runner.drain(KINDS);
  }

  /** How many steps and renders are under way now (nothing waits in memory between them). */
  get size(): number {
    return KINDS.reduce((n, k) => n + this.runner.size(k), 0);
  }

  /** Stops taking work (the runner: the service's stops with it); what is under way ends first. The rows keep the rest. */
  async stop(): Promise<void> {
    await Promise.all(this.marking);
    await this.runner.stop();
  }

  /** This process lost its presence: its runner takes nothing, of any kind, until unfence() (src/jobs/runner.ts). */
  fence(): Promise<void> {
    return this.runner.fence();
  }

  /** Back with a new presence: takes work again. */
  unfence(): void {
    this.runner.unfence();
  }
}
