/**
 * The whole server, composed: the HTTP server every route shares (src/http), each resource's
 * routes from its own folder (src/<resource>/routes.ts), and the operator's web app (src/web) under
 * /app. An operation in /openapi.json is handled in the routes file of its resource's folder.
 */
import type { FastifyInstance } from 'fastify';
import { DOCUMENT_SCHEMAS } from './documents/schemas';
import { documentRoutes, storageAppRoutes } from './documents/routes';
import { GENERATE_SCHEMAS } from './generate/schemas';
import { generateRoutes } from './generate/routes';
import { httpServer, type AppOptions } from './http/app';
import { assetRoutes } from './http/assets';
import { healthRoutes } from './http/health';
import { keyRoutes } from './keys/routes';
import { LINK_SCHEMAS } from './links/schemas';
import { linkRoutes } from './links/routes';
import { POSTCARD_SCHEMAS } from './postcards/schemas';
import { postcardRoutes } from './postcards/routes';
import type { Service } from './service';
import { TEMPLATE_SCHEMAS } from './templates/schemas';
import { templateRoutes } from './templates/routes';
import { webApp } from './web';
import { WEBHOOK_SCHEMAS } from './webhooks/schemas';
import { webhookRoutes } from './webhooks/routes';

export { registeredRoutes, type AppOptions } from './http/app';

/** Every resource's shared schemas (those with an `$id`), registered once on the server. */
const SCHEMAS = [
  ...WEBHOOK_SCHEMAS,
  ...GENERATE_SCHEMAS,
  ...TEMPLATE_SCHEMAS,
  ...DOCUMENT_SCHEMAS,
  ...LINK_SCHEMAS,
  ...POSTCARD_SCHEMAS,
];

export async function buildApp(service: Service, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await httpServer(service, SCHEMAS, options);
  await app.register(keyRoutes, { prefix: '/v1/key' });
  await app.register(healthRoutes(service));
  await app.register(generateRoutes(service), { prefix: '/v1/generate' });
  await app.register(templateRoutes(service), { prefix: '/v1/templates' });
  await app.register(documentRoutes(service), { prefix: '/v1/documents' });
  await app.register(storageAppRoutes(service));
  await app.register(assetRoutes);
  await app.register(linkRoutes(service));
  await app.register(postcardRoutes(service));
  await app.register(webhookRoutes(service), { prefix: '/v1/webhooks' });
  await app.register(webApp(service), { prefix: '/app' });
  app.get('/', async (_req, reply) => reply.redirect('/app', 302));
  return app;
}
