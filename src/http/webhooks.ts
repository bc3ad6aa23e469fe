/** Webhook subscriptions: create (the signing secret shown once), list, get, delete, deliveries, test. */
import type { FastifyInstance } from 'fastify';
import { parsePageQuery } from '../pagination';
import type { Service } from '../service';
import { requireJson } from './errors';

export function registerWebhookRoutes(app: FastifyInstance, service: Service): void {
  const { webhooks } = service;
  const id = (req: { params: unknown }) => (req.params as { id: string }).id;

  app.post('/v1/webhooks', async (req, reply) => {
    requireJson(req);
    return reply.status(201).send(await webhooks.create(req.body));
  });
  app.get('/v1/webhooks', async (req) => webhooks.list(parsePageQuery(req.query as Record<string, unknown>)));
  app.get('/v1/webhooks/:id', async (req) => webhooks.get(id(req)));
  app.delete('/v1/webhooks/:id', async (req) => {
    await webhooks.remove(id(req));
    return { id: id(req), object: 'webhook', deleted: true };
  });
  app.get('/v1/webhooks/:id/deliveries', async (req) =>
    webhooks.deliveries(id(req), parsePageQuery(req.query as Record<string, unknown>)),
  );
  app.post('/v1/webhooks/:id/test', async (req, reply) => {
    const { event, delivery_id } = await webhooks.test(id(req));
    return reply.status(202).send({ object: 'test_delivery', event_id: event.id, delivery_id, status: 'pending' });
  });
}
