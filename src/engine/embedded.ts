/**
 * The embedded engine: runs the flows in this process, with the service's clock. Generation runs in
 * the request. A link's lifecycle and a postcard's render wait in the database, not in memory: each
 * row says when it is next due (`wake_at`, ./claims.ts), and one scheduler per process takes what is
 * due in batches, runs one step of each (src/flows: linkStep, the postcard render), and writes when
 * it is due again. So a million links waiting for their deadlines cost an index and nothing else:
 * no flow, no timer, no work at start. A change (a view, a revoke, a send) marks the link due now.
 * Several processes on one database share the work by their claims; a dead one's are swept free.
 */
import { iso, type Clock } from '../clock';
import type { GenerateResult } from '../documents';
import { generateFlow, type GenerateActivities, type GenerateInput } from '../flows/generate';
import { linkStep, type LinkActivities } from '../flows/link';
import type { PostcardActivities } from '../flows/postcard';
import { POLICIES, waitMs } from '../flows/policies';
import type { Ports } from '../flows/ports';
import type { Engine } from '.';
import type { Held } from '../jobs/lease';
import type { Claims } from './claims';
import { NO_LOAD, type Load } from './load';

/** How many link steps run at once (each is a few queries, and an e-mail now and then). */
export const LINK_STEPS = 50;
/** The longest the scheduler sleeps: how soon it sees what another process made due, and how often it sweeps. */
export const POLL_MS = 5_000;

type Kind = 'links' | 'postcards';

export class EmbeddedEngine implements Engine {
  readonly kind = 'embedded';
  /** Postcards rendered at once. */
  postcardConcurrency = 2;
  /** How busy requests keep this process: while they do, postcards render one at a time, each after a pause (./load.ts). */
  load: Load = NO_LOAD;
  /** Changes being marked on their rows (linkChanged): drain() waits for them, so that it sees what they made due. */
  private readonly marking = new Set<Promise<void>>();
  /** The steps under way here, by row id. */
  private readonly steps = new Map<string, Promise<void>>();
  private postcardsRunning = 0;
  /** Unexpected render errors in a row, per postcard (for the back-off; gone once it renders). */
  private readonly renderErrors = new Map<string, number>();
  private pausing = false;
  private pausedOnce = false;
  private stopped = false;
  /** Lost its presence (fence()): runs nothing until unfence(). */
  private fenced = false;
  private started = false;
  private loop: Promise<void> = Promise.resolve();
  /** Ends the scheduler's sleep (a poke). */
  private sleeping: AbortController | undefined;
  private poked = false;
  /** What the next pass looks for: what was poked for (a received postcard asks no link query), or both when the clock woke it. */
  private wanted: Record<Kind, boolean> = { links: true, postcards: true };
  /** One pass at a time (the loop's and drain()'s). */
  private passing: Promise<boolean> = Promise.resolve(false);
  private lastSweep = -Infinity;
  /** Whether the last pass had room for a link step, a render: if not, a step's end (or a pause's) pokes the scheduler, not the clock. */
  private room = { links: true, postcards: true };

