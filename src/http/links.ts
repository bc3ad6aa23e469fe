/**
 * Magic Link routes: the operator's API under /v1 (behind the API key) and the recipient's pages
 * under /l/<token> (behind the e-mailed code or a social sign-in, then a session cookie).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError, PaperlinkError, RateLimitError } from '../errors';
import { parseReport } from '../links/pagetimes';
import type { Grant, OpenLink, Visitor } from '../links';
import { allows, hasList, settingsOf } from '../links/model';
import { isEmail } from '../guards';
import { watermarkText } from '../links/policy';
import type { Stamp } from '../templates/viewcopy';
import { publicView } from '../links/app';
import type { StorageApp } from '../documents/retention';
import { SocialLogin } from '../links/oidc';
import { guardedFetch } from '../net/guard';
import type { Service } from '../service';
import { contentDisposition, pageHeaders } from './headers';
import {
  answer,
  described,
  errors,
  exampleDocument,
  IdParams,
  List,
  MagicLinkAppSchema,
  MagicLinkSchema,
  MagicLinkSettingsSchema,
  oneOf,
  StorageAppSchema,
  PageQuery,
  pageOf,
} from './schemas';
import { brandOf, maskEmail, messagePage, signInPage, unavailablePage, viewerPage } from './pages';

const COOKIE = 'paperlink_link';
const OIDC_COOKIE = 'paperlink_oidc';

/** Replaces link tokens in a URL, so that logs never hold them. */
export function redactUrl(url: string): string {
  // also drop the query: the sign-in callback carries the provider's one-time code
  return url.startsWith('/l/') ? url.replace(/[?#].*$/, '').replace(/^\/l\/[^/]+/, '/l/[token]') : url;
}

/** The operator's Magic Link API (/v1/apps/magic_link, /v1/magic_links, a document's links) and the recipient's pages (/l/…). */
export const linkRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { links } = service;
    const secure = service.config.publicUrl.startsWith('https://');
    const visitor = (req: FastifyRequest): Visitor => ({ ip: req.ip, userAgent: req.headers['user-agent'] });
    const brand = async () => brandOf(await service.apps.magicLink.get());

    // ---- operator ----
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['Magic Links'];
    const linkParams = IdParams('Magic Link', 'ml_01m82kzq5az78r9b7p2fxgxka8');
    api.get(
      '/v1/apps/magic_link',
      {
        schema: {
          operationId: 'getMagicLinkApp',
          tags,
          summary: 'The Magic Link app settings (provider secrets are never shown)',
          response: { 200: answer(MagicLinkAppSchema, 'The settings.'), ...errors(401, 409) },
        },
      },
      async () => {
        const current = await service.apps.magicLink.require();
        return { object: 'app', name: 'magic_link', ...publicView(current) };
      },
    );
    api.put(
      '/v1/apps/magic_link',
      {
        schema: {
          operationId: 'setUpMagicLinkApp',
          tags,
          summary: 'Set up the Magic Link app; fields left out keep their value',
          body: described(MagicLinkAppSchema, {
            public_url: 'https://docs.example.com',
            sender_name: 'Acme Billing',
            sender_email: 'billing@example.com',
            organization_name: 'Acme',
            accent_color: '#1F6FEB',
            auth_types: ['email'],
          }),
          response: { 200: answer(MagicLinkAppSchema, 'Saved.'), ...errors(400, 401, 409, 415, 422) },
        },
      },
      async (req) => {
        const saved = await service.apps.magicLink.put(req.body);
        return { object: 'app', name: 'magic_link', ...publicView(saved) };
      },
    );
    const storageApp = (app: StorageApp) => ({ object: 'app' as const, name: 'inkit_storage' as const, ...app });
    api.get(
      '/v1/apps/inkit_storage',
      {
        schema: {
          operationId: 'getStorageApp',
          tags: ['Documents'],
          summary: 'The storage settings: how long documents are kept by default',
          response: { 200: answer(StorageAppSchema, 'The settings.'), ...errors(401) },
        },
      },
      async () => storageApp(await service.apps.storage.get()),
    );
    api.put(
      '/v1/apps/inkit_storage',
      {
        schema: {
          operationId: 'setUpStorageApp',
          tags: ['Documents'],
          summary: 'Set how long documents are kept when a generate request does not say',
          body: described(StorageAppSchema, { retain_for: { days: 90 } }),
          response: { 200: answer(StorageAppSchema, 'Saved.'), ...errors(400, 401, 409, 415, 422) },
        },
      },
      async (req) => storageApp(await service.apps.storage.put(req.body)),
    );
    api.post(
      '/v1/documents/:id/magic_links',
      {
        schema: {
          operationId: 'createMagicLink',
          tags,
          summary: 'Share a stored document with a new Magic Link, e-mailed to the recipient',
          params: IdParams('document', exampleDocument.id),
          body: described(MagicLinkSettingsSchema, {
            recipient_email: 'ann@example.com',
            expire_after_n_views: 3,
            retain_from_created: { hours: 24 },
          }),
          response: {
            201: answer(
              MagicLinkSchema,
              'Made and e-mailed (status `send_failed` when the e-mail could not be sent; it is retried).',
            ),
            ...errors(401, 404, 409, 422),
          },
        },
      },
      async (req, reply) => {
        const { link, url } = await service.documents.share(req.params.id, req.body, req.apiKey?.id ?? null);
        return reply.status(201).send({ ...link, url });
      },
    );
    const text = (description: string) => Type.Optional(Type.String({ maxLength: 254, description }));
    // a date, or a date and time (a time without a zone is UTC): src/links list()
    const isoTime = (description: string) =>
      Type.Optional(
        Type.String({
          pattern:
            '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])(T([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$',
          description,
        }),
      );
    api.get(
      '/v1/magic_links',
      {
        schema: {
          operationId: 'listMagicLinks',
          tags,
          summary: 'List Magic Links, newest first',
          querystring: Type.Composite([
            PageQuery,
            Type.Object({
              status: Type.Optional(
                oneOf(['active', 'send_failed', 'expired', 'revoked'], { description: 'Only links with this status.' }),
              ),
              document_id: text('Only the links of this document.'),
              recipient_email: text('Only the links sent to this address.'),
              created_after: isoTime(
                'Only links made at or after this time (ISO 8601: 2026-11-23 or 2026-11-23T10:00:00Z).',
              ),
              created_before: isoTime('Only links made before this time (ISO 8601).'),
            }),
          ]),
          response: { 200: { ...List('MagicLink'), description: 'A page of links.' }, ...errors(401, 422) },
        },
      },
      async (req) => {
        const q = req.query;
        return links.list(pageOf(q), {
          status: q.status,
          document_id: q.document_id || undefined,
          recipient_email: q.recipient_email || undefined,
          created_after: q.created_after || undefined,
          created_before: q.created_before || undefined,
        });
      },
    );
    api.post(
      '/v1/magic_links/expire',
      {
        schema: {
          operationId: 'expireMagicLinks',
          tags,
          summary: 'Revoke several Magic Links now',
          description:
            'Every id must name a link, else 422 with one detail per unknown id and nothing is revoked. Links that already ended are returned as they are. Each link is revoked on its own: sending the same request again is safe.',
          body: Type.Object(
            { ids: Type.Array(Type.String(), { minItems: 1, maxItems: 100 }) },
            { additionalProperties: false, examples: [{ ids: ['ml_01m82kzq5az78r9b7p2fxgxka8'] }] },
          ),
          response: {
            200: Type.Object(
              { object: Type.Literal('list'), data: Type.Array(Type.Ref(MagicLinkSchema)) },
              { description: 'The links, in the order of their first mention.' },
            ),
            ...errors(401, 422),
          },
        },
      },
      async (req) => ({ object: 'list' as const, data: await links.endMany(req.body) }),
    );
    api.get(
      '/v1/magic_links/:id',
      {
        schema: {
          operationId: 'getMagicLink',
          tags,
          summary: 'A Magic Link: status, views used and left, deadlines, access log',
          params: linkParams,
          response: { 200: answer(MagicLinkSchema, 'The link.'), ...errors(401, 404) },
        },
      },
      async (req) => links.get(req.params.id, true),
    );
    api.get(
      '/v1/magic_links/:id/access_log',
      {
        schema: {
          operationId: 'listMagicLinkAccessLog',
          tags,
          summary: "A Magic Link's access log, newest first, a page at a time",
          params: linkParams,
          querystring: PageQuery,
          response: {
            200: { ...List('AccessEntry'), description: 'A page of access-log entries.' },
            ...errors(401, 404, 422),
          },
        },
      },
      async (req) => links.accessLog(req.params.id, pageOf(req.query)),
    );
    api.post(
      '/v1/magic_links/:id/expire',
      {
        schema: {
          operationId: 'expireMagicLink',
          tags,
          summary: 'Revoke a Magic Link now',
          params: linkParams,
          response: { 200: answer(MagicLinkSchema, 'Revoked (status `revoked`).'), ...errors(401, 404) },
        },
      },
      async (req) => links.end(req.params.id, 'revoked'),
    );
    api.post(
      '/v1/magic_links/:id/resend',
      {
        schema: {
          operationId: 'resendMagicLink',
          tags,
          summary: 'E-mail the link again, with a new URL (the old one stops working)',
          params: linkParams,
          response: { 200: answer(MagicLinkSchema, 'Sent (or `send_failed`).'), ...errors(401, 404, 422) },
        },
      },
      async (req) => {
        const { id } = req.params;
        const { url } = await links.resend(id);
        return { ...(await links.get(id)), url };
      },
    );

    // ---- recipient ----
    const show = (reply: FastifyReply, status: number, body: string) =>
      reply.status(status).type('text/html; charset=utf-8').headers(pageHeaders('recipient')).send(body);
    const gone = async (reply: FastifyReply) => show(reply, 404, unavailablePage(await brand()));
    /**
     * Who a recipient says they are: a link for one address is proved by its auth_email; a link that
     * allows others (allowed_viewers) by the address they type, which must be one it allows.
     * Undefined: the typed text is not an address (or none was typed).
     */
    const claimed = (link: OpenLink, typed: unknown): { email: string; allowed: boolean } | undefined => {
      if (!hasList(link.row)) return { email: link.row.auth_email, allowed: true };
      const email = typeof typed === 'string' ? typed.trim().toLowerCase() : '';
      if (!isEmail(email)) return undefined;
      // the address as the sender wrote it, when it is the link's own
      if (email === link.row.auth_email.toLowerCase()) return { email: link.row.auth_email, allowed: true };
      return { email, allowed: allows(link.row, email) };
    };
    /** The sign-in page; `sentTo`: a code was sent to this address, the page asks for it. */
    const signIn = (link: OpenLink, token: string, extra: { error?: string; sentTo?: string } = {}) =>
      signInPage({
        brand: brandOf(link.app),
        documentName: link.document.name,
        authType: link.row.auth_type as 'email' | 'social',
        maskedEmail: maskEmail(link.row.auth_email),
        askEmail: hasList(link.row),
        action: `/l/${token}`,
        providers: link.app.oidc_providers.map((p) => ({ id: p.id, name: p.name })),
        viewsLeft: link.row.max_views === null ? null : link.row.max_views - link.row.views_used,
        ...extra,
      });

    app.get<{ Params: { token: string }; Querystring: { sent?: string; as?: string } }>(
      '/l/:token',
      async (req, reply) => {
        const { token } = req.params;
        const link = await links.open(token, visitor(req), req.cookies[COOKIE]);
        if (!link) return gone(reply);
        const session = await links.session(link, req.cookies[COOKIE]);
        if (!session) {
          // after a code was sent: to whom (a link for several people names the address in `as`)
          const who = req.query.sent === '1' ? claimed(link, req.query.as) : undefined;
          return show(reply, 200, signIn(link, token, { sentTo: who?.allowed ? who.email : undefined }));
        }
        // a reload while this session's view runs is the same view
        const view = links.viewing(session)
          ? {
              ok: true,
              viewsUsed: session.viewNumber ?? link.row.views_used,
              maxViews: link.row.max_views,
              expiresAt: link.row.expires_at,
            }
          : await links.countView(link, session, visitor(req));
        if (!view.ok) return gone(reply);
        const settings = settingsOf(link.row);
        // without downloads the page shows images of the pages: it needs to know how many
        const images =
          settings.allowDownload === false
            ? {
                url: `/l/${token}/pages`,
                pages: await service.documents.pageCount(link.document.id),
              }
            : undefined;
        return show(
          reply,
          200,
          viewerPage({
            brand: brandOf(link.app),
            documentName: link.document.name,
            pdfUrl: `/l/${token}/document.pdf`,
            reportUrl: `/l/${token}/activity`,
            images,
            viewsUsed: view.viewsUsed,
            maxViews: view.maxViews,
            expiresAt: view.expiresAt,
          }),
        );
      },
    );

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

    const social = new SocialLogin(
      guardedFetch({
        allowPrivate: service.config.oidcAllowPrivate,
        setting: 'OIDC_ALLOW_PRIVATE',
        timeoutMs: service.config.oidcTimeoutMs,
        maxBytes: 1024 * 1024,
      }),
    );
    const sessionCookie = (reply: FastifyReply, token: string, session: string) =>
      reply.setCookie(COOKIE, session, {
        path: `/l/${token}`,
        httpOnly: true,
        sameSite: 'lax',
        secure,
        maxAge: 12 * 60 * 60,
      });

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

    /** The watermark of a grant, filled in for this viewing session; none when the link has none. */
    const stampOf = (grant: Grant, req: FastifyRequest): Stamp | undefined => {
      const w = grant.settings.watermark;
      if (!w) return undefined;
      const text = watermarkText(w.text, {
        email: grant.email,
        viewed_at: `${grant.viewedAt.toISOString().replace('T', ' ').slice(0, 16)} UTC`,
        ip: req.ip,
        link_id: grant.linkId,
      });
      return { ...w, text };
    };

    // the PDF, for pdf.js and the download button: only when the link allows downloads
    app.get<{ Params: { token: string }; Querystring: { download?: string } }>(
      '/l/:token/document.pdf',
      async (req, reply) => {
        const { token } = req.params;
        const grant = await links.granted(token, req.cookies[COOKIE]);
        if (!grant || grant.settings.allowDownload === false) return gone(reply);
        const { document, bytes } = await service.documents.pdf(grant.documentId);
        const stamp = stampOf(grant, req);
        const shown = stamp ? (await service.renderer.view(bytes, { stamp })).bytes : bytes;
        const download = req.query.download === '1';
        return reply
          .type('application/pdf')
          .header('Cache-Control', 'no-store')
          .header('Content-Disposition', contentDisposition(document.name, download ? 'attachment' : 'inline'))
          .send(Buffer.from(shown));
      },
    );

    // page analytics: the viewer's reports of the page it shows and for how long (pagetimes.ts)
    app.post<{ Params: { token: string }; Body: unknown }>('/l/:token/activity', async (req, reply) => {
      const grant = await links.granted(req.params.token, req.cookies[COOKIE]);
      if (!grant) throw new NotFoundError('viewing session', 'this');
      // only pages the document has: a report cannot make rows for pages that do not exist
      await links.reportPages(grant, parseReport(req.body, await service.documents.pageCount(grant.documentId)));
      return reply.status(204).send();
    });

    // one page as an image (what a link without downloads shows), watermarked like the PDF
    app.get<{ Params: { token: string; page: string } }>('/l/:token/pages/:page', async (req, reply) => {
      const { token } = req.params;
      const grant = await links.granted(token, req.cookies[COOKIE]);
      const page = /^[1-9]\d{0,4}$/.test(req.params.page) ? Number(req.params.page) : 0;
      if (!grant || !page) return gone(reply);
      const { bytes } = await service.documents.pdf(grant.documentId);
      let image;
      try {
        image = await service.renderer.view(bytes, { stamp: stampOf(grant, req), page });
      } catch (err) {
        // past the document's last page
        if (err instanceof PaperlinkError && err.code === 'not_found') return gone(reply);
        throw err;
      }
      return reply
        .type('image/png')
        .header('Cache-Control', 'no-store')
        .header('Content-Disposition', 'inline')
        .send(Buffer.from(image.bytes));
    });
  };
