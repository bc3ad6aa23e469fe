/** `paperlink serve` as its own process (the built CLI), for tests that kill and restart it. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { root } from './fixtures';

export const cliJs = path.join(root, 'dist/src/cli.js');

/** Starts `paperlink serve` on a free port over `dataDir` (one process unless `processes`); resolves with its URL once it listens. */
export function serveProcess(dataDir: string, env: Record<string, string>, processes = 1): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliJs, 'serve', '--port', '0', '--data-dir', dataDir, '--processes', String(processes)], { env: { ...process.env, ...env, LOG_LEVEL: 'error', NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}): ${out}`)));
  });
}
