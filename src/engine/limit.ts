/** Runs at most `n` calls of `fn` at once; the others wait their turn, in order. */
export function limit<A extends unknown[], R>(n: number, fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (...args: A) => {
    if (active >= n) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await fn(...args);
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}
