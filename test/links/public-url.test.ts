/**
 * Where Magic Links point follows the server's address: a first start on a laptop sets the app up
 * for http://127.0.0.1:<port>; restarted with PUBLIC_URL, the next link points at PUBLIC_URL. An
 * address an operator set in the app stays, and the start says when it differs from PUBLIC_URL.
 */
import { spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closedPort } from '../support/net';
import { eventually } from '../support/eventually';
import { cliJs, serveProcess } from '../support/serve';
import { tempDir } from '../support/tmp';
import { EXAMPLE_IDS } from '../../src/templates/store';
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';
import { testService } from '../support/service';

const dataDir = tempDir();
const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('the address in Magic Links', () => {
  const key = () =>
    spawnSync(process.execPath, [cliJs, 'keys', 'create', '--name', 'public-url', '--data-dir', dataDir], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    }).stdout.trim();

  /** Makes a link through the API of the server on `port`; its URL. */
  const link = async (port: number, apiKey: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/generate`, {
      method: 'POST',
      headers: { 'x-service-api-token': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcard,
        destinations: { magic_link: { recipient_email: 'who@example.com', expire_after_n_views: 2 } },
      }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { destinations: { magic_link: { url: string } } }).destinations.magic_link.url;
  };
  const app = async (port: number, apiKey: string, body?: object) =>
    (
      await fetch(`http://127.0.0.1:${port}/v1/apps/magic_link`, {
        method: body ? 'PUT' : 'GET',
        headers: { 'x-service-api-token': apiKey, 'content-type': 'application/json' },
        body: body && JSON.stringify(body),
      })
    ).json() as Promise<{ public_url: string; public_url_follows_server: boolean }>;

  it('follows PUBLIC_URL across restarts unless an operator set an address, and says so at start', async () => {
    const port = await closedPort();
    const apiKey = key();
    // the first start, on a laptop: the app is set up for the local address
    const first = await serveProcess(dataDir, {}, 1, port);
    try {
      expect(await link(port, apiKey)).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/l/`));
    } finally {
      await stop(first.child);
    }

    // deployed behind a proxy: the next link points at PUBLIC_URL
    const deployed = await serveProcess(dataDir, { PUBLIC_URL: 'https://docs.example.com' }, 1, port);
    try {
      expect(await link(port, apiKey)).toMatch(/^https:\/\/docs\.example\.com\/l\/[0-9A-Za-z]+$/);
      expect(await app(port, apiKey)).toMatchObject({
        public_url: 'https://docs.example.com',
        public_url_follows_server: true,
      });
      // an address set by an operator wins over PUBLIC_URL
      expect(await app(port, apiKey, { public_url: 'https://links.acme.example/' })).toMatchObject({
        public_url: 'https://links.acme.example',
        public_url_follows_server: false,
      });
      expect(await link(port, apiKey)).toMatch(/^https:\/\/links\.acme\.example\/l\//);
    } finally {
      await stop(deployed.child);
    }

    // ... and the next start says that the two differ, and how to follow PUBLIC_URL again
    const again = await serveProcess(dataDir, { PUBLIC_URL: 'https://docs.example.com' }, 1, port);
    try {
      await eventually(
        async () => again.output().includes('Magic Links point at https://links.acme.example'),
        'the mismatch said at start',
      );
      expect(await app(port, apiKey, { public_url: null })).toMatchObject({
        public_url: 'https://docs.example.com',
        public_url_follows_server: true,
      });
      expect(await link(port, apiKey)).toMatch(/^https:\/\/docs\.example\.com\/l\//);
    } finally {
      await stop(again.child);
    }
  }, 90_000);

  it("reads an address stored by a first start of an earlier version as the server's when it is a loopback one", async () => {
    const t = await testService({ config: { publicUrl: 'https://docs.example.com' } });
    try {
      const old = (publicUrl: string) =>
        JSON.stringify({
          public_url: publicUrl,
          sender_name: 'Paperlink',
          sender_email: 'p@example.com',
          organization_name: 'Acme',
          logo_url: null,
          accent_color: '#1F6FEB',
          auth_types: ['email'],
          oidc_providers: [],
          configured_at: '2026-11-01T00:00:00.000Z',
        });
      const store = async (value: string) => {
        await t.service.database.db
          .insertInto('settings')
          .values({ key: 'app:magic_link', value })
          .onConflict((c) => c.column('key').doUpdateSet({ value }))
          .execute();
        t.service.apps.magicLink.serverUrl = 'https://docs.example.com';
      };
      await store(old('http://127.0.0.1:3000'));
      expect(await t.service.apps.magicLink.get()).toMatchObject({
        public_url: 'https://docs.example.com',
        public_url_follows_server: true,
      });
      await store(old('https://links.acme.example'));
      expect(await t.service.apps.magicLink.get()).toMatchObject({
        public_url: 'https://links.acme.example',
        public_url_follows_server: false,
      });
      // the server's own address typed into a form (the web app's Settings send every field) keeps following it
      expect(await t.service.apps.magicLink.put({ public_url: 'https://docs.example.com/' })).toMatchObject({
        public_url_follows_server: true,
      });
      t.service.apps.magicLink.serverUrl = 'https://moved.example.com';
      expect(await t.service.apps.magicLink.get()).toMatchObject({ public_url: 'https://moved.example.com' });
    } finally {
      await t.stop();
    }
  });
});
