/**
 * Nothing answered 202 is lost: the server runs as its own process, 20 clients send 2,000 postcard
 * requests, the server is killed with SIGKILL midway, restarted, and every request that got 202
 * must exist once and end `rendered`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliJs, serveProcess } from '../support/serve';
import { BACKENDS, freshPostgres } from '../support/service';

const TOTAL = 2000;
const CLIENTS = 20;

function cli(args: string[], env: Record<string, string>): string {
  const r = spawnSync(process.execPath, [cliJs, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env, NODE_OPTIONS: '' },
  });
  if (r.status !== 0) throw new Error(`paperlink ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

describe.each(BACKENDS)('a server killed during postcard intake, on %s', (backend) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-crash-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('keeps every postcard it answered 202 for, once, and renders them all after a restart', async () => {
    const env: Record<string, string> = backend === 'postgres' ? { DATABASE_URL: await freshPostgres() } : {};
    const apiKey = cli(['keys', 'create', '--name', 'crash test', '--data-dir', dataDir], env);
    const token = cli(['tokens', 'create', '--kind', 'postcard', '--name', 'crash test', '--data-dir', dataDir], env);
    const template = path.join(dataDir, 'tiny.xml');
    fs.writeFileSync(template, '<document size="postcard-6x4"><body><p>{{first_name}} #{{seq}}</p></body></document>');
    const templateId = cli(['templates', 'add', template, '--data-dir', dataDir], env);

    let server = await serveProcess(dataDir, env);
    const accepted = new Map<number, string>();
    let next = 0;
    let killed = false;
    const client = async () => {
      while (next < TOTAL) {
        const seq = next++;
        try {
          const res = await fetch(`${server.url}/postcards`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              api_token: token,
              template_id: templateId,
              first_name: 'Crash',
              address_line_1: '1 Main St',
              address_city: 'Springfield',
              address_state: 'OR',
              address_zip: '97477',
              address_country: 'US',
              seq: String(seq),
            }),
          });
          if (res.status === 202) accepted.set(seq, ((await res.json()) as { id: string }).id);
        } catch {
          // the server is gone: requests without an answer may or may not have been stored
        }
        if (!killed && accepted.size >= TOTAL / 2) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    expect(killed).toBe(true);
    expect(accepted.size).toBeGreaterThanOrEqual(TOTAL / 2);
    await new Promise((r) =>
      server.child.exitCode !== null || server.child.signalCode !== null ? r(null) : server.child.once('exit', r),
    );

    server = await serveProcess(dataDir, env);
    try {
      const headers = { 'x-service-api-token': apiKey };
      const all = new Map<string, { status: string; seq: string }>();
      const deadline = Date.now() + 120_000;
      for (;;) {
        all.clear();
        let cursor: string | null = null;
        do {
          const page = (await (
            await fetch(`${server.url}/v1/postcards?limit=100${cursor ? `&starting_after=${cursor}` : ''}`, { headers })
          ).json()) as {
            data: { id: string; status: string; custom_data: { seq: string } }[];
            next_cursor: string | null;
          };
          for (const p of page.data) all.set(p.id, { status: p.status, seq: p.custom_data.seq });
          cursor = page.next_cursor;
        } while (cursor);
        if ([...all.values()].every((p) => p.status !== 'received') || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      for (const [seq, id] of accepted) {
        expect(all.get(id)).toEqual({ status: 'rendered', seq: String(seq) });
      }
      const seqs = [...all.values()].map((p) => p.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      server.child.kill('SIGTERM');
    }
  }, 180_000);
});
