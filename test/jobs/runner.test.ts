/**
 * The one runner every kind of background work runs on (src/jobs/runner.ts): what a pass looks at,
 * what it never takes twice, how it stands aside while fenced, and the timetable of upkeep.
 */
import { FakeClock } from '../../src/clock';
import { periodic, POLL_MS, Runner, type Job, type JobKind } from '../../src/jobs/runner';

/** A kind over an in-memory list of due times: takes what is due at the pass's `now`, records each take's time. */
function kind(name: string, due: Map<string, number>, options: Partial<JobKind> = {}) {
  const takes: number[] = [];
  const ran: string[] = [];
  const k: JobKind = {
    name,
    concurrency: 10,
    take: async (now, limit, running) => {
      takes.push(now.getTime());
      const ids = [...due]
        .filter(([id, at]) => at <= now.getTime() && !running.has(id))
        .slice(0, limit)
        .map(([id]) => id);
      for (const id of ids) due.delete(id);
      return ids.map((id) => ({ id }));
    },
    run: async (job: Job) => {
      ran.push(job.id);
    },
    ...options,
  };
  return { kind: k, takes, ran };
}

describe('the runner', () => {
  it('drains what is due at the time the drain was asked, though a pass that began earlier was under way', async () => {
    const clock = new FakeClock();
    const t0 = clock.now().getTime();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // the first kind's take hangs: the pass the loop began at t0 waits in it
    const slow = kind('slow', new Map(), {
      take: async () => {
        await gate;
        return [];
      },
    });
    const links = kind('links', new Map([['a', t0 + 1000]]));
    const runner = new Runner(clock);
    runner.add(slow.kind);
    runner.add(links.kind);
    runner.start();
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(1000);
    const draining = runner.drain(['links']);
    release();
    await draining;
    // the earlier pass looked with t0 and found nothing; the drain's own pass found `a`
    expect(links.ran).toEqual(['a']);
    await runner.stop();
  });

  it('runs a take together where the kind can, what it leaves alone after it, `concurrency` at a time, and all alone when it fails', async () => {
    const clock = new FakeClock();
    const t0 = clock.now().getTime();
    const together: string[][] = [];
    let fail = false;
    const due = new Map(['a', 'b', 'c', 'd', 'h', 'i'].map((id) => [id, t0] as [string, number]));
    let alone = 0;
    let most = 0;
    const links = kind('links', due, {
      concurrency: 2,
      together: 10,
      runTogether: async (jobs: Job[]) => {
        together.push(jobs.map((j) => j.id));
        if (fail) throw new Error('the database went away');
        // all but a and c have more to do than the batch does
        return jobs.filter((j) => j.id !== 'a' && j.id !== 'c');
      },
    });
    const kindRun = links.kind.run.bind(links.kind);
    links.kind.run = async (job) => {
      most = Math.max(most, ++alone);
      await new Promise((resolve) => setImmediate(resolve));
      alone--;
      await kindRun(job);
    };
    const errors: string[] = [];
    const runner = new Runner(clock, (where) => errors.push(where));
    runner.add(links.kind);
    await runner.drain();
    // one take of up to `together`, what it left run two at a time
    expect(together).toEqual([['a', 'b', 'c', 'd', 'h', 'i']]);
    expect(links.ran).toEqual(['b', 'd', 'h', 'i']);
    expect(most).toBe(2);
    // a batch that fails leaves each piece to its own run
    fail = true;
    for (const id of ['e', 'f']) due.set(id, t0);
    await runner.drain();
    expect(together[1]).toEqual(['e', 'f']);
    expect(links.ran).toEqual(['b', 'd', 'h', 'i', 'e', 'f']);
    expect(errors).toEqual(['links']);
    // a take of one is run alone
    due.set('g', t0);
    await runner.drain();
    expect(together).toHaveLength(2);
    expect(links.ran).toEqual(['b', 'd', 'h', 'i', 'e', 'f', 'g']);
    await runner.stop();
  });

  it('never takes again what runs here now, even when its lease ran out meanwhile', async () => {
    const clock = new FakeClock();
    let finish!: () => void;
    const offered: string[][] = [];
    const runner = new Runner(clock);
    runner.add({
      name: 'deliveries',
      concurrency: 4,
      // a lease that ran out: the row is due again at every take
      take: async (_now, _limit, running) => {
        offered.push([...running]);
        return running.has('d1') ? [] : [{ id: 'd1' }];
      },
      run: () => new Promise<void>((resolve) => (finish = resolve)),
    });
    runner.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runner.size('deliveries')).toBe(1);
    runner.poke('deliveries');
    await new Promise((resolve) => setImmediate(resolve));
    expect(offered.at(-1)).toEqual(['d1']);
    expect(runner.size('deliveries')).toBe(1);
    finish();
    await runner.stop();
  });

  it('takes nothing while fenced, lets what runs finish, and takes again once unfenced', async () => {
    const clock = new FakeClock();
    const t0 = clock.now().getTime();
    const due = new Map([['a', t0]]);
    const work = kind('steps', due);
    const runner = new Runner(clock);
    runner.add(work.kind);
    await runner.fence();
    await runner.drain();
    expect(work.ran).toEqual([]);
    runner.unfence();
    await runner.drain();
    expect(work.ran).toEqual(['a']);
    await runner.stop();
  });

  it('while requests keep the process busy, a kind that yields takes its share after each pause only', async () => {
    const clock = new FakeClock();
    const t0 = clock.now().getTime();
    const due = new Map(['a', 'b', 'c'].map((id) => [id, t0]));
    const pauses: (() => void)[] = [];
    const running = new Map<string, () => void>();
    let instant = false;
    const runner = new Runner(clock);
    runner.load = { busy: () => true, pause: () => new Promise<void>((resolve) => pauses.push(resolve)) };
    runner.add(
      kind('renders', due, {
        concurrency: 3,
        whileBusy: 1,
        run: (job) => (instant ? Promise.resolve() : new Promise<void>((resolve) => running.set(job.id, resolve))),
      }).kind,
    );
    runner.start();
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect([running.size, pauses.length]).toEqual([0, 1]);
    pauses.shift()!();
    for (let i = 0; i < 5 && running.size === 0; i++) await settle();
    expect([...running.keys()]).toEqual(['a']);
    await settle();
    // one at a time: no second pause while one runs
    expect(pauses).toHaveLength(0);
    running.get('a')!();
    running.delete('a');
    for (let i = 0; i < 5 && pauses.length === 0; i++) await settle();
    expect([running.size, pauses.length]).toEqual([0, 1]);
    // the load drops: the rest is taken at full concurrency
    instant = true;
    runner.load = { busy: () => false, pause: () => Promise.resolve() };
    pauses.shift()!();
    for (let i = 0; i < 5 && running.size === 0; i++) await settle();
    for (const finish of running.values()) finish();
    await runner.drain();
    expect(due.size).toBe(0);
    await runner.stop();
  });

  it('runs upkeep on its timetable: not at the start, once when due, and one run at a time', async () => {
    const clock = new FakeClock();
    let wall = 0;
    let runs = 0;
    let finish: (() => void) | undefined;
    const runner = new Runner(clock);
    runner.add(
      periodic(
        'housekeeping',
        60_000,
        () =>
          new Promise<void>((resolve) => {
            runs++;
            finish = resolve;
          }),
        () => wall,
      ),
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    runner.poke();
    runner.start();
    await settle();
    expect(runs).toBe(0);
    wall = 60_000;
    runner.poke();
    await settle();
    await settle();
    expect(runs).toBe(1);
    // due again while the first still runs: it waits for it
    wall = 120_000;
    runner.poke();
    await settle();
    await settle();
    expect(runs).toBe(1);
    finish!();
    for (let i = 0; i < 5 && runs < 2; i++) await settle();
    expect(runs).toBe(2);
    finish!();
    await runner.stop();
  });

  it('looks at every kind at least every POLL_MS, though another is poked without end', async () => {
    const clock = new FakeClock();
    const t0 = clock.now().getTime();
    let storm = true;
    const runner = new Runner(clock);
    // a kind that always has one more, whose every end pokes the runner again
    runner.add({
      name: 'storm',
      concurrency: 1,
      take: async () => (storm ? [{ id: `s${Math.random()}` }] : []),
      run: async () => undefined,
    });
    const timed = kind('timed', new Map([['x', t0 + 1000]]));
    runner.add({ ...timed.kind, next: async () => new Date(t0 + 1000) });
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    runner.start();
    await settle();
    clock.advance(POLL_MS);
    await settle();
    expect(timed.ran).toEqual(['x']);
    storm = false;
    await runner.stop();
  });

  it("reports one kind's error and goes on with the others", async () => {
    const clock = new FakeClock();
    const errors: string[] = [];
    const runner = new Runner(clock, (where) => errors.push(where));
    runner.add({
      name: 'broken',
      concurrency: 1,
      take: () => Promise.reject(new Error('the database went away')),
      run: async () => undefined,
    });
    const good = kind('good', new Map([['y', clock.now().getTime()]]));
    runner.add(good.kind);
    runner.start();
    for (let i = 0; i < 20 && good.ran.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(good.ran).toEqual(['y']);
    expect(errors).toContain('broken');
    // a drain says so
    await expect(runner.drain(['broken'])).rejects.toThrow('the database went away');
    await runner.stop();
  });
});
