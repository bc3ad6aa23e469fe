/// <reference lib="dom" />
/**
 * Social sign-in, end to end: a real OpenID Connect provider (oidc-provider) on localhost, the
 * service, and headless Chromium clicking through the provider's login and consent pages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { closePage, launchChromium } from '../support/browser';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { testService, type TestService } from '../support/service';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

function startProvider(redirectUri: string): Promise<{ child: ChildProcess; issuer: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, '../support/oidc-provider.mjs'), redirectUri], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve({ child, issuer: (JSON.parse(line) as { issuer: string }).issuer });
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => reject(new Error(`oidc-provider exited with ${code}: ${out}`)));
  });
}

describe('social sign-in through an OpenID Connect provider', () => {
  let t: TestService;
  let mail: Mailbox;
  let browser: Browser;
  let provider: { child: ChildProcess; issuer: string };
  let n = 0;
  let base: string;

  beforeAll(async () => {
    mail = await startSmtp();
    t = await testService({ config: { smtpUrl: mail.url, oidcAllowPrivate: true } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    provider = await startProvider(`${base}/l/oidc/callback`);
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/apps/magic_link',
      headers: { 'x-service-api-token': t.key },
      payload: {
        public_url: base,
        auth_types: ['email', 'social'],
        oidc_providers: [
          {
            id: 'testid',
            name: 'Test ID',
            issuer: provider.issuer,
            client_id: 'paperlink',
            client_secret: 'paperlink-test-secret',
          },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().oidc_providers[0]).toEqual({
      id: 'testid',
      name: 'Test ID',
      issuer: provider.issuer,
      client_id: 'paperlink',
      client_secret_set: true,
    });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    provider?.child.kill();
    await t?.stop();
    await mail?.close();
  });

  async function share(authEmail: string, more: Record<string, unknown> = {}): Promise<{ url: string; id: string }> {
    const to = `social${++n}@example.com`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcard,
        destinations: {
          magic_link: {
            recipient_email: to,
            auth_email: authEmail,
            auth_type: 'social',
            expire_after_n_views: 3,
            ...more,
          },
        },
      },
    });
    expect(res.statusCode).toBe(201);
    return { url: linkIn(await mail.next(to)), id: res.json().magic_link_piece_id };
  }

  /** Clicks through our page and the provider's login and consent pages as `login`. */
  async function signInAs(page: Page, url: string, login: string): Promise<void> {
    await page.goto(url);
    await page.getByRole('button', { name: 'Sign in with Test ID' }).click();
    await page.waitForSelector('input[name="login"]');
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', 'any password');
    await page.click('button[type="submit"]');
    await page.waitForLoadState();
    if (await page.locator('button:has-text("Continue")').count()) await page.click('button:has-text("Continue")');
    await page.waitForURL((u) => !u.href.startsWith(provider.issuer), { timeout: 20_000 });
  }

  it('lets the recipient in when the verified e-mail is the auth_email (in any case)', async () => {
    const { url, id } = await share('Pat.Lee@example.com');
    const page = await browser.newPage();
    try {
      await signInAs(page, url, 'pat.lee@example.com');
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      expect(page.url()).toBe(url);
      const log = (
        await t.app.inject({ method: 'GET', url: `/v1/magic_links/${id}`, headers: { 'x-service-api-token': t.key } })
      ).json().access_log;
      expect(log).toContainEqual(
        expect.objectContaining({ kind: 'signed_in', outcome: 'ok', email: 'pat.lee@example.com' }),
      );
      expect(log).toContainEqual(expect.objectContaining({ kind: 'viewed', outcome: 'ok' }));
    } finally {
      await closePage(page);
    }
  });

  it('refuses another account with a clear page, and an unverified address', async () => {
    const { url } = await share('pat@example.com');
    for (const [login, says] of [
      ['mallory@example.com', 'You signed in as mallory@example.com'],
      ['unverified-pat@example.com', 'has not verified the address unverified-pat@example.com'],
    ]) {
      const context = await browser.newContext();
      const page = await context.newPage();
      try {
        const answers: number[] = [];
        page.on('response', (r) => {
          if (r.url().includes('/l/oidc/callback')) answers.push(r.status());
        });
        await signInAs(page, url, login);
        await expect(
          page.getByRole('heading', { name: 'This account cannot open the document' }).isVisible(),
        ).resolves.toBe(true);
        expect(answers).toEqual([403]);
        await expect(page.textContent('main')).resolves.toContain(says);
        expect(await page.locator('body[data-rendered]').count()).toBe(0);
      } finally {
        await context.close();
      }
    }
  });

  it('lets in the accounts of the addresses and domains a link allows, and no others', async () => {
    const { url, id } = await share('pat@example.com', { allowed_viewers: ['@partner.example'] });
    for (const [login, opens] of [
      ['sam@partner.example', true],
      ['eve@sub.partner.example', false],
    ] as const) {
      const context = await browser.newContext();
      const page = await context.newPage();
      try {
        await signInAs(page, url, login);
        if (opens) await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
        else
          await expect(page.textContent('main')).resolves.toContain(
            `You signed in as ${login}, which this document was not shared with`,
          );
      } finally {
        await context.close();
      }
    }
    const link = (
      await t.app.inject({ method: 'GET', url: `/v1/magic_links/${id}`, headers: { 'x-service-api-token': t.key } })
    ).json();
    expect(link.viewers).toEqual([expect.objectContaining({ email: 'sam@partner.example', views: 1 })]);
  });

  it('offers another account after the wrong one, and the provider then shows its account chooser', async () => {
    const { url } = await share('sam@example.com');
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signInAs(page, url, 'mallory@example.com');
      await expect(
        page.getByRole('heading', { name: 'This account cannot open the document' }).isVisible(),
      ).resolves.toBe(true);
      // the browser is still signed in at the provider as mallory: without the chooser, a new
      // sign-in would come back as mallory again
      await page.getByRole('button', { name: 'Use another Test ID account' }).click();
      await page.waitForSelector('h1:has-text("Choose an account")');
      expect(new URL(page.url()).origin).toBe(new URL(provider.issuer).origin);
      await page.fill('input[name="login"]', 'sam@example.com');
      await page.click('button[type="submit"]');
      await page.waitForLoadState();
      if (await page.locator('button:has-text("Continue")').count()) await page.click('button:has-text("Continue")');
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      expect(page.url()).toBe(url);
    } finally {
      await context.close();
    }
  });

  it('sends the provider back to PUBLIC_URL when the app follows the server and the server moved', async () => {
    const put = (body: object) =>
      t.app.inject({
        method: 'PUT',
        url: '/v1/apps/magic_link',
        headers: { 'x-service-api-token': t.key },
        payload: body,
      });
    const before = t.service.apps.magicLink.serverUrl;
    expect((await put({ public_url: null })).statusCode).toBe(200);
    // what `serve` does at start with PUBLIC_URL=https://docs.example.com
    t.service.apps.magicLink.serverUrl = 'https://docs.example.com';
    try {
      const { url } = await share('someone@example.com');
      expect(url).toMatch(/^https:\/\/docs\.example\.com\/l\//);
      const started = await t.app.inject({ method: 'POST', url: `${new URL(url).pathname}/signin/testid` });
      expect(started.statusCode).toBe(303);
      const to = new URL(String(started.headers.location));
      expect(to.origin).toBe(new URL(provider.issuer).origin);
      expect(to.searchParams.get('redirect_uri')).toBe('https://docs.example.com/l/oidc/callback');
    } finally {
      t.service.apps.magicLink.serverUrl = before;
      expect((await put({ public_url: base })).statusCode).toBe(200);
    }
  });

  it('refuses a callback without the sign-in cookie (a forged or replayed redirect)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/l/oidc/callback?code=abc&state=def' });
    expect(res.statusCode).toBe(400);
  });
});
