/** Runs `fn` with the environment variable `name` set to `value`, then puts it back. */
export async function withEnv<T>(name: string, value: string, fn: () => Promise<T>): Promise<T> {
  const before = process.env[name];
  process.env[name] = value;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  }
}
