/**
 * The link lifecycle flow driven directly through its ports, to reach interleavings an engine
 * rarely produces: a change told while the flow is reading the link's state must not be lost,
 * and a link nobody e-mailed is e-mailed once its sender's lease has run out.
 */
import { CHANGED, linkLifecycle, type LinkActivities, type LinkState } from '../../src/flows/link';
import { POLICIES, waitMs } from '../../src/flows/policies';
import type { Ports } from '../../src/flows/ports';

/** Ports over a fake clock: condition() waits for a signal or for advance() past its timeout. */
function fakePorts(activities: LinkActivities, patches: Record<string, boolean> = {}) {
  let suggest = false;
  let now = Date.parse('2026-11-23T10:00:00Z');
  const handlers = new Map<string, () => void>();
  const waits: { test: () => boolean; until?: number; resolve: (v: boolean) => void }[] = [];
  const settle = () => {
    for (const w of [...waits]) {
      if (w.test()) {
        waits.splice(waits.indexOf(w), 1);
        w.resolve(true);
      } else if (w.until !== undefined && w.until <= now) {
        waits.splice(waits.indexOf(w), 1);
        w.resolve(false);
      }
    }
  };
  const ports: Ports<LinkActivities> = {
    activities,
    now: () => now,
    sleep: async () => undefined,
    condition: (test, timeoutMs) =>
      new Promise((resolve) => {
        if (test()) return resolve(true);
        waits.push({ test, until: timeoutMs === undefined ? undefined : now + timeoutMs, resolve });
      }),
    onSignal: (name, handler) => handlers.set(name, handler),
    patched: (id) => patches[id] ?? true,
    continueAsNewSuggested: () => suggest,
  };
  return {
    ports,
    signal: (name: string) => {
      handlers.get(name)?.();
      settle();
    },
    advance: (ms: number) => {
      now += ms;
      settle();
    },
    get waiting() {
      return waits.length;
    },
    now: () => now,
    suggestContinueAsNew: () => {
      suggest = true;
    },
  };
}

/** Lets every promise that can settle settle (no timers: the flow only waits on the fake ports). */
const drain = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

const active = (over: Partial<LinkState> = {}): LinkState => ({
  status: 'active',
  sent: true,
  sendAttempts: 1,
  sendingUntil: null,
  expiresAt: null,
  viewsLeft: null,
  ...over,
});

