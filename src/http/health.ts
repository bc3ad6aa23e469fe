/** Whether this server answers and should get traffic, and the OpenAPI document. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../service';
import { errorBody } from './errors';
import { answer, errors, ErrorSchema, HealthSchema, oneOf } from './schemas';

/** GET /healthz, /readyz and /openapi.json. */
export const healthRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();

    api.get(
      '/healthz',
      {
        schema: {
          operationId: 'health',
          summary: 'Whether the service and its database answer',
          security: [],
          response: { 200: answer(HealthSchema, 'Healthy.'), ...errors(500) },
        },
      },
      async () => {
        await service.ping();
        return {
          status: 'ok' as const,
          database: service.database.dialect,
          storage: service.storage.kind,
          version: service.version,
        };
      },
    );
    // ready for traffic: the database answers (migrations ran and the engine started before the
    // app was built), and the server is not shutting down
    api.get(
      '/readyz',
      {
        schema: {
          operationId: 'ready',
          summary:
            'Whether this server should get traffic: its database answers, its disk takes writes, and it is not shutting down',
          security: [],
          response: {
            200: Type.Object(
              {
                status: Type.Literal('ready'),
                database: oneOf(['sqlite', 'postgres'] as const),
                engine: oneOf(['embedded', 'temporal'] as const),
              },
              { description: 'Ready.', examples: [{ status: 'ready', database: 'sqlite', engine: 'embedded' }] },
            ),
            503: answer(
              ErrorSchema,
              'Not ready: `stopping` (shutting down), `database_unavailable`, or `insufficient_storage` (a write was refused for a full or read-only disk, and a small write of its own still is).',
            ),
          },
        },
      },
      async (_req, reply) => {
        try {
          await service.ping();
        } catch (err) {
          return reply
            .status(503)
            .send(
              errorBody(
                'database_unavailable',
                `The database does not answer (${err instanceof Error ? err.message : String(err)}). Check that it runs and DATABASE_URL or DATA_DIR.`,
              ),
            );
        }
        // a disk that refused a write: not ready until a write of its own goes through
        const refused = await service.writes.check();
        if (refused) return reply.status(503).send(errorBody(refused.code, refused.message));
        return { status: 'ready' as const, database: service.database.dialect, engine: service.config.engine };
      },
    );
    api.get(
      '/openapi.json',
      {
        schema: {
          operationId: 'openapi',
          summary: 'This document',
          security: [],
          response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1.' }) },
        },
      },
      async () => app.swagger() as unknown as Record<string, unknown>,
    );
  };
