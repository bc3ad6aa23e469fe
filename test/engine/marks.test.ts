/**
 * A change of engine over one database (src/engine/marks.ts): the open rows are due once for the
 * engine that has never seen them, once per change, and nothing else is touched.
 */
import { FakeClock } from '../../src/clock';
import { markOnEngineChange, Marks } from '../../src/engine/marks';
import { linkRow } from '../support/rows';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('marks on %s', (backend) => {
  const clock = new FakeClock('2026-11-26T10:00:00Z');
  let t: TestService;
  beforeAll(async () => {
    // no runner: it would take the rows these tests mark
    t = await testService({ backend, clock, service: { runFlows: false } });
  });
  afterAll(() => t?.stop());
  const db = () => t.service.database.db;
  const wakes = async () =>
    Object.fromEntries(
      (await db().selectFrom('magic_links').select(['id', 'wake_at']).orderBy('id').execute()).map((r) => [
        r.id,
        r.wake_at,
      ]),
    );

  it('marks every open row once when the engine changes, and never an ended one', async () => {
    const now = clock.now();
    const later = new Date(now.getTime() + 86_400_000).toISOString();
    await db()
      .insertInto('magic_links')
      .values([
        linkRow('ml_waiting', now, { wake_at: later }),
        linkRow('ml_seen', now),
        linkRow('ml_ended', now, { status: 'expired', ended_at: now.toISOString() }),
      ])
      .execute();
    // the service started on the embedded engine, which is what ran before: nothing is marked
    expect(await markOnEngineChange(db(), 'embedded', now)).toBe(0);
    clock.advance(1_000);
    const at = clock.now().toISOString();
    expect(await markOnEngineChange(db(), 'temporal', clock.now())).toBe(2);
    expect(await wakes()).toEqual({ ml_ended: null, ml_seen: at, ml_waiting: at });
    // once: a second start on Temporal marks nothing
    await new Marks(db()).clear('magic_links', ['ml_seen', 'ml_waiting'], new Date(clock.now().getTime() + 1));
    expect(await markOnEngineChange(db(), 'temporal', clock.now())).toBe(0);
    expect(await wakes()).toEqual({ ml_ended: null, ml_seen: null, ml_waiting: null });
    // and back: the embedded engine plans each open link once
    expect(await markOnEngineChange(db(), 'embedded', clock.now())).toBe(2);
  });

  it('marks a row whose start failed unless it is marked already, and clears only marks older than the answer', async () => {
    const marks = new Marks(db());
    const now = clock.now();
    await db().insertInto('magic_links').values(linkRow('ml_failed', now)).execute();
    await marks.mark('magic_links', 'ml_failed', now);
    clock.advance(5_000);
    // a second failure keeps the first, older mark
    await marks.mark('magic_links', 'ml_failed', clock.now());
    expect((await wakes()).ml_failed).toBe(now.toISOString());
    expect(await marks.due('magic_links', clock.now(), 10)).toContain('ml_failed');
    // an answer to a call sent before the mark does not clear it
    await marks.clear('magic_links', ['ml_failed'], now);
    expect((await wakes()).ml_failed).toBe(now.toISOString());
    await marks.clear('magic_links', ['ml_failed'], clock.now());
    expect((await wakes()).ml_failed).toBeNull();
  });
});