describe('linkLifecycle()', () => {
  it('keeps a change told while it reads the link, and expires a link opened during that read', async () => {
    let reads = 0;
    let openedAt: number | undefined;
    let expired = 0;
    let fake!: ReturnType<typeof fakePorts>;
    const activities: LinkActivities = {
      linkState: async () => {
        reads++;
        // the second read races the opening: it sees the link as it was, and the opening is told meanwhile
        if (reads === 2) {
          openedAt = fake.now();
          fake.signal(CHANGED);
          return active();
        }
        return openedAt === undefined
          ? active()
          : active({ expiresAt: new Date(openedAt + 45 * 60_000).toISOString() });
      },
      deliverLink: async () => true,
      expireLink: async () => {
        expired++;
      },
      revokeLink: async () => undefined,
      notifyLink: async () => true,
    };
    fake = fakePorts(activities);
    const done = linkLifecycle(fake.ports, 'ml_race');
    await drain();
    fake.signal(CHANGED); // something else changed: the flow wakes and reads (the racing read)
    await drain();
    // the opening was not lost: the flow read again and now waits for the timer from the opening
    expect(reads).toBe(3);
    fake.advance(45 * 60_000);
    await expect(done).resolves.toBe('expired');
    expect(expired).toBe(1);
  });

  it('loses that change when replaying a run recorded before the fix (patched off)', async () => {
    let reads = 0;
    let fake!: ReturnType<typeof fakePorts>;
    const activities: LinkActivities = {
      linkState: async () => {
        reads++;
        if (reads === 2) fake.signal(CHANGED);
        return active();
      },
      deliverLink: async () => true,
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => true,
    };
    fake = fakePorts(activities, { 'link-clear-changed-before-read': false });
    void linkLifecycle(fake.ports, 'ml_old');
    await drain();
    fake.signal(CHANGED);
    await drain();
    expect(reads).toBe(2);
    expect(fake.waiting).toBe(1);
  });

  it('e-mails a link nobody e-mailed once its sender lease has run out, and only then', async () => {
    let state = active({ sent: false, sendAttempts: 0 });
    let delivered = 0;
    const activities: LinkActivities = {
      linkState: async () => state,
      deliverLink: async () => {
        delivered++;
        state = active();
        return true;
      },
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => true,
    };
    const fake = fakePorts(activities);
    state = active({ sent: false, sendAttempts: 0, sendingUntil: new Date(fake.now() + 120_000).toISOString() });
    void linkLifecycle(fake.ports, 'ml_unsent');
    await drain();
    expect(delivered).toBe(0);
    fake.advance(119_000);
    await drain();
    expect(delivered).toBe(0);
    fake.advance(1_000);
    await drain();
    expect(delivered).toBe(1);
    fake.advance(24 * 3_600_000);
    await drain();
    expect(delivered).toBe(1);
  });

  it('goes on as a new run when the engine suggests it, before it waits again, and not in runs recorded before that change', async () => {
    const activities = (): LinkActivities => ({
      linkState: async () => active({ expiresAt: '2026-12-01T00:00:00.000Z' }),
      deliverLink: async () => true,
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => true,
    });
    const now = fakePorts(activities());
    const done = linkLifecycle(now.ports, 'ml_long');
    await drain();
    expect(now.waiting).toBe(1);
    now.suggestContinueAsNew();
    now.signal(CHANGED); // the next wake-up ends the run instead of waiting again
    await expect(done).resolves.toBe('continue');

    const old = fakePorts(activities(), { 'link-continue-as-new': false });
    void linkLifecycle(old.ports, 'ml_old_run');
    await drain();
    old.suggestContinueAsNew();
    old.signal(CHANGED);
    await drain();
    expect(old.waiting).toBe(1);
  });

  it('tries a failed end notice again at each of its policy’s times, gives it up after the last, and then ends', async () => {
    const policy = POLICIES.link_notice;
    let flow: ReturnType<typeof fakePorts> | undefined = undefined;
    // the notices as src/links/notices.ts keeps them: failures in a row, the last one's time
    const tried: number[] = [];
    const activities: LinkActivities = {
      linkState: async () => {
        const now = flow!.now();
        const ended = { ...active(), status: 'expired' as const, notices: [] as string[], remindAt: null };
        if (tried.length >= policy.attempts) return ended;
        const at = tried.length ? tried[tried.length - 1] + waitMs(policy, tried.length) : now;
        return at <= now ? { ...ended, notices: ['ended'] } : { ...ended, remindAt: new Date(at).toISOString() };
      },
      deliverLink: async () => true,
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => {
        tried.push(flow!.now());
        return false;
      },
    };
    flow = fakePorts(activities);
    let result: string | undefined;
    void linkLifecycle(flow.ports, 'ml_notice').then((r) => (result = r));
    await drain();
    for (let n = 1; n < policy.attempts; n++) {
      expect([n, tried.length, flow.waiting]).toEqual([n, n, 1]);
      // not a moment before its time
      flow.advance(waitMs(policy, n) - 1);
      await drain();
      expect(tried).toHaveLength(n);
      flow.advance(1);
      await drain();
    }
    expect(tried).toHaveLength(policy.attempts);
    expect(result).toBe('expired');
    expect(tried.slice(1).map((at, i) => at - tried[i])).toEqual(
      Array.from({ length: policy.attempts - 1 }, (_, i) => waitMs(policy, i + 1)),
    );
  });

  it('waits a minute after a failed notice in runs recorded before the notice policy (their history has that timer)', async () => {
    let calls = 0;
    const activities: LinkActivities = {
      linkState: async () => ({ ...active(), notices: calls ? [] : ['first_view'], remindAt: null }),
      deliverLink: async () => true,
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => {
        calls++;
        return false;
      },
    };
    const old = fakePorts(activities, { 'link-notice-policy': false });
    void linkLifecycle(old.ports, 'ml_old_notice');
    await drain();
    expect([calls, old.waiting]).toEqual([1, 1]);
    old.advance(POLICIES.link_email.waits[0] - 1);
    await drain();
    expect(old.waiting).toBe(1);
  });

  it('does not loop on notices that read as due right after they were sent (another worker’s clock): once a minute at most', async () => {
    let calls = 0;
    const activities: LinkActivities = {
      // the state's worker sees the reminder due; the worker that sends finds nothing due yet
      linkState: async () => ({ ...active(), notices: ['reminder'], remindAt: null }),
      deliverLink: async () => true,
      expireLink: async () => undefined,
      revokeLink: async () => undefined,
      notifyLink: async () => {
        calls++;
        return true;
      },
    };
    const flow = fakePorts(activities);
    void linkLifecycle(flow.ports, 'ml_skewed');
    await drain();
    expect([calls, flow.waiting]).toEqual([1, 1]);
    flow.advance(POLICIES.link_email.waits[0]);
    await drain();
    expect([calls, flow.waiting]).toEqual([2, 1]);
  });
});
