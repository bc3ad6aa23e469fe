/** The postcard webhook (no version prefix, token in the body) and the operator's view of postcards. */
import type { FastifyInstance } from 'fastify';
import { parsePageQuery } from '../pagination';
import type { Service } from '../service';
import { requireJson } from './errors';

/** A postcard request is small: bodies above this are refused with 413 whatever BODY_LIMIT says. */
export const POSTCARD_BODY_LIMIT = 64 * 1024;

export function registerPostcardRoutes(app: FastifyInstance, service: Service): void {
  app.post(
    service.config.postcardPath,
    { bodyLimit: Math.min(POSTCARD_BODY_LIMIT, service.config.bodyLimit) },
    async (req, reply) => {
      requireJson(req);
      const key = req.headers['idempotency-key'];
      const result = await service.postcards.accept(req.body, key === undefined ? undefined : String(key));
      if (result.replayed) void reply.header('Idempotent-Replayed', 'true');
      return reply.status(202).send({ id: result.id, status: result.status });
    },
  );
  app.get('/v1/postcards', async (req) => {
    const query = req.query as Record<string, unknown>;
    return service.postcards.list(parsePageQuery(query), query.status === undefined ? undefined : String(query.status));
  });
  app.get('/v1/postcards/:id', async (req) => service.postcards.get((req.params as { id: string }).id));
}
