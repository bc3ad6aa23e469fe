/** Signing in by e-mailed code: POST /l/<token>/code sends one, POST /l/<token>/verify checks it and starts the session. */
import type { FastifyPluginAsync } from 'fastify';
import { RateLimitError } from '../../errors';
import { hasList } from '../model';
import type { Service } from '../../service';
import { messagePage } from '../../http/pages';
import { brandOf } from '../pages';
import { recipientKit } from './recipient';

export const codeRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { links } = service;
    const { visitor, show, gone, claimed, signIn, sessionCookie } = recipientKit(service);

    app.post<{ Params: { token: string }; Body: Record<string, unknown> | undefined }>(
      '/l/:token/code',
      async (req, reply) => {
        const { token } = req.params;
        const link = await links.open(token, visitor(req));
        if (!link || link.row.auth_type !== 'email') return gone(reply);
        const who = claimed(link, req.body?.email);
        if (!who)
          return show(reply, 422, signIn(link, token, { error: 'Enter your e-mail address, like name@example.com.' }));
        if (!who.allowed) {
          await links.record(link.row.id, 'code_requested', 'not_allowed', visitor(req), who.email);
          return show(
            reply,
            403,
            signIn(link, token, {
              error: `${who.email} cannot open this document. Use the address it was shared with, or ask the sender to add yours.`,
            }),
          );
        }
        try {
          await links.sendCode(link, visitor(req), who.email);
        } catch (err) {
          if (err instanceof RateLimitError)
            return show(
              reply.header('Retry-After', String(err.retryAfterSeconds)),
              429,
              messagePage(brandOf(link.app), 'Too many codes', err.message),
            );
          throw err;
        }
        return reply.redirect(
          `/l/${token}?sent=1${hasList(link.row) ? `&as=${encodeURIComponent(who.email)}` : ''}`,
          303,
        );
      },
    );

    app.post<{ Params: { token: string }; Body: Record<string, unknown> | undefined }>(
      '/l/:token/verify',
      async (req, reply) => {
        const { token } = req.params;
        const link = await links.open(token, visitor(req));
        if (!link || link.row.auth_type !== 'email') return gone(reply);
        const given = req.body?.code;
        const code = typeof given === 'string' ? given : '';
        const who = claimed(link, req.body?.email);
        // no code was sent to an address the link does not allow
        const result = who?.allowed
          ? await links.checkCode(link, code, visitor(req), who.email)
          : { error: 'expired' as const };
        if ('error' in result) {
          const message = {
            wrong: 'That code is not right. Check the e-mail and try again.',
            expired: 'That code has expired or was already used. Ask for a new one.',
            burned: 'Too many wrong tries: that code no longer works. Ask for a new one.',
          }[result.error];
          return show(
            reply,
            result.error === 'wrong' ? 401 : 410,
            signIn(link, token, { error: message, sentTo: result.error === 'wrong' ? who?.email : undefined }),
          );
        }
        void sessionCookie(reply, token, result.session);
        return reply.redirect(`/l/${token}`, 303);
      },
    );
  };
