/** `paperlink serve` as its own process (the built CLI), for tests that kill and restart it. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { root } from './fixtures';

export const cliJs = path.join(root, 'dist/src/cli.js');

/**
 * Starts `paperlink serve` over `dataDir` on `port` (a free one by default; one process unless
 * `processes`); resolves once it listens, with the address it greets with (PUBLIC_URL when set) and
 * what it printed so far.
 */
export function serveProcess(
  dataDir: string,
  env: Record<string, string>,
  processes = 1,
  port = 0,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [cliJs, 'serve', '--port', String(port), '--data-dir', dataDir, '--processes', String(processes)],
      { env: { ...process.env, ...env, LOG_LEVEL: 'error', NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      // the greeting ends with the links to the web app and the API reference
      const m = /listening on (https?:\/\/[^\s"]+)[\s\S]*openapi\.json/.exec(out);
      if (m) resolve({ child, url: m[1], output: () => out });
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}): ${out}`)));
  });
}

/** The CLI over `dataDir` with `env`, in a process of its own as an operator runs it; what it printed. */
export function operatorCli(dataDir: string, env: Record<string, string>): (...args: string[]) => string {
  return (...args) => {
    const r = spawnSync(process.execPath, [cliJs, ...args, '--data-dir', dataDir], {
      encoding: 'utf8',
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
    });
    if (r.status !== 0) throw new Error(`paperlink ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
}

/** Subscribes `receiverUrl` to the postcard events through the API at `server`. */
export async function subscribeToPostcards(server: string, key: string, receiverUrl: string): Promise<void> {
  const res = await fetch(`${server}/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-service-api-token': key, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiverUrl, events: ['postcard.received', 'postcard.rendered'] }),
  });
  if (res.status !== 201) throw new Error(`the webhook was not made: ${res.status} ${await res.text()}`);
}
