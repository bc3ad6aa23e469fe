import { main } from '../../src/cli';

/** Runs the CLI in this process and captures what it prints. */
export async function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    stdin: stdin === undefined ? undefined : async () => stdin,
  });
  return { code, stdout, stderr };
}
