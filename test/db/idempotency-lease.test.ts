/**
 * A request with an Idempotency-Key runs under a lease (src/jobs/lease.ts): a duplicate that took it
 * over runs the same work, and the first run, taken over, changes nothing of the entry when it
 * fails late. Before the lease, its failure marked the entry `failed` while the second run was still
 * under way, and a third duplicate then ran the work a third time at once.
 */
import { FakeClock } from '../../src/clock';
import { ValidationError } from '../../src/errors';
import { Idempotency, TAKEOVER_MS, type Answer } from '../../src/idempotency';
import { eventually } from '../support/eventually';
import { BACKENDS, testService, type TestService } from '../support/service';

/** Work that ends when the test says. */
function held() {
  let pass!: (a: Answer) => void;
  let fail!: (err: unknown) => void;
  const done = new Promise<Answer>((resolve, reject) => {
    pass = resolve;
    fail = reject;
  });
  return { done, pass, fail, runs: 0 };
}

describe.each(BACKENDS)('an idempotent request taken over (%s)', (backend) => {
  let t: TestService;
  const clock = new FakeClock();
  beforeAll(async () => {
    t = await testService({ backend, clock });
  });
  afterAll(() => t.stop());

  // a duplicate polls without moving the clock: only the test moves it; each run is of a live
  // process (the service's own, which sweeps the leases of dead ones)
  const idempotency = () => {
    const idem = new Idempotency(t.service.database.db, clock, () => new Promise((r) => setImmediate(r)));
    idem.owner = () => t.service.idempotency.owner();
    return idem;
  };
  const request = { template_id: 'tmpl_x', merge_parameters: { a: '1' } };

  it("keeps the run that took it over: the first run's late failure does not free the key for a third", async () => {
    const first = held();
    const second = held();
    let thirdRuns = 0;
    const epoch = async () =>
      (
        await t.service.database.db
          .selectFrom('idempotency')
          .select('claimed_epoch')
          .where('scope', '=', 'scope')
          .where('key', '=', 'late-failure')
          .executeTakeFirst()
      )?.claimed_epoch;
    const r1 = idempotency().run('scope', 'late-failure', request, () => first.done);
    await eventually(async () => (await epoch()) !== undefined, 'the first run holds the key');
    const before = (await epoch())!;
    // the first run's lease runs out (its process is stuck); a duplicate takes the work over
    clock.advance(TAKEOVER_MS);
    const r2 = idempotency().run('scope', 'late-failure', request, () => second.done);
    // taken over: the lease is the second run's (the wait is for that, not a time)
    await eventually(async () => (await epoch())! > before, 'the second run took the key over');
    // the first run fails at last, unexpectedly (the disk): taken over, it changes nothing
    first.fail(new Error('EIO: i/o error'));
    await expect(r1).rejects.toThrow('EIO');
    // a third duplicate waits for the run under way, which answers it
    const r3 = idempotency().run('scope', 'late-failure', request, async () => {
      thirdRuns++;
      return { status: 201, body: { third: true } };
    });
    await new Promise((r) => setImmediate(r));
    second.pass({ status: 201, body: { id: 'rnd_same' } });
    expect(await r2).toEqual({ status: 201, body: { id: 'rnd_same' }, replayed: false });
    expect(await r3).toEqual({ status: 201, body: { id: 'rnd_same' }, replayed: true });
    expect(thirdRuns).toBe(0);
  });

  it('lets the key go when the run that took it over is refused, though the first one was taken over', async () => {
    const first = held();
    const r1 = idempotency().run('scope', 'refused', request, () => first.done);
    await new Promise((r) => setImmediate(r));
    clock.advance(TAKEOVER_MS);
    const refusal = () =>
      new ValidationError('missing variables', [{ field: 'a', message: 'missing', code: 'required' }]);
    await expect(idempotency().run('scope', 'refused', request, () => Promise.reject(refusal()))).rejects.toMatchObject(
      { code: 'validation_failed' },
    );
    first.fail(refusal());
    await expect(r1).rejects.toMatchObject({ code: 'validation_failed' });
    // the fixed request may use the key at once
    const fixed = await idempotency().run(
      'scope',
      'refused',
      { ...request, merge_parameters: { a: '2' } },
      async () => ({
        status: 201,
        body: { fixed: true },
      }),
    );
    expect(fixed).toEqual({ status: 201, body: { fixed: true }, replayed: false });
  });
});
