/** Polls `fn` until it returns true (flows run in the background), or fails after `seconds`. */
export async function eventually(fn: () => Promise<boolean>, what: string, seconds = 10): Promise<void> {
  const end = Date.now() + seconds * 1000;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`not within ${seconds} s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
