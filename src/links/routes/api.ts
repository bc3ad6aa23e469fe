/** The operator's Magic Link API: list, get, access log, revoke (one or many), resend. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../../service';
import { answer, errors, IdParams, List, oneOf, PageQuery, pageOf } from '../../http/schemas';
import { MagicLinkSchema } from '../schemas';

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

export const linkApiRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { links } = service;
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['Magic Links'];
    const linkParams = IdParams('Magic Link', 'ml_01m82kzq5az78r9b7p2fxgxka8');
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
  };
