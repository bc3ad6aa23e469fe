/**
 * The web app under /app, for the operator of a Paperlink instance: templates, generating,
 * documents and their Magic Links, postcards, settings. Server-rendered HTML with a small
 * optional script; no request leaves for the internet.
 *
 * Every page needs a session (sign-in with an API key or the operator password); every form
 * carries the session's CSRF token; every form body goes through the same core calls as the
 * HTTP API, so the rules and the messages are the API's.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { csrfToken, sameToken, type AdminSession } from '../admin';
import {
  AuthenticationError,
  ForbiddenError,
  ConflictError,
  PaperlinkError,
  RateLimitError,
  ValidationError,
  type ErrorDetail,
} from '../errors';
import { isObject } from '../guards';
import { ALL_SCOPES, type KeyKind } from '../keys';
import { EVENT_TYPES } from '../events';
import { parsePageQuery } from '../pagination';
import { LINK_STATUSES } from '../links';
import { publicUrlMismatch } from '../links/app';
import { browserOf, isLive, ruleInWords } from './links';
import { STATUSES } from '../postcards';
import type { Service } from '../service';
import { errorAnswer } from '../http/errors';
import { contentDisposition, pageHeaders } from '../http/headers';
import { acceptMultipart, readMultipart } from '../http/multipart';
import { all, fieldErrors, formLabel, formMessage, linkFieldset, linkSettingsFrom, one, type Form } from './forms';
import {
  actionButton,
  badge,
  bare,
  bytes,
  copyButton,
  csrfField,
  errorNotice,
  esc,
  field,
  idWithCopy,
  layout,
  notice,
  pdfPreview,
  secretNotice,
  when,
  type Section,
} from './html';

declare module 'fastify' {
  interface FastifyRequest {
    admin?: { session: AdminSession; token: string; csrf: string };
  }
  interface FastifyContextConfig {
    /** The route reads a multipart body itself (and checks its CSRF field). */
    multipart?: boolean;
    /** The route needs no session (sign-in). */
    public?: boolean;
  }
}

const SESSION_COOKIE = 'paperlink_admin';
const SIGNIN_COOKIE = 'paperlink_signin';
const PAGE = 50;

/** What a finished action says on the page it redirects to: fixed texts, never text from the URL. */
const DONE: Record<string, string> = {
  template_uploaded: 'Template uploaded.',
  template_deleted: 'Template deleted.',
  generated: 'Document generated.',
  shared: 'Magic Link created and e-mailed.',
  link_expired: 'The link was expired: it no longer opens.',
  links_expired: 'The selected links were expired: they no longer open.',
  none_selected: 'No link was selected: tick the links to expire first.',
  revoked: 'Revoked. Requests with it are refused from now on.',
  app_saved: 'Magic Link app settings saved.',
  provider_removed: 'Sign-in provider removed.',
  webhook_deleted: 'Webhook deleted.',
};

/** The API's failure as the page shows it. */
interface Failure {
  message: string;
  details: ErrorDetail[];
}

/**
 * A refusal the form can show beside what was typed: a rule (every detail in the form's words),
 * or a state to fix first (Magic Links not set up, a conflict, a limit). Anything else is a fault.
 */
function failureOf(err: unknown): Failure {
  if (err instanceof ValidationError)
    return { message: err.message, details: err.details.map((d) => ({ ...d, message: formMessage(d) })) };
  if (err instanceof ConflictError && err.code === 'app_not_configured')
    return {
      message:
        'Magic Links are not set up yet: fill in the Magic Link app in Settings (public URL, organisation, sender), then send this form again. What you typed is kept below.',
      details: [],
    };
  if (err instanceof PaperlinkError && !(err instanceof AuthenticationError))
    return { message: err.message, details: [] };
  throw err;
}

function html(reply: FastifyReply, body: string, status = 200) {
  return reply.status(status).type('text/html; charset=utf-8').send(body);
}

/** A path inside the app to go back to after sign-in; anything else goes to the start page. */
function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/app(\/[\w\-/.?=&%]*)?$/.test(next) && !next.startsWith('//')
    ? next
    : '/app/templates';
}

function doneNotice(req: FastifyRequest): string {
  const done = (req.query as { done?: string }).done;
  return notice(done ? DONE[done] : undefined);
}

