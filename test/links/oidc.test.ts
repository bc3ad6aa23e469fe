/**
 * The OpenID Connect providers of social sign-in are addresses the server fetches: they pass the
 * webhooks' address guard (as written, and on the address connected to after DNS) unless
 * OIDC_ALLOW_PRIVATE=true, and a provider that hangs costs a sign-in OIDC_TIMEOUT_MS, not 30 s.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';
import { isPrivateAddress } from '../../src/net/guard';
import { firstRequest } from '../../src/serve';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { testService, type TestService } from '../support/service';

/** A TCP listener that accepts and never answers; counts the connections it took. */
async function silentListener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => void sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => sockets.length,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const provider = (issuer: string) => ({
  auth_types: ['email', 'social'],
  oidc_providers: [{ id: 'corp', name: 'Corp ID', issuer, client_id: 'paperlink', client_secret: 's3cret' }],
});

async function socialLink(t: TestService): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/generate',
    headers: { 'x-service-api-token': t.key },
    payload: {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: firstRequest().merge_parameters,
      destinations: {
        magic_link: { recipient_email: 'pat@example.com', auth_type: 'social', expire_after_n_views: 3 },
      },
    },
  });
  expect(res.statusCode).toBe(201);
  return new URL(res.json().destinations.magic_link.url as string).pathname;
}

describe('OpenID Connect providers and the address guard', () => {
  let t: TestService;
  let listener: Awaited<ReturnType<typeof silentListener>>;
  beforeAll(async () => {
    t = await testService();
    listener = await silentListener();
  });
  afterAll(async () => {
    await listener?.close();
    await t?.stop();
  });

  const configure = (issuer: string) =>
    t.app.inject({
      method: 'PUT',
      url: '/v1/apps/magic_link',
      headers: { 'x-service-api-token': t.key },
      payload: provider(issuer),
    });

  it('refuses an issuer on a loopback, private or link-local address, as written', async () => {
    for (const issuer of [
      `http://127.0.0.1:${listener.port}`,
      'http://localhost:8080/realms/x',
      'http://localhost.:8080',
      'https://10.1.2.3',
      'https://169.254.169.254/latest',
      'https://[::ffff:127.0.0.1]',
      'https://[fd00::1]',
    ]) {
      const res = await configure(issuer);
      expect({ issuer, status: res.statusCode }).toEqual({ issuer, status: 422 });
      expect(res.json().error).toMatchObject({
        code: 'validation_failed',
        details: [{ field: 'oidc_providers[0].issuer', code: 'invalid' }],
      });
      expect(res.json().error.details[0].message).toContain('OIDC_ALLOW_PRIVATE');
    }
    expect((await configure('https://accounts.google.com')).statusCode).toBe(200);
  });

  it('never connects to a name that resolves to a private address when a recipient signs in', async () => {
    // this machine's own name resolves to one of its addresses: loopback or private
    const name = os.hostname();
    const addresses = await dns.lookup(name, { all: true });
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((a) => isPrivateAddress(a.address))).toBe(true);
    expect((await configure(`https://${name}:${listener.port}`)).statusCode).toBe(200);
    const page = await socialLink(t);
    const res = await t.app.inject({ method: 'POST', url: `${page}/signin/corp` });
    expect(res.statusCode).toBe(502);
    expect(listener.connections()).toBe(0);
  });
});

describe('an OpenID Connect provider that never answers', () => {
  let t: TestService;
  let listener: Awaited<ReturnType<typeof silentListener>>;
  beforeAll(async () => {
    t = await testService({ config: { oidcAllowPrivate: true, oidcTimeoutMs: 300 } });
    listener = await silentListener();
  });
  afterAll(async () => {
    await listener?.close();
    await t?.stop();
  });

  it('costs the sign-in OIDC_TIMEOUT_MS and a 502 page, with OIDC_ALLOW_PRIVATE=true letting it be on loopback', async () => {
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/apps/magic_link',
      headers: { 'x-service-api-token': t.key },
      payload: provider(`http://127.0.0.1:${listener.port}`),
    });
    expect(put.statusCode).toBe(200);
    const page = await socialLink(t);
    // the provider holds the connection open for ever: only the timeout ends the sign-in
    const res = await t.app.inject({ method: 'POST', url: `${page}/signin/corp` });
    expect(res.statusCode).toBe(502);
    expect(listener.connections()).toBe(1);
    // openid-client's own timeout is 30 s: this test's 15 s fail without OIDC_TIMEOUT_MS
  }, 15_000);
});
