/**
 * The web app under /app, for the operator of a Paperlink instance: templates, generating,
 * documents and their Magic Links, postcards, settings. Server-rendered HTML with a small
 * optional script; no request leaves for the internet.
 *
 * Every page needs a session (sign-in with an API key or the operator password); every form
 * carries the session's CSRF token; every form body goes through the same core calls as the
 * HTTP API, so the rules and the messages are the API's. This file holds what every section
 * shares (the session, CSRF, errors, sign-in); each section is a plugin of its own file.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { csrfToken, sameToken } from '../admin';
import { AuthenticationError, ForbiddenError, RateLimitError } from '../errors';
import { isObject } from '../guards';
import type { Service } from '../service';
import { failureAnswer } from '../http/errors';
import { pageHeaders } from '../http/headers';
import { acceptMultipart } from '../http/multipart';
import { refuseForgery, sendPage, viewer } from './context';
import { documentsSection } from '../documents/web';
import { one, type Form } from './forms';
import { generateSection } from '../generate/web';
import { bare, csrfField, errorNotice, field, html, layout, raw } from './html';
import { linksSection } from '../links/web';
import { postcardsSection } from '../postcards/web';
import { settingsSection } from './settings';
import { templateEditor, templateGallery, templatesSection } from '../templates/web';
import { secureCookies } from '../config';

const SESSION_COOKIE = 'paperlink_admin';
const SIGNIN_COOKIE = 'paperlink_signin';
const SECTIONS = [
  templatesSection,
  templateGallery,
  templateEditor,
  generateSection,
  documentsSection,
  linksSection,
  postcardsSection,
  settingsSection,
];

/**
 * Whether a state-changing request comes from a page of this server, by what the browser says:
 * `Origin` must be this server's (PUBLIC_URL, or the host the request was sent to), and without
 * an `Origin` the `Sec-Fetch-Site` header must not name another site. A client that is not a
 * browser sends neither, and has no session cookie to ride on.
 */
function sameOrigin(req: FastifyRequest, publicOrigin: string): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) {
    const site = req.headers['sec-fetch-site'];
    return site === undefined || site === 'same-origin' || site === 'none';
  }
  return origin === publicOrigin || origin === `${req.protocol}://${req.headers.host ?? ''}`;
}

/** A path inside the app to go back to after sign-in; anything else goes to the start page. */
function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/app(\/[\w\-/.?=&%]*)?$/.test(next) && !next.startsWith('//')
    ? next
    : '/app/templates';
}

