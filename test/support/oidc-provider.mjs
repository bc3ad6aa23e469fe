// A real OpenID Connect provider (panva's oidc-provider) for the social sign-in tests, run as its own
// process (it is an ES module). Any login works with any password; the login is the e-mail, and
// logins starting with "unverified" have email_verified=false.
// Usage: node oidc-provider.mjs <redirect_uri>   -> prints {"issuer": "..."} when listening
import http from 'node:http';
import Provider from 'oidc-provider';

const redirectUri = process.argv[2];
const server = http.createServer();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const issuer = `http://127.0.0.1:${server.address().port}`;
const provider = new Provider(issuer, {
  clients: [{ client_id: 'paperlink', client_secret: 'paperlink-test-secret', redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
  async findAccount(_ctx, id) {
    return { accountId: id, claims: async () => ({ sub: id, email: id, email_verified: !id.startsWith('unverified') }) };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['paperlink-test-cookie-key'] },
  pkce: { required: () => true },
});
provider.on('server_error', (_ctx, err) => console.error('oidc server_error', err));
server.on('request', provider.callback());
console.log(JSON.stringify({ issuer }));
