/**
 * What every section of the web app shares: the signed-in page, the answers to a refused form,
 * the API's failures as a form shows them, and reading a multipart form.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sameToken, type AdminSession } from '../admin';
import { AuthenticationError, ConflictError, PaperlinkError, ValidationError, type ErrorDetail } from '../errors';
import { readMultipart } from '../http/multipart';
import type { Service } from '../service';
import { formMessage, type Form } from './forms';
import { bare, html, layout, notice, type Html, type Section } from './html';

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

/** Rows per page of a list. */
export const PAGE = 50;

/** What a finished action says on the page it redirects to: fixed texts, never text from the URL. */
const DONE: Record<string, string> = {
  template_uploaded: 'Template uploaded.',
  template_deleted: 'Template deleted.',
  template_copied: 'Copied from the gallery into your templates: change it here and save it as your own version.',
  version_saved: 'Saved as a new version; it is the current one now.',
  version_made_current: 'That version is the current one now.',
  generated: 'Document generated.',
  shared: 'Magic Link created and e-mailed.',
  link_expired: 'The link was expired: it no longer opens.',
  links_expired: 'The selected links were expired: they no longer open.',
  none_selected: 'No link was selected: tick the links to expire first.',
  revoked: 'Revoked. Requests with it are refused from now on.',
  app_saved: 'Magic Link app settings saved.',
  retention_saved: 'Document retention saved: it applies to documents made from now on.',
  partner_saved: 'Mail partner saved: live postcards rendered from now on are handed to it.',
  provider_removed: 'Sign-in provider removed.',
  webhook_deleted: 'Webhook deleted.',
};

/** The API's failure as the page shows it. */
export interface Failure {
  message: string;
  details: ErrorDetail[];
}

/**
 * A refusal the form can show beside what was typed: a rule (every detail in the form's words),
 * or a state to fix first (Magic Links not set up, a conflict, a limit). Anything else is a fault.
 */
export function failureOf(err: unknown): Failure {
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

/**
 * A secret a form made (a key, a token, a webhook's signing secret, a new Magic Link's URL) is shown
 * once, after a redirect: the POST answers 303 with it in a short-lived cookie only the page it
 * redirects to reads, and that page clears the cookie as it shows it. Reloading the page then makes
 * nothing and shows it no more (a page answered to the POST would make another on every reload).
 */
const SHOWN_ONCE_COOKIE = 'plk_new_secret';

export interface ShownOnce {
  title: string;
  value: string;
  hint: string;
  /** Which part of the page made it. */
  section?: string;
}

/** Answers a form that made a secret: a redirect to `path` + `then` (a query, an anchor), the secret in a cookie for that path alone. */
export function redirectShowingOnce(
  reply: FastifyReply,
  secure: boolean,
  path: string,
  then: string,
  secret: ShownOnce,
): FastifyReply {
  void reply.setCookie(SHOWN_ONCE_COOKIE, Buffer.from(JSON.stringify(secret)).toString('base64url'), {
    path,
    httpOnly: true,
    sameSite: 'strict',
    secure,
    maxAge: 300,
  });
  return reply.redirect(`${path}${then}`, 303);
}

/** The secret a form just made for the page at `path`, if any, and the cookie that held it cleared. */
export function takeShownOnce(req: FastifyRequest, reply: FastifyReply, path: string): ShownOnce | undefined {
  const cookie = req.cookies[SHOWN_ONCE_COOKIE];
  if (!cookie) return undefined;
  void reply.clearCookie(SHOWN_ONCE_COOKIE, { path });
  try {
    const { section, title, value, hint } = JSON.parse(Buffer.from(cookie, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
    if (![title, value, hint].every((x) => typeof x === 'string')) return undefined;
    if (section !== undefined && typeof section !== 'string') return undefined;
    return { title, value, hint, section } as ShownOnce;
  } catch {
    return undefined;
  }
}

/** Answers a form that made a Magic Link: to its document's page, with the link's URL shown there once. */
export function redirectShowingLink(
  reply: FastifyReply,
  secure: boolean,
  documentId: string,
  link: { url: string; recipient_email: string; status: string },
  done: string,
): FastifyReply {
  return redirectShowingOnce(reply, secure, `/app/documents/${encodeURIComponent(documentId)}`, `?done=${done}#links`, {
    section: 'links',
    title: `${done === 'generated' ? 'Document generated. ' : ''}${
      link.status === 'send_failed'
        ? `The Magic Link to ${link.recipient_email} could not be e-mailed yet (it is retried). Its URL:`
        : `Magic Link e-mailed to ${link.recipient_email}. Its URL:`
    }`,
    value: link.url,
    hint: 'Copy it now to send it another way (a chat, your own e-mail): it is not shown again, as only a hash of it is kept. "Resend" e-mails a new URL and ends this one.',
  });
}

/** Sends a whole page. */
export function sendPage(reply: FastifyReply, page: string, status = 200) {
  return reply.status(status).type('text/html; charset=utf-8').send(page);
}

/** The notice of the action that redirected here (`?done=`). */
export function doneNotice(req: FastifyRequest): Html | '' {
  const done = (req.query as { done?: string }).done;
  return notice(done ? DONE[done] : undefined);
}

export function viewer(req: FastifyRequest) {
  return { name: req.admin!.session.name, csrf: req.admin!.csrf };
}

/** Who acts, for the core calls that record it (a generated document's creator). */
export function caller(req: FastifyRequest) {
  return { keyId: req.admin!.session.keyId, name: req.admin!.session.name };
}

/** A signed-in page of `section`. */
export function page(
  req: FastifyRequest,
  reply: FastifyReply,
  o: { section: Section; title: string; body: Html; status?: number; scripts?: Html },
) {
  return sendPage(
    reply,
    layout({ title: o.title, section: o.section, viewer: viewer(req), body: o.body, scripts: o.scripts }),
    o.status,
  );
}

/** The answer to a form without this session's CSRF token. */
export function refuseForgery(reply: FastifyReply) {
  return sendPage(
    reply,
    bare(
      'Form expired',
      html`<h1>This form cannot be sent</h1>
        <p>
          It has no valid security token (it may be from an old page or another site). Go back, reload the page, and
          send it again.
        </p>
        <p><a class="button" href="/app">Back to Paperlink</a></p>`,
    ),
    403,
  );
}

/** Reads a multipart form: its text fields, its files by field name; undefined without the CSRF field. */
export async function multipartForm(
  req: FastifyRequest,
): Promise<{ form: Form; files: Map<string, { filename: string; bytes: Buffer }[]> } | undefined> {
  const upload = await readMultipart(req);
  const form: Form = { ...upload.fields };
  const files = new Map<string, { filename: string; bytes: Buffer }[]>();
  for (const f of upload.files)
    if (f.bytes.length) files.set(f.field, [...(files.get(f.field) ?? []), { filename: f.filename, bytes: f.bytes }]);
  return sameToken(form._csrf, req.admin!.csrf) ? { form, files } : undefined;
}

/** A section of the web app: its routes, registered inside the app (its session and CSRF hooks apply). */
export type WebSection = (service: Service) => (web: FastifyInstance) => Promise<void>;
