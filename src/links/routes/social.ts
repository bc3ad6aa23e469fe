/**
 * Signing in with an OpenID Connect provider: POST /l/<token>/signin/<provider> sends the recipient
 * there, GET /l/oidc/callback checks who came back and starts the session.
 */
import type { FastifyPluginAsync } from 'fastify';
import { allows, hasList } from '../model';
import { SocialLogin } from '../oidc';
import { guardedFetch } from '../../net/guard';
import type { Service } from '../../service';
import { messagePage } from '../../http/pages';
import { brandOf, maskEmail } from '../pages';
import { recipientKit } from './recipient';

const OIDC_COOKIE = 'paperlink_oidc';

export const socialRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { links } = service;
    const { secure, visitor, brand, show, gone, signIn, sessionCookie } = recipientKit(service);
    const social = new SocialLogin(
      guardedFetch({
        allowPrivate: service.config.oidcAllowPrivate,
        setting: 'OIDC_ALLOW_PRIVATE',
        timeoutMs: service.config.oidcTimeoutMs,
        maxBytes: 1024 * 1024,
      }),
    );
    app.post<{ Params: { token: string; provider: string }; Querystring: { another?: string } }>(
      '/l/:token/signin/:provider',
      async (req, reply) => {
        const { token, provider } = req.params;
        const link = await links.open(token, visitor(req));
        if (!link || link.row.auth_type !== 'social') return gone(reply);
        const p = link.app.oidc_providers.find((x) => x.id === provider);
        if (!p)
          return show(
            reply,
            404,
            signIn(link, token, { error: 'That sign-in provider is not available. Choose another one.' }),
          );
        let start;
        try {
          // ?another=1: after a sign-in with the wrong account, let the recipient choose another one
          start = await social.start(
            p,
            `${link.app.public_url}/l/oidc/callback`,
            link.row.auth_email,
            req.query.another === '1',
          );
        } catch (err) {
          req.log.warn({ err, provider: p.id }, 'OpenID Connect discovery failed');
          return show(
            reply,
            502,
            signIn(link, token, { error: `${p.name} cannot be reached right now. Try again in a minute.` }),
          );
        }
        const pending = Buffer.from(JSON.stringify({ t: token, ...start.pending })).toString('base64url');
        void reply.setCookie(OIDC_COOKIE, pending, {
          path: '/l/oidc',
          httpOnly: true,
          sameSite: 'lax',
          secure,
          maxAge: 600,
        });
        return reply.redirect(start.url, 303);
      },
    );

    app.get('/l/oidc/callback', async (req, reply) => {
      const raw = req.cookies[OIDC_COOKIE];
      void reply.clearCookie(OIDC_COOKIE, { path: '/l/oidc' });
      let pending: { t: string; provider: string; state: string; verifier: string; nonce: string };
      try {
        pending = JSON.parse(Buffer.from(raw ?? '', 'base64url').toString('utf8')) as typeof pending;
        if (typeof pending.t !== 'string' || typeof pending.state !== 'string') throw new Error('incomplete');
      } catch {
        return show(
          reply,
          400,
          messagePage(
            await brand(),
            'Sign-in did not complete',
            'Open the link from your e-mail again and sign in from there (this browser must allow cookies).',
          ),
        );
      }
      const link = await links.open(pending.t, visitor(req));
      if (!link || link.row.auth_type !== 'social') return gone(reply);
      const p = link.app.oidc_providers.find((x) => x.id === pending.provider);
      if (!p) return gone(reply);
      let result;
      try {
        result = await social.finish(p, new URL(req.url, link.app.public_url), pending);
      } catch (err) {
        req.log.warn(
          { err: err instanceof Error ? err.message : String(err), provider: p.id },
          'OpenID Connect sign-in failed',
        );
        await links.record(link.row.id, 'signed_in', 'failed', visitor(req));
        return show(
          reply,
          400,
          signIn(link, pending.t, { error: `Signing in with ${p.name} did not complete. Try again.` }),
        );
      }
      if (!result.ok || !allows(link.row, result.email)) {
        const email = result.ok ? result.email : result.email;
        await links.record(
          link.row.id,
          'signed_in',
          result.ok ? 'wrong_account' : result.reason,
          visitor(req),
          email ?? null,
        );
        const why =
          !result.ok && result.reason === 'unverified'
            ? `${p.name} has not verified the address ${email}.`
            : !result.ok
              ? `${p.name} did not tell us your e-mail address.`
              : hasList(link.row)
                ? `You signed in as ${email}, which this document was not shared with.`
                : `You signed in as ${email}, but this document was shared with ${maskEmail(link.row.auth_email)}.`;
        const another = { url: `/l/${pending.t}/signin/${p.id}?another=1`, label: `Use another ${p.name} account` };
        return show(
          reply,
          403,
          messagePage(
            brandOf(link.app),
            'This account cannot open the document',
            `${why} Sign in with the account of that address, or ask the sender to share it with you.`,
            another,
          ),
        );
      }
      await links.record(link.row.id, 'signed_in', 'ok', visitor(req), result.email);
      void sessionCookie(reply, pending.t, await links.startSession(link, result.email));
      return reply.redirect(`/l/${pending.t}`, 303);
    });
  };
