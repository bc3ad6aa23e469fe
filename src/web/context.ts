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
  generated: 'Document generated.',
  shared: 'Magic Link created and e-mailed.',
  link_expired: 'The link was expired: it no longer opens.',
  links_expired: 'The selected links were expired: they no longer open.',
  none_selected: 'No link was selected: tick the links to expire first.',
  revoked: 'Revoked. Requests with it are refused from now on.',
  app_saved: 'Magic Link app settings saved.',
  retention_saved: 'Document retention saved: it applies to documents made from now on.',
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
