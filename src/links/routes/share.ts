/** Sharing a stored document: POST /v1/documents/:id/magic_links makes a Magic Link and e-mails it. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../../service';
import { answer, described, errors, IdParams } from '../../http/schemas';
import { exampleDocument } from '../../documents/schemas';
import { MagicLinkSchema, MagicLinkSettingsSchema } from '../schemas';

export const shareRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['Magic Links'];
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
  };
