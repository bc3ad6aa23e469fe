/**
 * What the recipient's routes (/l/<token>…) share: the viewing session's cookie, who is asking,
 * the pages they answer with, and who a recipient says they are.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OpenLink, Visitor } from '..';
import { allows, hasList } from '../model';
import { isEmail } from '../../guards';
import type { Service } from '../../service';
import { pageHeaders } from '../../http/headers';
import { brandOf, maskEmail, signInPage, unavailablePage } from '../pages';
import { senderOf } from '../mail';
import { secureCookies } from '../../config';

/** The viewing session's cookie, scoped to its link's path. */
export const COOKIE = 'paperlink_link';

/** The helpers of the recipient's routes, for one service. */
export function recipientKit(service: Service) {
  const secure = secureCookies(service.config);
  const visitor = (req: FastifyRequest): Visitor => ({ ip: req.ip, userAgent: req.headers['user-agent'] });
  const brand = async () => brandOf(await service.apps.magicLink.get());
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
      sender: senderOf(link.app),
      authType: link.row.auth_type as 'email' | 'social',
      maskedEmail: maskEmail(link.row.auth_email),
      askEmail: hasList(link.row),
      action: `/l/${token}`,
      providers: link.app.oidc_providers.map((p) => ({ id: p.id, name: p.name })),
      viewsLeft: link.row.max_views === null ? null : link.row.max_views - link.row.views_used,
      ...extra,
    });
  const sessionCookie = (reply: FastifyReply, token: string, session: string) =>
    reply.setCookie(COOKIE, session, {
      path: `/l/${token}`,
      httpOnly: true,
      sameSite: 'lax',
      secure,
      maxAge: 12 * 60 * 60,
    });
  return { secure, visitor, brand, show, gone, claimed, signIn, sessionCookie };
}