export function webApp(service: Service) {
  const secure = service.config.publicUrl.startsWith('https://');
  const intakeUrl = async () =>
    `${(await service.apps.magicLink.get())?.public_url ?? service.config.publicUrl}${service.config.postcardPath}`;

  return async function routes(web: FastifyInstance): Promise<void> {
    await acceptMultipart(web, service.config.bodyLimit);
    web.addHook('onSend', async (_req, reply) => {
      void reply.headers(pageHeaders('operator'));
    });

    web.setErrorHandler(async (err, req, reply) => {
      const [status, { error }] = errorAnswer(err as FastifyError, req, service.config.bodyLimit);
      const body = `<div class="head"><div><h1>${status === 404 ? 'Not found' : 'That did not work'}</h1></div></div><div class="card">${errorNotice(error)}<p class="muted small">Code <code>${esc(error.code)}</code>${error.request_id ? `, request id <code>${esc(error.request_id)}</code>` : ''}.</p><p><a href="/app">Back to the start page</a></p></div>`;
      if (req.admin)
        return html(reply, layout({ title: 'Error', section: 'templates', viewer: viewer(req), body }), status);
      return html(reply, bare('Error', body), status);
    });
    web.setNotFoundHandler(async (req, reply) => {
      if (!req.admin) return reply.redirect(`/app/signin?next=${encodeURIComponent(req.url)}`, 303);
      return html(
        reply,
        layout({
          title: 'Not found',
          section: 'templates',
          viewer: viewer(req),
          body: '<div class="head"><h1>Not found</h1></div><div class="card"><p>There is no such page. <a href="/app">Go to the start page</a>.</p></div>',
        }),
        404,
      );
    });

    // who is asking: every page but the sign-in needs a live session
    web.addHook('onRequest', async (req, reply) => {
      const token = req.cookies[SESSION_COOKIE];
      const session = await service.operators.session(token);
      if (session && token) req.admin = { session, token, csrf: csrfToken(token) };
      if (req.routeOptions.config.public || req.admin) return;
      if (req.method === 'GET' || req.method === 'HEAD')
        return reply.redirect(`/app/signin?next=${encodeURIComponent(req.url)}`, 303);
      return html(
        reply,
        bare(
          'Signed out',
          '<h1>You are signed out</h1><p>Your session ended. <a href="/app/signin">Sign in again</a>, then repeat what you were doing.</p>',
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

    const refuseForgery = (reply: FastifyReply) =>
      html(
        reply,
        bare(
          'Form expired',
          '<h1>This form cannot be sent</h1><p>It has no valid security token (it may be from an old page or another site). Go back, reload the page, and send it again.</p><p><a class="button" href="/app">Back to Paperlink</a></p>',
        ),
        403,
      );
    const viewer = (req: FastifyRequest) => ({ name: req.admin!.session.name, csrf: req.admin!.csrf });
    const page = (
      req: FastifyRequest,
      reply: FastifyReply,
      section: Section,
      title: string,
      body: string,
      status = 200,
      scripts?: string,
    ) => html(reply, layout({ title, section, viewer: viewer(req), body, scripts }), status);
    const caller = (req: FastifyRequest) => ({ keyId: req.admin!.session.keyId, name: req.admin!.session.name });

    /** Reads a multipart form: its text fields, its files by field name, after checking the CSRF field. */
    async function multipartForm(
      req: FastifyRequest,
    ): Promise<{ form: Form; files: Map<string, { filename: string; bytes: Buffer }[]> } | undefined> {
      const upload = await readMultipart(req);
      const form: Form = { ...upload.fields };
      const files = new Map<string, { filename: string; bytes: Buffer }[]>();
      for (const f of upload.files)
        if (f.bytes.length)
          files.set(f.field, [...(files.get(f.field) ?? []), { filename: f.filename, bytes: f.bytes }]);
      return sameToken(form._csrf, req.admin!.csrf) ? { form, files } : undefined;
    }

    // ---- sign-in ----
    const signInPage = (
      reply: FastifyReply,
      o: { next: string; error?: string; status?: number; hasPassword: boolean },
    ) => {
      const pre = randomBytes(18).toString('base64url');
      void reply.setCookie(SIGNIN_COOKIE, pre, {
        path: '/app/signin',
        httpOnly: true,
        sameSite: 'strict',
        secure,
        maxAge: 3600,
      });
      return html(
        reply,
        bare(
          'Sign in',
          `<h1>Sign in</h1><p class="sub">Manage templates, documents, Magic Links and postcards.</p>
${o.error ? `<div class="notice error" role="alert">${esc(o.error)}</div>` : ''}
<form method="post" action="/app/signin" class="gap-above">
${csrfField(pre)}<input type="hidden" name="next" value="${esc(o.next)}">
${field({ name: 'secret', label: o.hasPassword ? 'API key or operator password' : 'API key', type: 'password', required: true, hint: o.hasPassword ? 'An API key (plk_…) or the password set with paperlink admin set-password.' : 'An API key (plk_…): the first start of the service printed one; paperlink keys create makes more.', attrs: 'autocomplete="current-password" autofocus' })}
<button type="submit">Sign in</button>
</form>`,
        ),
        o.status ?? 200,
      );
    };

    web.get('/signin', { config: { public: true } }, async (req, reply) => {
      const next = safeNext((req.query as { next?: string }).next);
      if (req.admin) return reply.redirect(next, 303);
      return signInPage(reply, { next, hasPassword: await service.operators.hasPassword() });
    });
    web.post('/signin', { config: { public: true } }, async (req, reply) => {
      const form = (isObject(req.body) ? req.body : {}) as Form;
      const next = safeNext(one(form, 'next'));
      if (!sameToken(one(form, '_csrf'), req.cookies[SIGNIN_COOKIE] ?? '')) return refuseForgery(reply);
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

    // ---- templates ----
    async function templatesPage(
      req: FastifyRequest,
      reply: FastifyReply,
      o: { error?: Failure; status?: number } = {},
    ) {
      const query = req.query as Record<string, unknown>;
      const list = await service.templates.list(parsePageQuery({ limit: PAGE, starting_after: query.starting_after }));
      const fresh = (query as { id?: string }).id;
      const rows = list.data
        .map(
          (
            t,
          ) => `<tr${t.id === fresh ? ' class="fresh"' : ''}><td><strong>${esc(t.name)}</strong><div class="muted small">${esc(t.format.toUpperCase())} · added ${when(t.created_at)}</div></td><td>${idWithCopy(t.id)}</td>
<td>${
            t.variables.length
              ? t.variables
                  .slice(0, 6)
                  .map((v) => `<span class="chip">${esc(v)}</span>`)
                  .join('') +
                (t.variables.length > 6 ? `<span class="muted small">+${t.variables.length - 6} more</span>` : '')
              : '<span class="muted">none</span>'
          }</td>
<td><div class="actions"><a class="button secondary" href="/app/templates/${esc(t.id)}/preview">Preview</a><a class="button secondary" href="/app/generate?template_id=${esc(t.id)}">Generate</a>${actionButton({ action: `/app/templates/${t.id}/delete`, label: 'Delete', csrf: req.admin!.csrf, style: 'danger', confirm: `Delete the template "${t.name}"? Documents made from it stay.` })}</div></td></tr>`,
        )
        .join('');
      const label = (f: string) => {
        const at = /^template:(\d+):(\d+)$/.exec(f);
        return at ? `Line ${at[1]}, column ${at[2]}:` : f === 'template' ? 'Template:' : `${f}:`;
      };
      const body = `<div class="head"><div><h1>Templates</h1><p class="sub">Copy a template's id into your requests, or generate a document from it here.</p></div></div>
${doneNotice(req)}${errorNotice(o.error, label)}
<div class="card scroll"><table><thead><tr><th>Name</th><th>ID</th><th>Variables</th><th><span class="skip">Actions</span></th></tr></thead>
<tbody>${rows || '<tr><td colspan="4" class="empty">No templates yet. Upload one below.</td></tr>'}</tbody></table>
${list.has_more ? `<div class="pager"><a class="button secondary" href="/app/templates?starting_after=${esc(list.next_cursor!)}">Older templates →</a></div>` : ''}</div>
<div class="card"><h2>Upload a template</h2>
<form method="post" action="/app/templates" enctype="multipart/form-data">${csrfField(req.admin!.csrf)}
<div class="row">
<div class="field"><label for="f-file">Template file</label><input id="f-file" name="file" type="file" accept=".xml,.pdf,application/xml,text/xml,application/pdf" required><div class="hint">An XML layout template or a fillable PDF form.</div></div>
<div class="field"><label for="f-assets">Images and fonts (optional)</label><input id="f-assets" name="assets" type="file" multiple><div class="hint">The files the XML names, e.g. logo.png.</div></div>
${field({ name: 'name', label: 'Name (optional)', hint: 'Defaults to the name in the template or the file name.' })}
</div>
<button type="submit">Upload template</button>
</form></div>`;
      return page(req, reply, 'templates', 'Templates', body, o.status);
    }

    web.get('/templates', async (req, reply) => templatesPage(req, reply));
    web.post('/templates', { config: { multipart: true } }, async (req, reply) => {
      if (!req.isMultipart()) return refuseForgery(reply);
      const parsed = await multipartForm(req);
      if (!parsed) return refuseForgery(reply);
      const source = parsed.files.get('file')?.[0];
      try {
        if (!source)
          throw new ValidationError('Choose a template file (an XML file or a fillable PDF).', [
            { field: 'file', message: 'is required', code: 'required' },
          ]);
        const assets = new Map((parsed.files.get('assets') ?? []).map((f) => [f.filename, f.bytes] as const));
        const name = one(parsed.form, 'name').trim();
        const created = await service.templates.create({
          source: new Uint8Array(source.bytes),
          name: name || (/\.xml$/i.test(source.filename) ? undefined : source.filename.replace(/\.[^.]+$/, '')),
          assets: async (p) => assets.get(p) ?? assets.get(p.split('/').pop()!),
        });
        return reply.redirect(`/app/templates?done=template_uploaded&id=${encodeURIComponent(created.id)}`, 303);
      } catch (err) {
        return templatesPage(req, reply, { error: failureOf(err), status: 422 });
      }
    });
    web.post('/templates/:id/delete', async (req, reply) => {
      await service.templates.remove((req.params as { id: string }).id);
      return reply.redirect('/app/templates?done=template_deleted', 303);
    });
    web.get('/templates/:id/preview', async (req, reply) => {
      const t = await service.templates.get((req.params as { id: string }).id);
      const preview = pdfPreview(`/app/templates/${t.id}/preview.pdf`);
      const body = `<div class="head"><div><h1>${esc(t.name)}</h1><p class="sub">Preview with sample values: each variable shows its own name in brackets; lists are empty.</p></div>
<div class="actions"><a class="button" href="/app/generate?template_id=${esc(t.id)}">Generate from this template</a><a class="button secondary" href="/app/templates">All templates</a></div></div>
<div class="grid2"><div class="card">${preview.body}</div>
<div class="card"><h2>Details</h2><dl class="facts"><dt>ID</dt><dd>${idWithCopy(t.id)}</dd><dt>Format</dt><dd>${esc(t.format.toUpperCase())}</dd><dt>Size</dt><dd>${bytes(t.size)}</dd><dt>Created</dt><dd>${when(t.created_at)}</dd>
<dt>Variables</dt><dd>${t.variables.map((v) => `<span class="chip">${esc(v)}</span>`).join('') || '<span class="muted">none</span>'}</dd></dl></div></div>`;
      return page(req, reply, 'templates', `Preview of ${t.name}`, body, 200, preview.scripts);
    });
    web.get('/templates/:id/preview.pdf', async (req, reply) => {
      const template = await service.templates.load((req.params as { id: string }).id);
      const values: Record<string, string> = Object.fromEntries(template.variables.map((v) => [v, `[${v}]`]));
      // a value the template cannot take as text (a list, a checkbox) is tried empty instead
      let pdf: Uint8Array | undefined;
      for (let tries = 0; !pdf; tries++) {
        try {
          pdf = await service.renderer.render(template, values, { now: service.clock.now() });
        } catch (err) {
          const variable =
            err instanceof ValidationError
              ? err.details.map((d) => d.field.split(/[.[]/)[0]).find((f) => values[f])
              : undefined;
          if (!variable || tries > template.variables.length) throw err;
          values[variable] = '';
        }
      }
      return reply
        .type('application/pdf')
        .header('Content-Disposition', contentDisposition(`${template.name} (preview)`, 'inline'))
        .send(Buffer.from(pdf));
    });

    // ---- generate ----
    async function generatePage(
      req: FastifyRequest,
      reply: FastifyReply,
      form: Form,
      o: { error?: Failure; status?: number } = {},
    ) {
      const templates = (await service.templates.list({ limit: 100 })).data;
      const chosen =
        templates.find((t) => t.id === one(form, 'template_id')) ??
        (one(form, 'template_id')
          ? await service.templates.get(one(form, 'template_id')).catch(() => undefined)
          : undefined);
      const errors = fieldErrors(o.error?.details ?? []);
      const authTypes = (await service.apps.magicLink.get())?.auth_types ?? ['email'];
      const picker = `<form method="get" action="/app/generate" class="card"><div class="row bottom">
<div class="field"><label for="f-template_id">Template</label><select id="f-template_id" name="template_id" data-autosubmit><option value="">Choose a template…</option>${templates.map((t) => `<option value="${esc(t.id)}"${t.id === chosen?.id ? ' selected' : ''}>${esc(t.name)}</option>`).join('')}</select></div>
<div class="field"><button type="submit" class="secondary">Use this template</button></div></div></form>`;
      let main = '';
      if (chosen) {
        const store = o.error ? one(form, 'store') === 'on' : true;
        const share = one(form, 'share') === 'on';
        const vars = chosen.variables
          .map((v) => field({ name: `var:${v}`, label: v, value: one(form, `var:${v}`), errors, textarea: true }))
          .join('');
        main = `<form method="post" action="/app/generate">${csrfField(req.admin!.csrf)}<input type="hidden" name="template_id" value="${esc(chosen.id)}">
<div class="card"><h2>Merge fields</h2>${vars || '<p class="muted">This template has no variables.</p>'}<p class="hint">A list for &lt;each&gt; is a JSON array, e.g. [{"description":"Design","amount":"400.00"}].</p></div>
<div class="card"><h2>Destinations</h2>${errors.get('destinations') ? `<div class="err" role="alert">${esc(errors.get('destinations')!)}</div>` : ''}
<label class="check"><input type="checkbox" name="store" data-toggles="store-settings"${store ? ' checked' : ''}> Store the document</label>
<fieldset id="store-settings"><legend>Storage</legend>${field({ name: 'store_name', label: 'Document name', value: one(form, 'store_name') || chosen.name, errors })}</fieldset>
<label class="check"><input type="checkbox" name="share" data-toggles="share-settings"${share ? ' checked' : ''}> Share with a Magic Link</label>
<fieldset id="share-settings"><legend>Magic Link</legend>${linkFieldset(form, errors, 'link-settings', authTypes)}</fieldset>
<button type="submit">Generate document</button></div></form>`;
      } else if (!templates.length) {
        main = '<div class="card empty">No templates yet. <a href="/app/templates">Upload one</a> first.</div>';
      }
      const body = `<div class="head"><div><h1>Generate a document</h1><p class="sub">Fill a template's merge fields, then store the PDF, share it by Magic Link, or both.</p></div></div>
${errorNotice(o.error, (f) => `${formLabel(f)}:`)}${picker}${main}`;
      return page(req, reply, 'generate', 'Generate', body, o.status);
    }

    web.get('/generate', async (req, reply) => generatePage(req, reply, req.query as Form));
    web.post('/generate', async (req, reply) => {
      const form = req.body as Form;
      const merge: Record<string, string> = {};
      for (const [k, v] of Object.entries(form))
        if (k.startsWith('var:')) merge[k.slice(4)] = Array.isArray(v) ? v.join('') : (v ?? '');
      const destinations: Record<string, unknown> = {};
      if (one(form, 'store') === 'on')
        destinations.inkit_storage = { name: one(form, 'store_name').trim() || undefined };
      if (one(form, 'share') === 'on') destinations.magic_link = linkSettingsFrom(form);
      try {
        const result = await service.engine.generate({
          body: { template_id: one(form, 'template_id'), merge_parameters: merge, destinations },
          caller: caller(req),
        });
        return reply.redirect(`/app/documents/${encodeURIComponent(result.document_id)}?done=generated`, 303);
      } catch (err) {
        return generatePage(req, reply, form, { error: failureOf(err), status: 422 });
      }
    });

    // ---- documents ----
    web.get('/documents', async (req, reply) => {
      const query = req.query as Record<string, string | undefined>;
      const search = (query.search ?? '').trim().slice(0, 200);
      const list = await service.documents.list(
        parsePageQuery({ limit: PAGE, starting_after: query.starting_after }),
        search || undefined,
      );
      const rows = list.data
        .map(
          (d) =>
            `<tr><td><a href="/app/documents/${esc(d.id)}"><strong>${esc(d.name)}</strong></a><div class="muted small mono">${esc(d.id)}</div></td><td class="hide-sm"><code>${esc(d.template_id)}</code></td><td>${bytes(d.size)}</td><td>${when(d.created_at)}</td></tr>`,
        )
        .join('');
      const more = list.has_more
        ? `<div class="pager"><a class="button secondary" href="/app/documents?${new URLSearchParams({ ...(search ? { search } : {}), starting_after: list.next_cursor! })}">Older documents →</a></div>`
        : '';
      const body = `<div class="head"><div><h1>Documents</h1><p class="sub">Newest first. Open one to preview it, download it, or share it with a Magic Link.</p></div><a class="button" href="/app/generate">Generate a document</a></div>
<form method="get" action="/app/documents" class="card" role="search"><div class="row bottom"><div class="field"><label for="f-search">Search by name</label><input id="f-search" type="search" name="search" value="${esc(search)}"></div><div class="field"><button type="submit" class="secondary">Search</button>${search ? ' <a href="/app/documents">Clear</a>' : ''}</div></div></form>
<div class="card scroll"><table><thead><tr><th>Name</th><th class="hide-sm">Template</th><th>Size</th><th>Created</th></tr></thead><tbody>${rows || `<tr><td colspan="4" class="empty">${search ? 'No document name contains that.' : 'No documents yet.'}</td></tr>`}</tbody></table>${more}</div>`;
      return page(req, reply, 'documents', 'Documents', body);
    });

    async function documentPage(
      req: FastifyRequest,
      reply: FastifyReply,
      id: string,
      o: { form?: Form; error?: Failure; status?: number; created?: { url: string } } = {},
    ) {
      const d = await service.documents.get(id);
      const csrf = req.admin!.csrf;
      const links = await Promise.all((d.magic_links ?? []).map((l) => service.links.get(l.id, true)));
      const linkCards = links
        .map((l) => {
          const limit = l.expire_after_n_views;
          const meter = limit
            ? `<progress class="meter" aria-hidden="true" max="${limit}" value="${Math.min(limit, l.views_used)}"></progress>`
            : '';
          const log = (l.access_log ?? [])
            .map(
              (e) =>
                `<tr><td>${when(e.at)}</td><td>${esc(e.kind.replace(/_/g, ' '))}</td><td>${esc(e.outcome.replace(/_/g, ' '))}</td><td>${esc(e.email ?? '')}</td><td class="hide-sm">${esc(e.ip ?? '')}</td><td class="hide-sm small" title="${esc(e.user_agent ?? '')}">${esc(browserOf(e.user_agent))}</td></tr>`,
            )
            .join('');
          const live = isLive(l);
          return `<div class="link-card" data-link="${esc(l.id)}"><div class="actions spread"><div>${badge(l.status)} <strong>${esc(l.recipient_email)}</strong></div>${live ? actionButton({ action: `/app/links/${l.id}/expire`, label: 'Expire link now', csrf, style: 'danger', confirm: 'Expire this link now? The recipient can no longer open it.' }) : ''}</div>
<dl class="facts gap-above"><dt>Views</dt><dd><span data-views-used>${l.views_used}</span> used${limit ? ` · <span data-views-left>${l.views_left}</span> left of ${limit}` : ' · no view limit'}${meter}</dd>
<dt>Ends</dt><dd data-rule>${isLive(l) ? ruleInWords(l) : `${esc(l.status)}: it no longer opens`}</dd>
<dt>Sign-in</dt><dd>${l.auth_type === 'social' ? 'Social sign-in' : 'E-mailed code'} as ${esc(l.auth_email)}</dd>
<dt>Sent</dt><dd>${when(l.sent_at, l.status === 'send_failed' ? 'not yet: the e-mail failed and is retried' : '—')}</dd><dt>Opened</dt><dd>${when(l.opened_at, 'not yet')}</dd><dt>ID</dt><dd><code>${esc(l.id)}</code></dd></dl>
${l.send_error ? `<p class="err">E-mail error: ${esc(l.send_error)}</p>` : ''}
<details><summary>Access log (${l.access_log?.length ?? 0})</summary><div class="scroll"><table><thead><tr><th>When</th><th>What</th><th>Outcome</th><th>E-mail</th><th class="hide-sm">IP</th><th class="hide-sm">Browser</th></tr></thead><tbody>${log || '<tr><td colspan="6" class="muted">Nobody has opened it yet.</td></tr>'}</tbody></table></div></details></div>`;
        })
        .join('');
      const errors = fieldErrors(o.error?.details ?? []);
      const preview = pdfPreview(`/app/documents/${d.id}/pdf`);
      const body = `<div class="head"><div><h1>${esc(d.name)}</h1><p class="sub">Generated ${when(d.created_at)}${d.created_by.name ? ` by ${esc(d.created_by.name)}` : ''}</p></div>
<div class="actions"><a class="button" href="/app/documents/${esc(d.id)}/pdf?download=1">Download PDF</a><a class="button secondary" href="#share">Share with Magic Link</a></div></div>
${doneNotice(req)}${o.created ? `<div class="notice ok" role="status">Magic Link created and e-mailed.</div>` : ''}
<div class="card" id="links"><h2>Magic Links</h2>${linkCards || '<p class="muted">Not shared yet.</p>'}</div>
<div class="grid2"><div class="card">${preview.body}</div>
<div>
<div class="card"><h2>Details</h2><dl class="facts"><dt>ID</dt><dd>${idWithCopy(d.id)}</dd><dt>Template</dt><dd><a href="/app/templates/${esc(d.template_id)}/preview"><code>${esc(d.template_id)}</code></a></dd><dt>Size</dt><dd>${bytes(d.size)}</dd><dt>SHA-256</dt><dd class="mono small">${esc(d.sha256)}</dd></dl></div>
<div class="card" id="share"><h2>Share with Magic Link</h2>${errorNotice(o.error, (f) => `${formLabel(f)}:`)}
<form method="post" action="/app/documents/${esc(d.id)}/share">${csrfField(csrf)}${linkFieldset(o.form ?? {}, errors, 'share-fields', (await service.apps.magicLink.get())?.auth_types ?? ['email'])}<button type="submit">Share</button></form></div>
</div></div>`;
      return page(req, reply, 'documents', d.name, body, o.status, preview.scripts);
    }

    web.get('/documents/:id', async (req, reply) => documentPage(req, reply, (req.params as { id: string }).id));
    web.get('/documents/:id/pdf', async (req, reply) => {
      const { document, bytes: pdf } = await service.documents.pdf((req.params as { id: string }).id);
      const download = (req.query as { download?: string }).download === '1';
      return reply
        .type('application/pdf')
        .header('Content-Disposition', contentDisposition(document.name, download ? 'attachment' : 'inline'))
        .send(Buffer.from(pdf));
    });
    web.post('/documents/:id/share', async (req, reply) => {
      const { id } = req.params as { id: string };
      const form = req.body as Form;
      try {
        await service.documents.share(id, linkSettingsFrom(form), req.admin!.session.keyId);
      } catch (err) {
        return documentPage(req, reply, id, { form, error: failureOf(err), status: 422 });
      }
      return reply.redirect(`/app/documents/${encodeURIComponent(id)}?done=shared#share`, 303);
    });
    web.post('/links/:id/expire', async (req, reply) => {
      const link = await service.links.end((req.params as { id: string }).id, 'revoked');
      return reply.redirect(`/app/documents/${encodeURIComponent(link.document_id)}?done=link_expired`, 303);
    });

    // ---- magic links ----
    web.get('/links', async (req, reply) => {
      const query = req.query as Record<string, string | undefined>;
      const status = (LINK_STATUSES as readonly string[]).includes(query.status ?? '') ? query.status : undefined;
      const recipient = (query.recipient ?? '').trim().slice(0, 254) || undefined;
      const list = await service.links.list(parsePageQuery({ limit: PAGE, starting_after: query.starting_after }), {
        status,
        recipient_email: recipient,
      });
      const { documentNames, lastViewed } = await service.links.overview(list.data);
      /** This page with these filters (and no others). */
      const linksUrl = (p: { status?: string; recipient?: string; starting_after?: string }) => {
        const params = new URLSearchParams(Object.entries(p).filter((e): e is [string, string] => Boolean(e[1])));
        return `/app/links${params.size ? `?${params}` : ''}`;
      };
      const tabs = [
        ['', 'All'],
        ...LINK_STATUSES.map((s2) => [s2, s2[0].toUpperCase() + s2.slice(1).replace(/_/g, ' ')]),
      ]
        .map(
          ([s2, label]) =>
            `<a href="${esc(linksUrl({ status: s2, recipient }))}"${(status ?? '') === s2 ? ' aria-current="page"' : ''}>${label}</a>`,
        )
        .join('');
      const rows = list.data
        .map((l) => {
          const views =
            l.expire_after_n_views === null
              ? `${l.views_used} <span class="muted">· no limit</span>`
              : `${l.views_used} of ${l.expire_after_n_views}`;
          const pick = isLive(l)
            ? `<input type="checkbox" name="ids" value="${esc(l.id)}" aria-label="Select the link to ${esc(l.recipient_email)}">`
            : '';
          return `<tr data-link="${esc(l.id)}"><td>${pick}</td><td><strong>${esc(l.recipient_email)}</strong>${l.auth_email !== l.recipient_email ? `<div class="muted small">signs in as ${esc(l.auth_email)}</div>` : ''}<div class="muted small">sent ${when(l.sent_at ?? l.created_at)}</div></td><td><a href="/app/documents/${esc(l.document_id)}#links">${esc(documentNames.get(l.document_id) ?? l.document_id)}</a></td><td>${badge(l.status)}</td><td data-rule>${isLive(l) ? ruleInWords(l) : '<span class="muted">ended</span>'}</td><td data-views>${views}</td><td class="hide-sm">${when(lastViewed.get(l.id), 'never')}</td></tr>`;
        })
        .join('');
      const more = list.has_more
        ? `<div class="pager"><a class="button secondary" href="${esc(linksUrl({ status, recipient, starting_after: list.next_cursor! }))}">Older links →</a></div>`
        : '';
      const csrf = req.admin!.csrf;
      const body = `<div class="head"><div><h1>Magic Links</h1><p class="sub">Every link sent, newest first: who it went to, what ends it, how many views are used.</p></div></div>
${doneNotice(req)}<nav class="tabs" aria-label="Filter by status">${tabs}</nav>
<form method="get" action="/app/links" class="filter gap-below">${status ? `<input type="hidden" name="status" value="${esc(status)}">` : ''}<label for="f-recipient" class="sr-only">Recipient</label><input id="f-recipient" name="recipient" type="email" placeholder="Recipient e-mail" value="${esc(recipient ?? '')}"><button type="submit" class="secondary">Filter</button>${recipient ? `<a class="button secondary" href="${esc(linksUrl({ status }))}">Show all recipients</a>` : ''}</form>
<form method="post" action="/app/links/expire" data-confirm="Expire the selected links now? Their recipients can no longer open them.">${csrfField(csrf)}
<div class="card scroll"><table><thead><tr><th><span class="sr-only">Select</span></th><th>Recipient</th><th>Document</th><th>Status</th><th>Ends</th><th>Views</th><th class="hide-sm">Last viewed</th></tr></thead><tbody>${rows || `<tr><td colspan="7" class="empty">${recipient || status ? 'No link matches.' : 'No links yet: share a document from its page.'}</td></tr>`}</tbody></table>${more}</div>
${list.data.some(isLive) ? '<div class="actions gap-above"><button type="submit" class="danger">Expire selected links</button></div>' : ''}</form>`;
      return page(req, reply, 'links', 'Magic Links', body);
    });
    web.post('/links/expire', async (req, reply) => {
      const ids = all(req.body as Form, 'ids');
      if (ids.length) await service.links.endMany({ ids });
      return reply.redirect(`/app/links?done=${ids.length ? 'links_expired' : 'none_selected'}`, 303);
    });

    // ---- postcards ----
    web.get('/postcards', async (req, reply) => {
      const query = req.query as Record<string, string | undefined>;
      const status = (STATUSES as string[]).includes(query.status ?? '') ? query.status : undefined;
      const list = await service.postcards.list(
        parsePageQuery({ limit: PAGE, starting_after: query.starting_after }),
        status,
      );
      const tabs = [['', 'All'], ...STATUSES.map((s) => [s, s[0].toUpperCase() + s.slice(1)])]
        .map(
          ([s, l]) =>
            `<a href="/app/postcards${s ? `?status=${s}` : ''}"${(status ?? '') === s ? ' aria-current="page"' : ''}>${l}</a>`,
        )
        .join('');
      const rows = list.data
        .map((p) => {
          const name = [p.contact.first_name, p.contact.last_name].filter(Boolean).join(' ') || p.contact.company || '';
          return `<tr><td><a href="/app/postcards/${esc(p.id)}"><strong>${esc(name)}</strong></a><div class="muted small mono">${esc(p.id)}</div></td><td>${esc(p.address.address_city)}, ${esc(p.address.address_country)}</td><td>${badge(p.status)}</td><td class="hide-sm"><code>${esc(p.template_id)}</code></td><td>${when(p.created_at)}</td></tr>`;
        })
        .join('');
      const more = list.has_more
        ? `<div class="pager"><a class="button secondary" href="/app/postcards?${new URLSearchParams({ ...(status ? { status } : {}), starting_after: list.next_cursor! })}">Older postcards →</a></div>`
        : '';
      const body = `<div class="head"><div><h1>Postcards</h1><p class="sub">Requests that came in on the postcard intake webhook, newest first.</p></div><a class="button secondary" href="/app/settings#intake">Intake URL and tokens</a></div>
<nav class="tabs" aria-label="Filter by status">${tabs}</nav>
<div class="card scroll"><table><thead><tr><th>Recipient</th><th>Place</th><th>Status</th><th class="hide-sm">Template</th><th>Received</th></tr></thead><tbody>${rows || '<tr><td colspan="5" class="empty">No postcards here yet.</td></tr>'}</tbody></table>${more}</div>`;
      return page(req, reply, 'postcards', 'Postcards', body);
    });
    web.get('/postcards/:id', async (req, reply) => {
      const p = await service.postcards.get((req.params as { id: string }).id);
      const facts = (o: Record<string, string | undefined>) =>
        Object.entries(o)
          .filter(([, v]) => v)
          .map(([k, v]) => `<dt>${esc(k.replace(/^address_/, '').replace(/_/g, ' '))}</dt><dd>${esc(v!)}</dd>`)
          .join('');
      const custom = Object.entries(p.custom_data);
      const preview = p.document_id ? pdfPreview(`/app/documents/${p.document_id}/pdf`) : undefined;
      const body = `<div class="head"><div><h1>Postcard ${badge(p.status)}</h1><p class="sub mono">${esc(p.id)}</p></div>${p.document_id ? `<div class="actions"><a class="button" href="/app/documents/${esc(p.document_id)}/pdf?download=1">Download PDF</a><a class="button secondary" href="/app/documents/${esc(p.document_id)}">Open document</a></div>` : ''}</div>
${p.status === 'failed' ? `<div class="notice error" role="alert"><strong>Rendering failed.</strong> ${esc(p.failure_reason ?? '')}</div>` : ''}${p.status === 'received' ? '<div class="notice ok" role="status">Received; rendering is queued.</div>' : ''}
<div class="grid2"><div class="card">${preview ? preview.body : '<p class="muted">No rendered postcard yet.</p>'}</div><div>
<div class="card"><h2>Contact</h2><dl class="facts">${facts(p.contact) || '<dt>—</dt><dd></dd>'}</dl></div>
<div class="card"><h2>Address</h2><dl class="facts">${facts(p.address)}</dl><p class="hint">As stored: trimmed, country and state in capitals.</p></div>
<div class="card"><h2>Custom data</h2>${custom.length ? `<dl class="facts">${custom.map(([k, v]) => `<dt><code>${esc(k)}</code></dt><dd>${esc(v)}</dd>`).join('')}</dl>` : '<p class="muted">None.</p>'}</div>
<div class="card"><h2>Request</h2><dl class="facts"><dt>Template</dt><dd><code>${esc(p.template_id)}</code></dd><dt>Received</dt><dd>${when(p.created_at)}</dd><dt>Updated</dt><dd>${when(p.updated_at)}</dd></dl></div>
</div></div>`;
      return page(req, reply, 'postcards', `Postcard ${p.id}`, body, 200, preview?.scripts);
    });

    // ---- settings ----
    interface SettingsState {
      section?: 'credentials' | 'app' | 'providers' | 'webhooks';
      error?: Failure;
      form?: Form;
      secret?: { title: string; value: string; hint: string };
      status?: number;
    }
    async function settingsPage(req: FastifyRequest, reply: FastifyReply, s: SettingsState = {}) {
      const csrf = req.admin!.csrf;
      const [keys, app, hooks, hasPassword] = await Promise.all([
        service.keys.list(),
        service.apps.magicLink.get(),
        service.webhooks.list({ limit: 100 }),
        service.operators.hasPassword(),
      ]);
      const mismatch = app && publicUrlMismatch(app, service.apps.magicLink.serverUrl);
      const here = (section: SettingsState['section']) =>
        s.section === section
          ? errorNotice(s.error) + (s.secret ? secretNotice(s.secret.title, s.secret.value, s.secret.hint) : '')
          : '';
      const errors = fieldErrors([]);
      const credentialTable = (kind: KeyKind) => {
        const rows = keys
          .filter((k) => k.kind === kind)
          .map(
            (
              k,
            ) => `<tr><td><strong>${esc(k.name)}</strong><div class="muted small mono">${esc(k.id)}</div></td><td><code>${esc(k.prefix)}…</code></td><td class="hide-sm">${when(k.created_at)}</td><td>${when(k.last_used_at, 'never')}</td>
${kind === 'api' ? `<td class="small">${k.scopes.length === ALL_SCOPES.length ? 'all' : k.scopes.map((x) => `<span class="chip">${esc(x)}</span>`).join('')}</td>` : ''}
<td>${k.revoked_at ? badge('revoked') : actionButton({ action: `/app/settings/credentials/${k.id}/revoke`, label: 'Revoke', csrf, style: 'danger', confirm: `Revoke "${k.name}"? Everything using it stops working at once.` })}</td></tr>`,
          )
          .join('');
        return `<div class="scroll"><table><thead><tr><th>Name</th><th>Starts with</th><th class="hide-sm">Created</th><th>Last used</th>${kind === 'api' ? '<th>Scopes</th>' : ''}<th><span class="skip">Status</span></th></tr></thead><tbody>${rows || `<tr><td colspan="${kind === 'api' ? 6 : 5}" class="muted">None yet.</td></tr>`}</tbody></table></div>
<form method="post" action="/app/settings/credentials" class="row bottom gap-above">${csrfField(csrf)}<input type="hidden" name="kind" value="${kind}">
${field({
  name: 'name',
  label: kind === 'api' ? 'New API key name' : 'New postcard token name',
  hint:
    kind === 'api'
      ? 'Who or what uses it, e.g. "n8n production".'
      : 'Who sends postcards with it, e.g. "website form".',
  value: s.section === 'credentials' && one(s.form ?? {}, 'kind') === kind ? one(s.form!, 'name') : '',
})
  .replace('id="f-name"', `id="f-name-${kind}"`)
  .replace('for="f-name"', `for="f-name-${kind}"`)}
<div class="field"><button type="submit">${kind === 'api' ? 'Create API key' : 'Create postcard token'}</button></div></form>`;
      };
      const intake = await intakeUrl();
      const appForm = s.section === 'app' ? (s.form ?? {}) : {};
      const appValue = (k: keyof NonNullable<typeof app>, fallback = '') =>
        one(appForm, k) || String((app?.[k] as string | null | undefined) ?? fallback);
      const authTypes = s.section === 'app' ? all(appForm, 'auth_types') : (app?.auth_types ?? ['email']);
      const appErrors =
        s.section === 'app' ? new Map((s.error?.details ?? []).map((d) => [d.field, d.message])) : errors;
      const providers = (app?.oidc_providers ?? [])
        .map(
          (p) =>
            `<tr><td><strong>${esc(p.name)}</strong> <code>${esc(p.id)}</code></td><td class="small">${esc(p.issuer)}</td><td class="hide-sm"><code>${esc(p.client_id)}</code></td><td>${actionButton({ action: `/app/settings/providers/${p.id}/delete`, label: 'Remove', csrf, style: 'danger', confirm: `Remove the sign-in provider ${p.name}?` })}</td></tr>`,
        )
        .join('');
      const providerForm = s.section === 'providers' ? (s.form ?? {}) : {};
      const hookRows = hooks.data
        .map(
          (h) =>
            `<tr><td class="small"><strong>${esc(h.url)}</strong>${h.description ? `<div class="muted">${esc(h.description)}</div>` : ''}<div class="muted mono">${esc(h.id)}</div></td><td>${h.events.map((e) => `<span class="chip">${esc(e)}</span>`).join('')}</td><td class="hide-sm">${when(h.created_at)}</td><td>${actionButton({ action: `/app/settings/webhooks/${h.id}/delete`, label: 'Delete', csrf, style: 'danger', confirm: 'Delete this webhook? Deliveries not yet sent are dropped.' })}</td></tr>`,
        )
        .join('');
      const hookForm = s.section === 'webhooks' ? (s.form ?? {}) : {};
      const chosenEvents = all(hookForm, 'events');
      const body = `<div class="head"><div><h1>Settings</h1><p class="sub">Credentials, the postcard intake, the Magic Link app and webhooks.</p></div></div>
${doneNotice(req)}
<section class="card" id="intake" aria-labelledby="h-intake"><h2 id="h-intake">Postcard intake</h2>
<p>Give clients this URL and a postcard token. They POST JSON with the token in the body field <code>api_token</code>; the service answers <code>202 Accepted</code>.</p>
<p class="id"><code data-intake-url>${esc(intake)}</code>${copyButton(intake)}</p></section>
<section class="card" id="credentials" aria-labelledby="h-keys"><h2 id="h-keys">API keys</h2><p class="muted small">Sent in the <code>X-Service-API-Token</code> header; they also sign in here. Shown once when made; only a hash is kept.</p>
${s.section === 'credentials' && one(s.form ?? {}, 'kind') !== 'postcard' ? here('credentials') : ''}${credentialTable('api')}
<h2 id="h-tokens" class="gap-above-l">Postcard tokens</h2><p class="muted small">The <code>api_token</code> of postcard requests. They cannot call the API.</p>
${s.section === 'credentials' && one(s.form ?? {}, 'kind') === 'postcard' ? here('credentials') : ''}${credentialTable('postcard')}
<p class="hint gap-above">Operator password: ${hasPassword ? 'set' : 'not set'} (<code>paperlink admin set-password</code>).</p></section>
<section class="card" id="magic-link-app" aria-labelledby="h-app"><h2 id="h-app">Magic Link app</h2>
${app ? '' : '<p class="notice error">Not set up yet: Magic Links cannot be made until it is saved.</p>'}${mismatch ? `<p class="notice warn" role="status" data-code="public_url_mismatch">${esc(mismatch)}</p>` : ''}${here('app')}
<form method="post" action="/app/settings/magic-link">${csrfField(csrf)}
<div class="row">
${field({ name: 'public_url', label: 'Public URL of this service', type: 'url', value: s.section === 'app' ? one(appForm, 'public_url') : app && !app.public_url_follows_server ? app.public_url : '', errors: appErrors, attrs: `placeholder="${esc(service.apps.magicLink.serverUrl)}"`, hint: `Links point here: <public URL>/l/<token>. Empty: this server's address (PUBLIC_URL), now ${service.apps.magicLink.serverUrl}.` })}
${field({ name: 'organization_name', label: 'Organisation name', value: appValue('organization_name'), errors: appErrors })}
${field({ name: 'sender_name', label: 'Sender name', value: appValue('sender_name'), errors: appErrors })}
${field({ name: 'sender_email', label: 'Sender e-mail', type: 'email', value: appValue('sender_email'), errors: appErrors })}
${field({ name: 'logo_url', label: 'Logo URL (optional)', value: appValue('logo_url'), errors: appErrors, hint: 'https URL or a data: URI; shown on the pages and e-mails.' })}
<div class="field"><label for="f-accent_color">Accent colour</label><input id="f-accent_color" name="accent_color" type="color" value="${esc(appValue('accent_color', '#1F6FEB'))}">${appErrors.get('accent_color') ? `<div class="err">${esc(appErrors.get('accent_color')!)}</div>` : ''}</div>
</div>
<div class="field" role="group" aria-labelledby="h-auth"><strong class="small" id="h-auth">Allowed authentication types</strong><div class="choices">
<label><input type="checkbox" name="auth_types" value="email"${authTypes.includes('email') ? ' checked' : ''}> Email code</label>
<label><input type="checkbox" name="auth_types" value="social"${authTypes.includes('social') ? ' checked' : ''}> Social sign-in</label></div>${appErrors.get('auth_types') ? `<div class="err">${esc(appErrors.get('auth_types')!)}</div>` : ''}</div>
<button type="submit">Save Magic Link settings</button></form>
<h3>Social sign-in providers (OpenID Connect)</h3>${here('providers')}
<div class="scroll"><table><thead><tr><th>Provider</th><th>Issuer</th><th class="hide-sm">Client id</th><th><span class="skip">Actions</span></th></tr></thead><tbody>${providers || '<tr><td colspan="4" class="muted">None. Add one to offer social sign-in.</td></tr>'}</tbody></table></div>
<form method="post" action="/app/settings/providers" class="gap-above">${csrfField(csrf)}<div class="row">
${field({ name: 'id', label: 'Id', value: one(providerForm, 'id'), hint: 'Lowercase, e.g. google' })}
${field({ name: 'name', label: 'Button name', value: one(providerForm, 'name'), hint: 'e.g. Google' }).replace(/f-name/g, 'f-provider-name')}
${field({ name: 'issuer', label: 'Issuer URL', type: 'url', value: one(providerForm, 'issuer') })}
${field({ name: 'client_id', label: 'Client id', value: one(providerForm, 'client_id') })}
${field({ name: 'client_secret', label: 'Client secret', type: 'password', attrs: 'autocomplete="off"' })}
</div><button type="submit" class="secondary">Add provider</button></form></section>
<section class="card" id="webhooks" aria-labelledby="h-hooks"><h2 id="h-hooks">Webhooks</h2><p class="muted small">Signed POSTs to your URL when documents, links and postcards change.</p>${here('webhooks')}
<div class="scroll"><table><thead><tr><th>URL</th><th>Events</th><th class="hide-sm">Created</th><th><span class="skip">Actions</span></th></tr></thead><tbody>${hookRows || '<tr><td colspan="4" class="muted">None.</td></tr>'}</tbody></table></div>
<form method="post" action="/app/settings/webhooks" class="gap-above">${csrfField(csrf)}<div class="row">
${field({ name: 'url', label: 'Endpoint URL', type: 'url', value: one(hookForm, 'url') })}
${field({ name: 'description', label: 'Description (optional)', value: one(hookForm, 'description') })}</div>
<div class="field" role="group" aria-labelledby="h-events"><strong class="small" id="h-events">Events</strong><div class="choices">
<label><input type="checkbox" name="events" value="*"${chosenEvents.includes('*') ? ' checked' : ''}> All events</label>
${EVENT_TYPES.map((t) => `<label><input type="checkbox" name="events" value="${t}"${chosenEvents.includes(t) ? ' checked' : ''}> <code>${t}</code></label>`).join('')}</div></div>
<button type="submit" class="secondary">Add webhook</button></form></section>`;
      return page(req, reply, 'settings', 'Settings', body, s.status);
    }

    web.get('/settings', async (req, reply) => settingsPage(req, reply));
    web.post('/settings/credentials', async (req, reply) => {
      const form = req.body as Form;
      const kind: KeyKind = one(form, 'kind') === 'postcard' ? 'postcard' : 'api';
      try {
        const { secret, key } = await service.keys.create(kind, one(form, 'name'));
        const what = kind === 'api' ? 'API key' : 'postcard token';
        return settingsPage(req, reply, {
          section: 'credentials',
          form,
          secret: {
            title: `New ${what} "${key.name}"`,
            value: secret,
            hint: `Copy it now: it is shown only this once. Only its hash is kept.`,
          },
        });
      } catch (err) {
        return settingsPage(req, reply, { section: 'credentials', form, error: failureOf(err), status: 422 });
      }
    });
    web.post('/settings/credentials/:id/revoke', async (req, reply) => {
      await service.keys.revoke((req.params as { id: string }).id);
      return reply.redirect('/app/settings?done=revoked#credentials', 303);
    });
    web.post('/settings/magic-link', async (req, reply) => {
      const form = req.body as Form;
      const body: Record<string, unknown> = { auth_types: all(form, 'auth_types') };
      for (const k of ['sender_name', 'sender_email', 'organization_name', 'accent_color'])
        body[k] = one(form, k).trim();
      // empty: follow this server's address
      body.public_url = one(form, 'public_url').trim() || null;
      body.logo_url = one(form, 'logo_url').trim() || null;
      try {
        await service.apps.magicLink.put(body);
      } catch (err) {
        return settingsPage(req, reply, { section: 'app', form, error: failureOf(err), status: 422 });
      }
      return reply.redirect('/app/settings?done=app_saved#magic-link-app', 303);
    });
    web.post('/settings/providers', async (req, reply) => {
      const form = req.body as Form;
      const current = (await service.apps.magicLink.get())?.oidc_providers ?? [];
      const added = {
        id: one(form, 'id').trim(),
        name: one(form, 'name').trim(),
        issuer: one(form, 'issuer').trim(),
        client_id: one(form, 'client_id').trim(),
        client_secret: one(form, 'client_secret') || undefined,
      };
      try {
        await service.apps.magicLink.put({ oidc_providers: [...current, added] });
      } catch (err) {
        const f = failureOf(err);
        // the new provider is the last of the list: name its fields plainly
        const last = `oidc_providers[${current.length}].`;
        return settingsPage(req, reply, {
          section: 'providers',
          form,
          error: { ...f, details: f.details.map((d) => ({ ...d, field: d.field.replace(last, '') })) },
          status: 422,
        });
      }
      return reply.redirect('/app/settings?done=app_saved#magic-link-app', 303);
    });
    web.post('/settings/providers/:id/delete', async (req, reply) => {
      const { id } = req.params as { id: string };
      const current = (await service.apps.magicLink.get())?.oidc_providers ?? [];
      try {
        await service.apps.magicLink.put({ oidc_providers: current.filter((p) => p.id !== id) });
      } catch (err) {
        return settingsPage(req, reply, { section: 'providers', error: failureOf(err), status: 422 });
      }
      return reply.redirect('/app/settings?done=provider_removed#magic-link-app', 303);
    });
    web.post('/settings/webhooks', async (req, reply) => {
      const form = req.body as Form;
      const events = all(form, 'events');
      try {
        const hook = await service.webhooks.create({
          url: one(form, 'url').trim(),
          events: events.includes('*') ? '*' : events,
          description: one(form, 'description').trim() || undefined,
        });
        return settingsPage(req, reply, {
          section: 'webhooks',
          secret: {
            title: `Webhook for ${hook.url} created. Its signing secret:`,
            value: hook.secret!,
            hint: 'Copy it now: verify the Paperlink-Signature header of each delivery with it. It is not shown again.',
          },
        });
      } catch (err) {
        return settingsPage(req, reply, { section: 'webhooks', form, error: failureOf(err), status: 422 });
      }
    });
    web.post('/settings/webhooks/:id/delete', async (req, reply) => {
      await service.webhooks.remove((req.params as { id: string }).id);
      return reply.redirect('/app/settings?done=webhook_deleted#webhooks', 303);
    });
  };
}
