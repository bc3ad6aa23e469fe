/**
 * Social sign-in for Magic Links: the authorization code flow with PKCE, state and nonce, through
 * openid-client, against any OpenID Connect provider the operator configured. The provider's
 * verified e-mail must equal the link's auth_email (case-insensitive).
 */
import * as client from 'openid-client';
import type { GuardedFetch } from '../net/guard';
import type { OidcProvider } from './app';

export interface LoginStart {
  url: string;
  /** What the callback needs back: kept in a short-lived HttpOnly cookie, never in the database. */
  pending: { provider: string; state: string; verifier: string; nonce: string };
}

export type LoginResult =
  { ok: true; email: string } | { ok: false; reason: 'unverified' | 'no_email'; email?: string };

/** Loopback issuers may use plain http (local and test providers); every other issuer must use https. */
function isLoopback(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
}

export class SocialLogin {
  private readonly configs = new Map<string, Promise<client.Configuration>>();

  /** `fetch`: every request to a provider goes through it (the address guard and timeout of src/net/guard.ts). */
  constructor(private readonly fetch: GuardedFetch) {}

  private config(p: OidcProvider): Promise<client.Configuration> {
    const key = `${p.id}|${p.issuer}|${p.client_id}|${p.client_secret ?? ''}`;
    let c = this.configs.get(key);
    if (!c) {
      const issuer = new URL(p.issuer);
      c = client.discovery(issuer, p.client_id, p.client_secret, undefined, {
        [client.customFetch]: this.fetch,
        ...(issuer.protocol === 'http:' && isLoopback(issuer) ? { execute: [client.allowInsecureRequests] } : {}),
      });
      this.configs.set(key, c);
      c.catch(() => this.configs.delete(key));
    }
    return c;
  }

  /**
   * The provider's sign-in page for this recipient. `chooseAccount`: the provider shows its
   * account chooser (`prompt=select_account`) instead of reusing the account it is signed in
   * with, for a recipient who signed in with the wrong one.
   */
  async start(p: OidcProvider, redirectUri: string, loginHint: string, chooseAccount = false): Promise<LoginStart> {
    const config = await this.config(p);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      login_hint: loginHint,
      ...(chooseAccount ? { prompt: 'select_account' } : {}),
    });
    return { url: url.href, pending: { provider: p.id, state, verifier, nonce } };
  }

  /** Exchanges the code and reads the verified e-mail from the ID token. Throws on a bad or replayed response. */
  async finish(p: OidcProvider, callbackUrl: URL, pending: LoginStart['pending']): Promise<LoginResult> {
    const config = await this.config(p);
    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.verifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    let claims: Record<string, unknown> | undefined = tokens.claims();
    // many providers put the e-mail only in the userinfo answer, not in the ID token
    if (typeof claims?.email !== 'string' && typeof claims?.sub === 'string' && tokens.access_token) {
      claims = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    }
    const email = typeof claims?.email === 'string' ? claims.email : undefined;
    if (!email) return { ok: false, reason: 'no_email' };
    if (claims?.email_verified !== true) return { ok: false, reason: 'unverified', email };
    return { ok: true, email };
  }
}
