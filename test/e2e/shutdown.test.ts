/**
 * SIGTERM under load: `paperlink serve` (its own process) stops taking connections, answers every
 * request it has read, then exits 0; past SHUTDOWN_TIMEOUT_MS it closes what is still open and
 * exits anyway. The requests are held mid-answer by a mail server that holds every message.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../support/eventually';
import { holdingSmtp } from '../support/smtp';
import { cliJs, serveProcess } from '../support/serve';

describe('paperlink serve on SIGTERM', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  async function loaded(extra: Record<string, string> = {}) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-shutdown-'));
    dirs.push(dataDir);
    const mail = await holdingSmtp();
    const key = spawnSync(process.execPath, [cliJs, 'keys', 'create', '--name', 'shutdown', '--data-dir', dataDir], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    }).stdout.trim();
    const server = await serveProcess(dataDir, { SMTP_URL: mail.url, ...extra });
    const exited = new Promise<number | null>((r) => server.child.on('exit', (code) => r(code)));
    const headers = { 'x-service-api-token': key, 'content-type': 'application/json' };
    await fetch(`${server.url}/v1/apps/magic_link`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ public_url: server.url }),
    });
    const variables = (
      (await (await fetch(`${server.url}/v1/templates/tmpl_example_letter`, { headers })).json()) as {
        variables: string[];
      }
    ).variables;
    const body = (to: string) =>
      JSON.stringify({
        template_id: 'tmpl_example_letter',
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: to, expire_after_n_views: 2 } },
      });
    // six requests, each held in its e-mail's send
    const answers = Array.from({ length: 6 }, (_, i) =>
      fetch(`${server.url}/v1/generate`, { method: 'POST', headers, body: body(`r${i}@example.com`) }).then(
        (res) => res.status,
        () => 'no answer' as const,
      ),
    );
    await eventually(async () => mail.held() === 6, 'six requests read and held in their sends', 30);
    return { server, mail, answers, exited };
  }

  it('answers every request it has read, takes no new connection, and exits 0', async () => {
    const { server, mail, answers, exited } = await loaded();
    try {
      server.child.kill('SIGTERM');
      await eventually(
        async () =>
          await fetch(`${server.url}/healthz`).then(
            () => false,
            () => true,
          ),
        'new connections refused',
      );
      mail.release();
      expect(await Promise.all(answers)).toEqual([201, 201, 201, 201, 201, 201]);
      expect(await exited).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
      await mail.close();
    }
  }, 90_000);

  it('closes what is still open after SHUTDOWN_TIMEOUT_MS, and exits', async () => {
    const { server, mail, answers, exited } = await loaded({ SHUTDOWN_TIMEOUT_MS: '500' });
    try {
      server.child.kill('SIGTERM');
      // the sends never end: the deadline closes their connections
      expect(await Promise.all(answers)).toEqual(Array(6).fill('no answer'));
      expect(await exited).not.toBeNull();
    } finally {
      server.child.kill('SIGKILL');
      mail.release();
      await mail.close();
    }
  }, 90_000);
});
