/**
 * Every Magic Link is e-mailed, once, whatever happens to the process that made it: the server
 * (its own process) is killed with SIGKILL while it is e-mailing three links (the mail server holds
 * the messages); on SQLite it is restarted, on PostgreSQL a second server that runs beside it takes
 * over; each link is then e-mailed exactly once, with a URL that opens.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sqliteModuleName } from '../../src/db/sqlite-module';
import { root } from '../support/fixtures';
import { cliJs, serveProcess } from '../support/serve';
import { eventually } from '../support/eventually';
import { holdingSmtp } from '../support/smtp';
import { freshPostgres } from '../support/service';
import { Client } from 'pg';

/** Each link's send_attempts, read from the database. */
async function sendAttempts(backend: 'sqlite' | 'postgres', dataDir: string, databaseUrl?: string): Promise<number[]> {
  if (backend === 'postgres') {
    const c = new Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      return (await c.query<{ send_attempts: number }>('select send_attempts from magic_links order by id')).rows.map(
        (r) => r.send_attempts,
      );
    } finally {
      await c.end();
    }
  }
  const db = spawnSync(
    'node',
    [
      '-e',
      `const D=require(${JSON.stringify(path.join(root, 'node_modules', sqliteModuleName))});const d=new D(${JSON.stringify(path.join(dataDir, 'paperlink.db'))},{readonly:true});console.log(JSON.stringify(d.prepare('select send_attempts from magic_links order by id').all()))`,
    ],
    { encoding: 'utf8' },
  );
  return (JSON.parse(db.stdout) as { send_attempts: number }[]).map((r) => r.send_attempts);
}

describe.each(['sqlite', 'postgres'] as const)('a server killed while it e-mails Magic Links (%s)', (backend) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-link-crash-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it(
    backend === 'sqlite'
      ? 'e-mails every link once after the restart, with a URL that opens'
      : 'e-mails every link once from the server beside it, with a URL that opens',
    async () => {
      const mail = await holdingSmtp();
      const env: Record<string, string> = {
        SMTP_URL: mail.url,
        ...(backend === 'postgres' ? { DATABASE_URL: await freshPostgres() } : {}),
      };
      const key = spawnSync(process.execPath, [cliJs, 'keys', 'create', '--name', 'crash', '--data-dir', dataDir], {
        encoding: 'utf8',
        env: { ...process.env, ...env, NODE_OPTIONS: '' },
      }).stdout.trim();
      let server = await serveProcess(dataDir, env);
      const beside = backend === 'postgres' ? await serveProcess(dataDir, env) : undefined;
      try {
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
        const recipients = ['one@example.com', 'two@example.com', 'three@example.com'];
        // each request hangs in its send: the mail server holds the message
        const pending = recipients.map((to) =>
          fetch(`${server.url}/v1/generate`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              template_id: 'tmpl_example_letter',
              merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
              destinations: { magic_link: { recipient_email: to, expire_after_n_views: 2 } },
            }),
          }).catch(() => undefined),
        );
        // every message whole at the mail server and held there, so none can be accepted after the kill
        await eventually(async () => mail.held() === 3, 'three e-mails held at the mail server');
        server.child.kill('SIGKILL');
        await Promise.all(pending);

        mail.take();
        server = beside ?? (await serveProcess(dataDir, env));
        await eventually(async () => mail.received.length >= 3, 'the links e-mailed after the restart', 30);
        const links = (
          (await (await fetch(`${server.url}/v1/magic_links`, { headers })).json()) as {
            data: { id: string; recipient_email: string; sent_at: string | null; status: string }[];
          }
        ).data;
        expect(links.map((l) => l.status)).toEqual(['active', 'active', 'active']);
        for (const to of recipients) {
          const messages = mail.received.filter((m) => m.includes(`To: ${to}`));
          expect(messages).toHaveLength(1);
          // the restarted server listens on another port; the token is what must still open
          const token = /\/l\/([0-9A-Za-z]+)/.exec(messages[0])![1];
          expect((await fetch(`${server.url}/l/${token}`, { redirect: 'manual' })).status).toBe(200);
        }
        // each link was sent by one attempt (a second send would count a second one)
        expect(await sendAttempts(backend, dataDir, env.DATABASE_URL)).toEqual([1, 1, 1]);
      } finally {
        server.child.kill('SIGTERM');
        await mail.close();
      }
    },
    60_000,
  );
});
