/**
 * At most `size()` holders at once; the others wait and get in first come, first served: a slot
 * given back goes straight to the longest waiter, never to a caller that came after it. (A waiter
 * that is only woken to try again can be overtaken, again and again, under sustained load.)
 */
export class Slots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: () => number) {}

  /** Resolves once the caller holds a slot; it gives it back with `release()`. */
  async take(): Promise<void> {
    if (this.busy < this.size() && this.waiting.length === 0) {
      this.busy++;
      return;
    }
    // handed over by release(): `busy` counts it already
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Slots held, and callers waiting for one. */
  state(): { busy: number; waiting: number } {
    return { busy: this.busy, waiting: this.waiting.length };
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy--;
  }
}