  constructor(
    private readonly clock: Clock,
    private readonly activities: LinkActivities & PostcardActivities & GenerateActivities,
    private readonly claims: Claims,
    private readonly onError: (id: string, err: unknown) => void = () => undefined,
  ) {}

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
      () => this.poke('links'),
      (err: unknown) => this.onError(`link-${id}`, err),
    );
    this.marking.add(marking);
    void marking.finally(() => this.marking.delete(marking));
  }

  /** A postcard was accepted (its row is due already): render it soon. */
  postcardReceived(): void {
    this.poke('postcards');
  }

  /** Starts the scheduler: no work per link or postcard, only what is due is taken. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.loop = this.run();
  }

  /** Wakes the scheduler now, to look for rows of `kind` (of both kinds when not said). */
  private poke(kind?: Kind): void {
    if (kind) this.wanted[kind] = true;
    else this.wanted = { links: true, postcards: true };
    this.poked = true;
    this.sleeping?.abort();
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
          this.onError('scheduler', err);
        }
      }
      if (more || this.poked || this.stopped) continue;
      const ms = this.fenced ? POLL_MS : await this.untilNext().catch(() => POLL_MS);
      if (this.poked || this.stopped) continue;
      if (ms > 0) {
        this.sleeping = new AbortController();
        await this.clock.sleep(ms, this.sleeping.signal).catch(() => undefined);
        this.sleeping = undefined;
      }
      // the clock woke it: what is due may be of either kind
      if (!this.poked) this.wanted = { links: true, postcards: true };
    }
  }

  /** How long until the next row is due (at most POLL_MS; of the kinds the last pass had room for). */
  private async untilNext(): Promise<number> {
    const waits = [];
    if (this.room.links) waits.push(this.claims.nextWake('magic_links'));
    if (this.room.postcards) waits.push(this.claims.nextWake('postcards'));
    const next = Math.min(Infinity, ...(await Promise.all(waits)).map((d) => d?.getTime() ?? Infinity));
    return Math.min(POLL_MS, Math.max(0, next - this.clock.now().getTime()));
  }

  /** Claims and starts what is due and has room; whether a batch was full (there may be more). */
  private pass(): Promise<boolean> {
    const pass = this.passing.then(async () => {
      if (this.halted) return false;
      let want = this.wanted;
      this.wanted = { links: false, postcards: false };
      const now = this.clock.now();
      if (now.getTime() - this.lastSweep >= POLL_MS) {
        if (await this.claims.sweep(now, new Set(this.steps.keys()))) want = { links: true, postcards: true };
        this.lastSweep = now.getTime();
      }
      const room = LINK_STEPS - (this.steps.size - this.postcardsRunning);
      const links = want.links ? await this.claims.due('magic_links', now, room) : [];
      if (!this.halted) for (const held of links) this.track(held.id, 'links', this.linkStep(held));
      const take = this.postcardRoom();
      this.room = { links: room > 0, postcards: take > 0 };
      const postcards = want.postcards ? await this.claims.due('postcards', now, take) : [];
      for (const held of postcards) {
        this.postcardsRunning++;
        this.track(
          held.id,
          'postcards',
          this.render(held).finally(() => this.postcardsRunning--),
        );
      }
      // a full batch: there may be more
      if (room > 0 && links.length === room) this.wanted.links = true;
      if (take > 0 && postcards.length === take) this.wanted.postcards = true;
      return this.wanted.links || this.wanted.postcards;
    });
    this.passing = pass.catch(() => false);
    return pass;
  }

  /** Renders to take now: all free slots, or while requests keep the process busy, one after a pause. */
  private postcardRoom(): number {
    const free = this.postcardConcurrency - this.postcardsRunning;
    if (free <= 0 || this.halted) return 0;
    if (!this.load.busy()) return free;
    if (this.postcardsRunning > 0) return 0; // the running one pokes when it ends
    if (this.pausedOnce) {
      this.pausedOnce = false;
      return 1;
    }
    if (!this.pausing) {
      this.pausing = true;
      void this.load.pause().then(() => {
        this.pausing = false;
        this.pausedOnce = true;
        this.poke('postcards');
      });
    }
    return 0;
  }

  private track(id: string, kind: Kind, step: Promise<void>): void {
    const done = step.then(
      () => undefined,
      (err: unknown) => this.onError(id, err),
    );
    this.steps.set(id, done);
    void done.finally(() => {
      this.steps.delete(id);
      this.poke(kind);
    });
  }

  /** One step of the link's lifecycle; it is released with its next wake-up (a failed step: due again in a minute). */
  private async linkStep(held: Held): Promise<void> {
    const id = held.id;
    let wake;
    try {
      wake = await linkStep(this.activities, id, () => this.clock.now().getTime());
    } catch (err) {
      this.onError(`link-${id}`, err);
      await this.claims.release('magic_links', held, new Date(this.clock.now().getTime() + 60_000));
      return;
    }
    await this.claims.release('magic_links', held, wake.at === null ? null : new Date(wake.at), {
      send_retry_at: wake.retryAt === null ? null : iso(new Date(wake.retryAt)),
    });
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
      await this.claims.release('postcards', held, new Date(this.clock.now().getTime() + wait));
      return;
    }
    this.renderErrors.delete(id);
    await this.claims.release('postcards', held, null);
  }

  /**
   * Runs what is due until nothing is (or only what waits for the clock): for tests and tools that
   * drive the engine with a fake clock. Resolves when no step is under way.
   */
  async drain(): Promise<void> {
    for (;;) {
      await Promise.all(this.marking);
      this.wanted = { links: true, postcards: true };
      const more = await this.pass();
      if (this.steps.size) {
        await Promise.all(this.steps.values());
        continue;
      }
      if (!more) return;
    }
  }

  /** How many steps are under way now (nothing waits in memory between them). */
  get size(): number {
    return this.steps.size;
  }

  /** Stops the scheduler; what is under way ends first (each step is short). The rows keep the rest. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeping?.abort();
    await this.loop;
    await Promise.all(this.marking);
    await this.passing;
    await Promise.all(this.steps.values());
  }

  /**
   * This process lost its presence, so other processes take its work: it claims nothing until
   * unfence(). Resolves when the steps under way have ended (every write a step makes is
   * conditional on the state it read, and its release on its claim, so one that ends after
   * another process took over changes nothing).
   */
  async fence(): Promise<void> {
    this.fenced = true;
    await this.passing;
    await Promise.all(this.steps.values());
  }

  /** Back with a new presence: claims again. */
  unfence(): void {
    this.fenced = false;
    this.lastSweep = -Infinity;
    this.poke();
  }
}
