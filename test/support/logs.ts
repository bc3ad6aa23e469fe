/** Reading what a Paperlink process wrote under LOG_FORMAT=json. */
import { spawn, type ChildProcess } from 'node:child_process';
import { cliJs } from './serve';

/** One line a process wrote, parsed; `msg` and the greeting's fields are what tests look at. */
export interface LogLine {
  level: number;
  time: number;
  pid: number;
  msg: string;
  err?: { type: string; message: string; code?: string | number; cause?: LogLine['err'] };
  [field: string]: unknown;
}

/** A Paperlink CLI command as its own process; everything it writes, each stream apart. */
export function run(args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [cliJs, ...args], {
    env: { ...process.env, NODE_OPTIONS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out.stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exited };
}

/**
 * Every line of `text`, each parsed as JSON: a line that is not a JSON object fails the test,
 * naming it. A last line cut short by a kill is not expected: the processes are stopped with SIGTERM.
 */
export function jsonLines(text: string, stream: string): LogLine[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(l);
      } catch {
        throw new Error(`${stream} wrote a line that is not JSON: ${l}`);
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error(`${stream} wrote a line that is not a JSON object: ${l}`);
      return parsed as LogLine;
    });
}
