import { FakeClock, iso } from '../../src/clock';

describe('timestamps (iso)', () => {
  it('formats each instant as its own ISO 8601 UTC text, however many instants are interleaved', () => {
    const clock = new FakeClock('2026-11-24T10:00:00.000Z');
    const instants: Date[] = [];
    for (let i = 0; i < 40; i++) {
      instants.push(clock.now(), new Date(clock.now().getTime() + 30 * 60_000));
      clock.advance(i % 3 === 0 ? 0 : 7);
    }
    // formatted in order, then again in reverse and shuffled: each answer is that instant's text
    for (const order of [instants, [...instants].reverse(), instants.filter((_, i) => i % 3 !== 1)])
      for (const d of order) expect(iso(d)).toBe(new Date(d.getTime()).toISOString());
  });

  it('refuses an invalid date as toISOString does', () => {
    expect(() => iso(new Date('not a date'))).toThrow(RangeError);
  });
});
