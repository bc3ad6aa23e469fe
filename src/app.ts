/**
 * The whole server: the HTTP API and the recipient's pages (src/http), and the operator's web app
 * (src/web) under /app. Composed here so that the web app may use the HTTP layer's parts (headers,
 * multipart forms, assets, the error answer) while the HTTP layer knows nothing of the web app.
 */
import type { FastifyInstance } from 'fastify';
import { buildApi, type AppOptions } from './http/app';
import type { Service } from './service';
import { webApp } from './web';

export { registeredRoutes, type AppOptions } from './http/app';

export async function buildApp(service: Service, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await buildApi(service, options);
  await app.register(webApp(service), { prefix: '/app' });
  app.get('/', async (_req, reply) => reply.redirect('/app', 302));
  return app;
}
