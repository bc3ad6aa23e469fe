/** Webhook subscriptions: create (the signing secret shown once), list, get, delete, deliveries, test. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Service } from '../service';
import { answer, Deleted, errors, IdParams, List, PageQuery, pageOf, T } from '../http/schemas';
import { WebhookCreate, WebhookSchema } from './schemas';

const exampleWebhook = {
  id: 'wh_01m82kzq5az78r9b7p2fxgxka8',
  object: 'webhook',
  url: 'https://hooks.example.com/paperlink',
  events: ['document.generated', 'magic_link.viewed'],
  description: 'CRM sync',
  created_at: T,
};
const params = IdParams('webhook', exampleWebhook.id);
const tags = ['Webhooks'];

/** Under /v1/webhooks. */
export const webhookRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const { webhooks } = service;
    const api = app.withTypeProvider<TypeBoxTypeProvider>();

    api.post(
      '',
      {
        schema: {
          operationId: 'createWebhook',
          tags,
          summary: 'Subscribe an https endpoint to events; the signing secret is in this answer only',
          description:
            'Deliveries are signed (`Paperlink-Signature`), retried with back-off, and kept in order per resource. See docs/webhooks.md.',
          body: WebhookCreate,
          response: {
            201: answer(WebhookSchema, 'The subscription, with its `secret` (shown once).', {
              ...exampleWebhook,
              secret: 'whsec_kQ3v9RwT2mX8pL5nB7cY4zH6jD1fG0sA',
            }),
            ...errors(400, 401, 409, 415, 422),
          },
        },
      },
      async (req, reply) => {
        return reply.status(201).send(await webhooks.create(req.body));
      },
    );
    api.get(
      '',
      {
        schema: {
          operationId: 'listWebhooks',
          tags,
          summary: 'List webhook subscriptions, newest first',
          querystring: PageQuery,
          response: {
            200: { ...List('Webhook'), description: 'A page of subscriptions (no secrets).' },
            ...errors(401, 422),
          },
        },
      },
      async (req) => webhooks.list(pageOf(req.query)),
    );
    api.get(
      '/:id',
      {
        schema: {
          operationId: 'getWebhook',
          tags,
          summary: 'A webhook subscription (without its secret)',
          params,
          response: {
            200: answer(WebhookSchema, 'The subscription.', exampleWebhook),
            ...errors(401, 404),
          },
        },
      },
      async (req) => webhooks.get(req.params.id),
    );
    api.delete(
      '/:id',
      {
        schema: {
          operationId: 'deleteWebhook',
          tags,
          summary: 'Unsubscribe: no more deliveries to it',
          params,
          response: { 200: { ...Deleted('webhook'), description: 'Deleted.' }, ...errors(401, 404) },
        },
      },
      async (req) => {
        await webhooks.remove(req.params.id);
        return { id: req.params.id, object: 'webhook' as const, deleted: true as const };
      },
    );
    api.get(
      '/:id/deliveries',
      {
        schema: {
          operationId: 'listWebhookDeliveries',
          tags,
          summary: "A subscription's deliveries, newest first, with every attempt",
          params,
          querystring: PageQuery,
          response: { 200: { ...List('Delivery'), description: 'A page of deliveries.' }, ...errors(401, 404, 422) },
        },
      },
      async (req) => webhooks.deliveries(req.params.id, pageOf(req.query)),
    );
    api.post(
      '/:id/test',
      {
        schema: {
          operationId: 'testWebhook',
          tags,
          summary: 'Send a `webhook.test` event to this subscription now',
          params,
          response: {
            202: Type.Object(
              {
                object: Type.Literal('test_delivery'),
                event_id: Type.String(),
                delivery_id: Type.String(),
                status: Type.Literal('pending'),
              },
              {
                additionalProperties: false,
                description: 'The test event was queued for delivery.',
                examples: [
                  {
                    object: 'test_delivery',
                    event_id: 'evt_01m82kzq5az78r9b7p2fxgxka8',
                    delivery_id: 'dlv_01m82kzq5az78r9b7p2fxgxka8',
                    status: 'pending',
                  },
                ],
              },
            ),
            ...errors(401, 404),
          },
        },
      },
      async (req, reply) => {
        const { event, delivery_id } = await webhooks.test(req.params.id);
        return reply.status(202).send({ object: 'test_delivery', event_id: event.id, delivery_id, status: 'pending' });
      },
    );
  };
