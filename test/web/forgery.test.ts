/**
 * Cross-site forgery on the web app: a form sent from another site is refused by its `Origin`
 * (or `Sec-Fetch-Site`) even with a valid token, and the sign-in form's token is the server's HMAC
 * of its cookie, so a cookie and field an attacker chose to match are refused.
 */
import { webSession, testService, type TestService } from '../support/service';

describe('the web app refuses forged forms', () => {
  let t: TestService;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    t = await testService({ config: { publicUrl: 'https://docs.example.com' } });
    cookie = await webSession(t.app, t.key);
    const page = await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
    csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1];
  });
  afterAll(() => t?.stop());

  const makeKey = (name: string, headers: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url: '/app/settings/credentials',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams({ kind: 'api', name, _csrf: csrf }).toString(),
    });
  const names = async () => (await t.service.keys.list('api')).map((k) => k.name);

  // taken: the key is made and the answer is the redirect that shows it once (303)
  it('takes a form whose Origin is this server, by PUBLIC_URL or by the host it was sent to', async () => {
    expect((await makeKey('from public url', { origin: 'https://docs.example.com' })).statusCode).toBe(303);
    expect((await makeKey('from host', { origin: 'http://localhost:80', host: 'localhost:80' })).statusCode).toBe(303);
    expect((await makeKey('same origin', { 'sec-fetch-site': 'same-origin' })).statusCode).toBe(303);
    expect((await makeKey('not a browser', {})).statusCode).toBe(303);
    expect(await names()).toEqual(
      expect.arrayContaining(['from public url', 'from host', 'same origin', 'not a browser']),
    );
  });

  it('refuses a form with a valid token sent from another site', async () => {
    const forged: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'https://docs.example.com.evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of forged) {
      const res = await makeKey(`forged ${JSON.stringify(headers)}`, headers);
      expect({ headers, status: res.statusCode }).toEqual({ headers, status: 403 });
    }
    // the sign-out is a state change too
    const signOut = await t.app.inject({
      method: 'POST',
      url: '/app/signout',
      headers: { cookie, origin: 'https://evil.example' },
    });
    expect(signOut.statusCode).toBe(403);
    expect((await names()).filter((n) => n.startsWith('forged'))).toEqual([]);
    expect((await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } })).statusCode).toBe(200);
  });

  it("refuses a sign-in whose cookie and field match each other but not the server's key", async () => {
    const signIn = (pre: string, token: string) =>
      t.app.inject({
        method: 'POST',
        url: '/app/signin',
        headers: { cookie: `paperlink_signin=${pre}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ secret: t.key, _csrf: token, next: '/app' }).toString(),
      });
    expect((await signIn('chosen-by-attacker', 'chosen-by-attacker')).statusCode).toBe(403);
    // the server's own form: the cookie's value and the HMAC in the field
    const form = await t.app.inject({ method: 'GET', url: '/app/signin' });
    const pre = form.cookies.find((c) => c.name === 'paperlink_signin')!.value;
    const token = /name="_csrf" value="([^"]+)"/.exec(form.body)![1];
    expect(token).not.toBe(pre);
    expect((await signIn(pre, pre)).statusCode).toBe(403);
    expect((await signIn(pre, token)).statusCode).toBe(303);
  });
});
