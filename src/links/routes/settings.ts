/** The Magic Link app's settings (GET and PUT /v1/apps/magic_link): sender, branding, sign-in, defaults. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { publicView } from '../app';
import type { Service } from '../../service';
import { answer, described, errors } from '../../http/schemas';
import { MagicLinkAppSchema } from '../schemas';

export const settingsRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['Magic Links'];
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
  };
