/**
 * The embedded engine's kinds of work on the runner, on a real database, with a fake clock: a link is looked at when
 * its row says (its deadline, a planned retry) or when it changes, and at no other time; postcards
 * render as many at once as configured, one at a time after a pause while requests keep the
 * process busy, and each once.
 */
import { FakeClock } from '../../src/clock';
import { localPresence } from '../../src/db/presence';
import { Claims } from '../../src/engine/claims';
import { EmbeddedEngine } from '../../src/engine/embedded';
import type { Load } from '../../src/jobs/load';
import type { LinkActivities, LinkBatch, LinkState } from '../../src/flows/link';
import type { PostcardStatus } from '../../src/flows/postcard';
import { testService, type TestService } from '../support/service';
import { linkRow } from '../support/rows';

/** Lets the engine's promises and database calls run until `done()` holds (a bounded number of turns, no wall clock). */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 5_000 && !done(); i++) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error(`never happened: ${what}`);
}

describe('the embedded engine', () => {
  let t: TestService;
  const clock = new FakeClock('2026-11-22T10:00:00Z');
  beforeAll(async () => {
    // the service's own engine does not run: each test runs one of its own
    t = await testService({ clock, service: { runFlows: false } });
  });
  afterAll(() => t?.stop());
  const db = () => t.service.database.db;

  /** In-memory links the activities act on (the rows only carry the scheduling), recording what each step did. */
  function fakeLinks(states: Record<string, LinkState>) {
    const calls: string[] = [];
    const activities: LinkActivities = {
      // what the engine plans is in the row, as links.state() reads it
      linkState: async (id) => {
        calls.push(`state ${id}`);
        const planned = await db()
          .selectFrom('magic_links')
          .select('send_retry_at')
          .where('id', '=', id)
          .executeTakeFirst();
        return { ...states[id], retryAt: planned?.send_retry_at ?? null };
      },
      deliverLink: async (id) => {
        calls.push(`deliver ${id}`);
        const s = states[id];
        // it fails again, and its outcome clears the planned retry (as LinkDelivery does)
        s.sendAttempts++;
        await db().updateTable('magic_links').set({ send_retry_at: null }).where('id', '=', id).execute();
        return false;
      },
      expireLink: async (id) => {
        calls.push(`expire ${id}`);
        states[id].status = 'expired';
      },
      revokeLink: async (id) => {
        calls.push(`revoke ${id}`);
        states[id].status = 'revoked';
      },
      notifyLink: async () => true,
    };
    return { states, calls, activities };
  }
  /** The fake's batch: each link read and expired through its one-link activities, as the fake records them. */
  const oneByOne = (a: LinkActivities): LinkBatch => ({
    linkStates: async (ids) => new Map(await Promise.all(ids.map(async (id) => [id, await a.linkState(id)] as const))),
    expireLinks: async (ids) => {
      for (const id of ids) await a.expireLink(id);
      return new Map(await Promise.all(ids.map(async (id) => [id, await a.linkState(id)] as const)));
    },
  });
  const row = async (id: string, wakeAt: string | null) => {
    await db()
      .insertInto('magic_links')
      .values(linkRow(id, clock.now(), { document_id: `doc_${id}`, expires_at: null, wake_at: wakeAt }))
      .execute();
  };
  const engineFor = (
    activities: LinkActivities,
    renderPostcard: (id: string) => Promise<PostcardStatus> = async () => 'rendered',
  ) =>
    new EmbeddedEngine(
      clock,
      { ...t.service.activities, ...activities, ...oneByOne(activities), renderPostcard },
      new Claims(t.service.database, localPresence()),
    );

  it('expires a link at its deadline, not before, and holds nothing while it waits', async () => {
    const deadline = new Date(clock.now().getTime() + 2 * 3_600_000).toISOString();
    const links = fakeLinks({
      a: { status: 'active', sent: true, sendAttempts: 1, expiresAt: deadline, viewsLeft: null },
    });
    await row('a', clock.now().toISOString());
    const engine = engineFor(links.activities);
    await engine.drain();
    expect(links.calls).toEqual(['state a']);
    expect(engine.size).toBe(0);
    const waiting = await db()
      .selectFrom('magic_links')
      .select(['wake_at', 'claimed_by'])
      .where('id', '=', 'a')
      .executeTakeFirstOrThrow();
    expect(waiting).toEqual({ wake_at: deadline, claimed_by: null });
    clock.advance(2 * 3_600_000 - 1);
    await engine.drain();
    expect(links.calls).toEqual(['state a']);
    clock.advance(1);
    await engine.drain();
    // read again after ending it: an end notice may be due
    expect(links.calls).toEqual(['state a', 'state a', 'expire a', 'state a']);
    await engine.stop();
  });

  it('runs the step of a link that changed at once, waking the runner from its sleep', async () => {
    const links = fakeLinks({ b: { status: 'active', sent: true, sendAttempts: 1, expiresAt: null, viewsLeft: 1 } });
    await row('b', clock.now().toISOString());
    const engine = engineFor(links.activities);
    engine.start();
    await until(() => links.calls.length === 1, 'the first step');
    await engine.drain();
    // nothing to wait for but a change: no wake-up
    const waiting = await db()
      .selectFrom('magic_links')
      .select('wake_at')
      .where('id', '=', 'b')
      .executeTakeFirstOrThrow();
    expect(waiting.wake_at).toBeNull();
    // its last view is used: the change runs its step, and the step expires it
    links.states.b.viewsLeft = 0;
    engine.linkChanged('b');
    await engine.drain();
    expect(links.calls).toEqual(['state b', 'state b', 'expire b', 'state b']);
    await engine.stop();
  });

  it('retries a failed e-mail a minute after the step that found it failed, and a change meanwhile does not put it off', async () => {
    const links = fakeLinks({
      c: { status: 'send_failed', sent: false, sendAttempts: 1, expiresAt: '2026-12-30T10:00:00.000Z', viewsLeft: 3 },
    });
    await row('c', clock.now().toISOString());
    const engine = engineFor(links.activities);
    await engine.drain();
    expect(links.calls).toEqual(['state c']);
    const planned = await db()
      .selectFrom('magic_links')
      .select(['wake_at', 'send_retry_at'])
      .where('id', '=', 'c')
      .executeTakeFirstOrThrow();
    const retryAt = new Date(clock.now().getTime() + 60_000).toISOString();
    expect(planned).toEqual({ wake_at: retryAt, send_retry_at: retryAt });
    clock.advance(30_000);
    engine.linkChanged('c');
    await engine.drain();
    expect(links.calls.filter((c) => c.startsWith('deliver'))).toHaveLength(0);
    clock.advance(29_999);
    await engine.drain();
    expect(links.calls.filter((c) => c.startsWith('deliver'))).toHaveLength(0);
    clock.advance(1);
    await engine.drain();
    expect(links.calls.filter((c) => c.startsWith('deliver'))).toEqual(['deliver c']);
    await engine.stop();
  });

  describe('rendering postcards', () => {
    let n = 0;
    /** Postcard rows due now, and renders that end when the test says so, and a load the test turns on and off. */
    async function setup(count: number) {
      const template = (await db().selectFrom('templates').select('id').executeTakeFirstOrThrow()).id;
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = `pc_${++n}`.padEnd(8, '0');
        ids.push(id);
        const now = new Date(clock.now().getTime() - count + i).toISOString();
        await db()
          .insertInto('postcards')
          .values({
            id,
            status: 'received',
            template_id: template,
            contact: '{}',
            address: '{}',
            custom: '{}',
            token_id: 'tok',
            idempotency_key: null,
            document_id: null,
            failure_reason: null,
            warnings: '[]',
            created_at: now,
            updated_at: now,
            claimed_by: null,
            wake_at: now,
            render_attempts: 0,
          })
          .execute();
      }
      const rendering = new Map<string, () => void>();
      const rendered: string[] = [];
      const pauses: (() => void)[] = [];
      const load: Load & { isBusy: boolean } = {
        isBusy: false,
        busy: () => load.isBusy,
        pause: () => new Promise<void>((resolve) => pauses.push(resolve)),
      };
      const engine = engineFor(
        fakeLinks({}).activities,
        (id) =>
          new Promise<PostcardStatus>((resolve) =>
            rendering.set(id, () => {
              rendering.delete(id);
              rendered.push(id);
              void db()
                .updateTable('postcards')
                .set({ status: 'rendered' })
                .where('id', '=', id)
                .execute()
                .then(() => resolve('rendered'));
            }),
          ),
      );
      engine.load = load;
      const end = async () => {
        for (const finish of [...rendering.values()]) finish();
        await engine.stop();
      };
      return { ids, engine, load, rendering, rendered, pauses, finish: (id: string) => rendering.get(id)!(), end };
    }

    it('renders as many at once as configured when the process is not busy, each once', async () => {
      const { ids, engine, rendering, rendered, pauses, finish, end } = await setup(3);
      engine.start();
      engine.postcardReceived();
      await until(() => rendering.size === 2, 'two renders');
      expect([...rendering.keys()]).toEqual(ids.slice(0, 2));
      finish(ids[0]);
      await until(() => rendering.has(ids[2]), 'the third render');
      expect([...rendering.keys()]).toEqual(ids.slice(1, 3));
      expect(pauses).toHaveLength(0);
      finish(ids[1]);
      finish(ids[2]);
      engine.postcardReceived();
      await engine.drain();
      expect(rendered).toEqual(ids);
      await end();
    });

    it('while busy, renders one at a time, each after a pause, and none is left waiting for the load to end', async () => {
      const { ids, engine, load, rendering, pauses, finish, end } = await setup(4);
      load.isBusy = true;
      engine.start();
      await until(() => pauses.length === 1, 'a pause');
      expect(rendering.size).toBe(0); // it waits for the pause first
      pauses.shift()!();
      await until(() => rendering.size === 1, 'one render');
      expect([...rendering.keys()]).toEqual([ids[0]]); // one, though two may run at once and the load stays
      expect(pauses).toHaveLength(0);
      finish(ids[0]);
      await until(() => pauses.length === 1, 'the next pause');
      expect(rendering.size).toBe(0);
      pauses.shift()!();
      await until(() => rendering.size === 1, 'the next render');
      expect([...rendering.keys()]).toEqual([ids[1]]);
      // the load drops: the rest runs at full concurrency as soon as a render ends
      load.isBusy = false;
      finish(ids[1]);
      await until(() => rendering.size === 2, 'two renders');
      expect([...rendering.keys()]).toEqual(ids.slice(2, 4));
      expect(pauses).toHaveLength(0);
      await end();
    });
  });
});
