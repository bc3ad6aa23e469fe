// A real OpenID Connect provider (panva's oidc-provider) for the social sign-in tests, run as its own
// process (it is an ES module). Any login works with any password; the login is the e-mail, and
// logins starting with "unverified" have email_verified=false. Like Google's, it shows an account
// chooser when asked (prompt=select_account), even to a browser already signed in.
// Usage: node oidc-provider.mjs <redirect_uri>   -> prints {"issuer": "..."} when listening
import http from 'node:http';
import Provider, { interactionPolicy } from 'oidc-provider';

const redirectUri = process.argv[2];
const server = http.createServer();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const issuer = `http://127.0.0.1:${server.address().port}`;
// select_account: a prompt the client may ask for, answered by the chooser below
const policy = interactionPolicy.base();
policy.add(new interactionPolicy.Prompt({ name: 'select_account', requestable: true }), 0);
const provider = new Provider(issuer, {
  interactions: { policy },
  clients: [
    {
      client_id: 'paperlink',
      client_secret: 'paperlink-test-secret',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      claims: async () => ({ sub: id, email: id, email_verified: !id.startsWith('unverified') }),
    };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['paperlink-test-cookie-key'] },
  pkce: { required: () => true },
});
provider.on('server_error', (_ctx, err) => console.error('oidc server_error', err));
const callback = provider.callback();
const page = (body) => `<!doctype html><html><head><title>Choose an account</title></head><body>${body}</body></html>`;
server.on('request', async (req, res) => {
  const at = /^\/interaction\/([^/?]+)(\/choose)?/.exec(req.url);
  if (at) {
    let details;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      details = undefined;
    }
    if (details?.prompt.name === 'select_account') {
      if (req.method === 'POST' && at[2]) {
        let body = '';
        for await (const c of req) body += c;
        const login = new URLSearchParams(body).get('login');
        await provider.interactionFinished(
          req,
          res,
          { select_account: {}, login: { accountId: login } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        page(
          `<h1>Choose an account</h1><form method="post" action="/interaction/${at[1]}/choose"><label>Account <input name="login" id="login" value=""></label><button type="submit">Use this account</button></form>`,
        ),
      );
      return;
    }
  }
  callback(req, res);
});
console.log(JSON.stringify({ issuer }));
