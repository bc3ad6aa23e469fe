/** Time comes from a clock so that tests can freeze and move it. Nothing else in src reads the system time. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move. */
export class FakeClock implements Clock {
  private t: number;
  constructor(start: Date | string = '2026-11-22T10:00:00Z') {
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  set(to: Date | string): void {
    this.t = new Date(to).getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Timestamps are stored as ISO 8601 text in UTC, which sorts in time order in every database. */
export function iso(d: Date): string {
  return d.toISOString();
}