export function webApp(service: Service) {
  const secure = secureCookies(service.config);
  const publicOrigin = new URL(service.config.publicUrl).origin;

  const signInPage = async (
    reply: FastifyReply,
    o: { next: string; error?: string; status?: number; hasPassword: boolean },
  ) => {
    // the cookie holds a random value, the form the server's HMAC of it (Operators.signInToken)
    const pre = randomBytes(18).toString('base64url');
    const token = await service.operators.signInToken(pre);
    void reply.setCookie(SIGNIN_COOKIE, pre, {
      path: '/app/signin',
      httpOnly: true,
      sameSite: 'strict',
      secure,
      maxAge: 3600,
    });
    return sendPage(
      reply,
      bare(
        'Sign in',
        html`<h1>Sign in</h1>
          <p class="sub">Manage templates, documents, Magic Links and postcards.</p>
          ${o.error && html`<div class="notice error" role="alert">${o.error}</div>`}
          <form method="post" action="/app/signin" class="gap-above">
            ${csrfField(token)}<input type="hidden" name="next" value="${o.next}" />
            ${field({ name: 'secret', label: o.hasPassword ? 'API key or operator password' : 'API key', type: 'password', required: true, hint: o.hasPassword ? 'An API key (plk_…) or the password set with npx paperlink admin set-password.' : 'An API key (plk_…): the first start of the service printed one; npx paperlink keys create makes more.', attrs: raw('autocomplete="current-password" autofocus') })}
            <button type="submit">Sign in</button>
          </form>`,
      ),
      o.status ?? 200,
    );
  };

  return async function routes(web: FastifyInstance): Promise<void> {
    await acceptMultipart(web, service.config.bodyLimit);
    web.addHook('onSend', async (_req, reply) => {
      // pages are not kept (no-store); what a route says may be kept (a version's thumbnail, which never changes) is
      const kept = reply.getHeader('cache-control');
      void reply.headers(pageHeaders('operator'));
      if (kept !== undefined) void reply.header('Cache-Control', kept);
    });

    web.setErrorHandler(async (err, req, reply) => {
      const [status, { error }] = failureAnswer(err as FastifyError, req, reply, service.config.bodyLimit, (failure) =>
        service.writes.noticed(failure),
      );
      const body = html`<div class="head">
          <div><h1>${status === 404 ? 'Not found' : 'That did not work'}</h1></div>
        </div>
        <div class="card">
          ${errorNotice(error)}
          <p class="muted small">
            Code <code>${error.code}</code>${error.request_id && html`, request id <code>${error.request_id}</code>`}.
          </p>
          <p><a href="/app">Back to the start page</a></p>
        </div>`;
      if (req.admin)
        return sendPage(reply, layout({ title: 'Error', section: 'templates', viewer: viewer(req), body }), status);
      return sendPage(reply, bare('Error', body), status);
    });
    web.setNotFoundHandler(async (req, reply) => {
      if (!req.admin) return reply.redirect(`/app/signin?next=${encodeURIComponent(req.url)}`, 303);
      return sendPage(
        reply,
        layout({
          title: 'Not found',
          section: 'templates',
          viewer: viewer(req),
          body: html`<div class="head"><h1>Not found</h1></div>
            <div class="card">
              <p>There is no such page. <a href="/app">Go to the start page</a>.</p>
            </div>`,
        }),
        404,
      );
    });

    // who is asking: every page but the sign-in needs a live session; what changes anything comes from our own pages
    web.addHook('onRequest', async (req, reply) => {
      if (req.method !== 'GET' && req.method !== 'HEAD' && !sameOrigin(req, publicOrigin)) return refuseForgery(reply);
      const token = req.cookies[SESSION_COOKIE];
      const session = await service.operators.session(token);
      if (session && token) req.admin = { session, token, csrf: csrfToken(token) };
      if (req.routeOptions.config.public || req.admin) return;
      if (req.method === 'GET' || req.method === 'HEAD')
        return reply.redirect(`/app/signin?next=${encodeURIComponent(req.url)}`, 303);
      return sendPage(
        reply,
        bare(
          'Signed out',
          html`<h1>You are signed out</h1>
            <p>Your session ended. <a href="/app/signin">Sign in again</a>, then repeat what you were doing.</p>`,
        ),
        401,
      );
    });
    // every form of a signed-in page carries the session's CSRF token
    web.addHook('preHandler', async (req, reply) => {
      if (req.method !== 'POST' || req.routeOptions.config.public || req.routeOptions.config.multipart) return;
      if (req.isMultipart() || !sameToken(isObject(req.body) ? req.body._csrf : undefined, req.admin!.csrf))
        return refuseForgery(reply);
    });

    web.get('/signin', { config: { public: true } }, async (req, reply) => {
      const next = safeNext((req.query as { next?: string }).next);
      if (req.admin) return reply.redirect(next, 303);
      return signInPage(reply, { next, hasPassword: await service.operators.hasPassword() });
    });
    web.post('/signin', { config: { public: true } }, async (req, reply) => {
      const form = (isObject(req.body) ? req.body : {}) as Form;
      const next = safeNext(one(form, 'next'));
      const pre = req.cookies[SIGNIN_COOKIE];
      if (!pre || !sameToken(one(form, '_csrf'), await service.operators.signInToken(pre))) return refuseForgery(reply);
      try {
        const { token, session } = await service.operators.signIn(one(form, 'secret'), req.ip);
        void reply.clearCookie(SIGNIN_COOKIE, { path: '/app/signin' });
        void reply.setCookie(SESSION_COOKIE, token, {
          path: '/app',
          httpOnly: true,
          sameSite: 'strict',
          secure,
          expires: new Date(session.expiresAt),
        });
        return reply.redirect(next, 303);
      } catch (err) {
        const hasPassword = await service.operators.hasPassword();
        if (err instanceof RateLimitError)
          return signInPage(reply.header('Retry-After', String(err.retryAfterSeconds)), {
            next,
            error: err.message,
            status: 429,
            hasPassword,
          });
        if (err instanceof AuthenticationError)
          return signInPage(reply, {
            next,
            error: hasPassword ? 'That is not a live API key or the operator password.' : 'That is not a live API key.',
            status: 401,
            hasPassword,
          });
        if (err instanceof ForbiddenError)
          return signInPage(reply, { next, error: err.message, status: 403, hasPassword });
        throw err;
      }
    });
    web.post('/signout', async (req, reply) => {
      await service.operators.signOut(req.admin!.token);
      void reply.clearCookie(SESSION_COOKIE, { path: '/app' });
      return reply.redirect('/app/signin', 303);
    });
    web.get('/', async (_req, reply) => reply.redirect('/app/templates', 303));

    for (const section of SECTIONS) await web.register(section(service));
  };
}
