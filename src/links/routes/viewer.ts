/**
 * The recipient's viewer: GET /l/<token> (the sign-in page, or the document once signed in, which
 * counts a view), the PDF, one page as an image, and the page analytics the viewer reports.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { NotFoundError, PaperlinkError } from '../../errors';
import { parseReport } from '../pagetimes';
import type { Grant } from '..';
import { settingsOf } from '../model';
import { watermarkText } from '../policy';
import type { Stamp } from '../../templates/viewcopy';
import { Slots } from '../../templates/slots';
import type { Service } from '../../service';
import { contentDisposition } from '../../http/headers';
import { brandOf, viewerPage } from '../pages';
import { senderOf } from '../mail';
import { COOKIE, recipientKit } from './recipient';

/** The watermark of a grant, filled in for this viewing session; none when the link has none. */
function stampOf(grant: Grant, req: FastifyRequest): Stamp | undefined {
  const w = grant.settings.watermark;
  if (!w) return undefined;
  const text = watermarkText(w.text, {
    email: grant.email,
    viewed_at: `${grant.viewedAt.toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    ip: req.ip,
    link_id: grant.linkId,
  });
  return { ...w, text };
}

export const viewerRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { links } = service;
    const { visitor, show, gone, claimed, signIn } = recipientKit(service);
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
            sender: senderOf(link.app),
            message: settings.message,
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

    // one page as an image (what a link without downloads shows), watermarked like the PDF: each
    // page drawn once and kept (src/documents/images.ts), a viewing session's asks at most
    // PAGE_IMAGES_PER_SESSION at a time, behind the renders of generate requests
    const inTurn = perSession();
    app.get<{ Params: { token: string; page: string } }>('/l/:token/pages/:page', async (req, reply) => {
      const { token } = req.params;
      const grant = await links.granted(token, req.cookies[COOKIE]);
      const page = /^[1-9]\d{0,4}$/.test(req.params.page) ? Number(req.params.page) : 0;
      if (!grant || !page) return gone(reply);
      let image;
      try {
        image = await inTurn(grant.sessionHash, () =>
          service.documents.pageImage(grant.documentId, page, stampOf(grant, req)),
        );
      } catch (err) {
        // past the document's last page
        if (err instanceof PaperlinkError && err.code === 'not_found') return gone(reply);
        throw err;
      }
      return reply
        .type('image/png')
        .header('Cache-Control', 'no-store')
        .header('Content-Disposition', 'inline')
        .send(Buffer.from(image));
    });
  };

/** Page images one viewing session is served at once; its other asks wait their turn. */
export const PAGE_IMAGES_PER_SESSION = 2;

/** Runs each session's work PAGE_IMAGES_PER_SESSION at a time, first come first served. */
export function perSession(): <T>(session: string, work: () => Promise<T>) => Promise<T> {
  const gates = new Map<string, Slots>();
  return async (session, work) => {
    let gate = gates.get(session);
    if (!gate) gates.set(session, (gate = new Slots(() => PAGE_IMAGES_PER_SESSION)));
    await gate.take();
    try {
      return await work();
    } finally {
      gate.release();
      const { busy, waiting } = gate.state();
      if (busy === 0 && waiting === 0) gates.delete(session);
    }
  };
}
