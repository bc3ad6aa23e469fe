/**
 * Time comes from a clock so that tests can freeze and move it. Nothing else in src reads the
 * system time or sets timers for business deadlines.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms` of this clock's time; rejects with an AbortError when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** setTimeout cannot wait longer than about 24.8 days; longer sleeps go in steps. */
const LONGEST_TIMER = 2 ** 31 - 1;

function aborted(): Error {
  return Object.assign(new Error('The wait was cancelled.'), { name: 'AbortError' });
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(aborted());
      const due = Date.now() + Math.max(0, ms);
      let timer: NodeJS.Timeout;
      const step = () => {
        const left = due - Date.now();
        if (left <= 0) {
          signal?.removeEventListener('abort', onAbort);
          resolve();
          return;
        }
        timer = setTimeout(step, Math.min(left, LONGEST_TIMER));
        timer.unref?.();
      };
      const onAbort = () => {
        clearTimeout(timer);
        reject(aborted());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      step();
    }),
};

/** A clock that stands still until told to move; sleepers wake when it passes their time. */
export class FakeClock implements Clock {
  private t: number;
  private sleepers: { due: number; wake: () => void }[] = [];

  constructor(start: Date | string = '2026-11-22T10:00:00Z') {
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  set(to: Date | string): void {
    this.t = new Date(to).getTime();
    this.wakeDue();
  }
  advance(ms: number): void {
    this.t += ms;
    this.wakeDue();
  }
  /** How many sleepers are waiting (tests use it to know a flow has gone to sleep). */
  get waiting(): number {
    return this.sleepers.length;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(aborted());
      const entry = {
        due: this.t + Math.max(0, ms),
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        reject(aborted());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (ms <= 0) return entry.wake();
      this.sleepers.push(entry);
    });
  }
  private wakeDue(): void {
    const due = this.sleepers.filter((s) => s.due <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.due > this.t);
    for (const s of due) s.wake();
  }
}

/** Timestamps are stored as ISO 8601 text in UTC, which sorts in time order in every database. */
export function iso(d: Date): string {
  // a busy server formats the same few instants many times over: a view formats its time four
  // times and the end of its view once, so the last few answers are kept
  const ms = d.getTime();
  for (let i = 0; i < RECENT; i++) if (recentMs[i] === ms) return recentIso[i];
  const text = d.toISOString();
  recentMs[next] = ms;
  recentIso[next] = text;
  next = (next + 1) % RECENT;
  return text;
}
const RECENT = 4;
const recentMs: number[] = new Array<number>(RECENT).fill(NaN);
const recentIso: string[] = new Array<string>(RECENT).fill('');
let next = 0;
