import { FakeClock } from '../../src/clock';
import { EmbeddedEngine } from '../../src/engine/embedded';
import type { Load } from '../../src/engine/load';
import type { LinkActivities, LinkState } from '../../src/flows/link';
import type { PostcardActivities, PostcardStatus } from '../../src/flows/postcard';

/** An in-memory link and the activities over it, recording what the flow did. */
function fakeLink(state: LinkState) {
  const calls: string[] = [];
  let gate: Promise<void> | undefined;
  const activities: LinkActivities = {
    linkState: async () => {
      calls.push('state');
      if (gate) await gate;
      return { ...state };
    },
    deliverLink: async () => {
      calls.push('deliver');
      state.sent = true;
      state.status = 'active';
      return true;
    },
    expireLink: async () => {
      calls.push('expire');
      state.status = 'expired';
    },
    revokeLink: async () => {
      calls.push('revoke');
      state.status = 'revoked';
    },
  };
  return { state, calls, activities, hold: (p: Promise<void>) => (gate = p) };
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

describe('the embedded engine running the link lifecycle', () => {
  it('sleeps until the deadline and expires the link then, not before', async () => {
    const clock = new FakeClock('2026-11-22T10:00:00Z');
    const link = fakeLink({
      status: 'active',
      sent: true,
      sendAttempts: 1,
      expiresAt: '2026-11-22T12:00:00.000Z',
      viewsLeft: null,
    });
    const engine = new EmbeddedEngine(clock, link.activities);
    void engine.startLink('a');
    await settle();
    clock.advance(2 * 60 * 60 * 1000 - 1);
    await settle();
    expect(link.state.status).toBe('active');
    clock.advance(1);
    await settle();
    expect(link.state.status).toBe('expired');
    expect(engine.size).toBe(0);
  });

  it('wakes on a signal and expires a link whose last view was used', async () => {
    const clock = new FakeClock();
    const link = fakeLink({ status: 'active', sent: true, sendAttempts: 1, expiresAt: null, viewsLeft: 1 });
    const engine = new EmbeddedEngine(clock, link.activities);
    void engine.startLink('b');
    await settle();
    link.state.viewsLeft = 0;
    engine.linkChanged('b');
    await settle();
    expect(link.calls).toContain('expire');
    expect(link.state.status).toBe('expired');
  });

  it('retries a failed e-mail after a minute', async () => {
    const clock = new FakeClock();
    const link = fakeLink({
      status: 'send_failed',
      sent: false,
      sendAttempts: 1,
      expiresAt: '2026-11-30T10:00:00.000Z',
      viewsLeft: 3,
    });
    const engine = new EmbeddedEngine(clock, link.activities);
    void engine.startLink('c');
    await settle();
    clock.advance(59_000);
    await settle();
    expect(link.calls).not.toContain('deliver');
    clock.advance(1_000);
    await settle();
    expect(link.calls).toContain('deliver');
    await engine.stop();
  });

  it('stops every flow, also one that is inside an activity when stop() is called', async () => {
    const clock = new FakeClock();
    const link = fakeLink({
      status: 'active',
      sent: true,
      sendAttempts: 1,
      expiresAt: '2026-11-30T10:00:00.000Z',
      viewsLeft: null,
    });
    const engine = new EmbeddedEngine(clock, link.activities);
    let release!: () => void;
    void link.hold(new Promise<void>((r) => (release = r)));
    void engine.startLink('d');
    await settle();
    const stopped = engine.stop();
    release();
    await expect(stopped).resolves.toBeUndefined();
    expect(engine.size).toBe(0);
  });
});

describe('the embedded engine rendering postcards while requests keep the process busy', () => {
  /** Postcard renders that end when the test says so, and a load the test turns on and off. */
  function setup() {
    const rendering = new Map<string, () => void>();
    const postcards: PostcardActivities = {
      renderPostcard: (id) =>
        new Promise<PostcardStatus>((resolve) => rendering.set(id, () => (rendering.delete(id), resolve('rendered')))),
    };
    const pauses: (() => void)[] = [];
    const load: Load & { isBusy: boolean } = {
      isBusy: false,
      busy: () => load.isBusy,
      pause: () => new Promise<void>((resolve) => pauses.push(resolve)),
    };
    const link = fakeLink({ status: 'active', sent: true, sendAttempts: 1, expiresAt: null, viewsLeft: null });
    const engine = new EmbeddedEngine(new FakeClock(), link.activities, undefined, postcards);
    engine.load = load;
    const end = () => {
      for (const finish of [...rendering.values()]) finish();
      return engine.stop();
    };
    return { engine, load, rendering, pauses, finish: (id: string) => rendering.get(id)!(), end };
  }

  it('renders as many at once as configured when the process is not busy', async () => {
    const { engine, rendering, pauses, finish, end } = setup();
    for (const id of ['p1', 'p2', 'p3']) engine.postcardReceived(id);
    await settle();
    expect([...rendering.keys()]).toEqual(['p1', 'p2']);
    finish('p1');
    await settle();
    expect([...rendering.keys()]).toEqual(['p2', 'p3']);
    expect(pauses).toHaveLength(0);
    await end();
  });

  it('while busy, renders one at a time, each after a pause, and none is left waiting for the load to end', async () => {
    const { engine, load, rendering, pauses, finish, end } = setup();
    load.isBusy = true;
    for (const id of ['p1', 'p2', 'p3']) engine.postcardReceived(id);
    await settle();
    expect(rendering.size).toBe(0); // it waits for the pause first
    expect(pauses).toHaveLength(1);
    pauses.shift()!();
    await settle();
    expect([...rendering.keys()]).toEqual(['p1']); // one, though two may run at once and the load stays
    expect(pauses).toHaveLength(0);
    finish('p1');
    await settle();
    expect(rendering.size).toBe(0);
    expect(pauses).toHaveLength(1);
    pauses.shift()!();
    await settle();
    expect([...rendering.keys()]).toEqual(['p2']);
    // the load drops: the rest runs at full concurrency as soon as a render ends
    load.isBusy = false;
    engine.postcardReceived('p4');
    await settle();
    expect([...rendering.keys()]).toEqual(['p2', 'p3']);
    finish('p2');
    await settle();
    expect([...rendering.keys()]).toEqual(['p3', 'p4']);
    expect(pauses).toHaveLength(0);
    await end();
  });

  it('a postcard received twice is rendered once', async () => {
    const { engine, rendering, finish, end } = setup();
    engine.postcardReceived('p1');
    engine.postcardReceived('p1');
    await settle();
    finish('p1');
    engine.postcardReceived('p2');
    await settle();
    expect([...rendering.keys()]).toEqual(['p2']);
    await end();
  });
});
