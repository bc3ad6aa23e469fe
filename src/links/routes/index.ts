/**
 * Magic Link routes: the operator's API under /v1 (behind the API key: the app's settings,
 * sharing a document, the links themselves) and the recipient's pages under /l/<token> (behind the
 * e-mailed code or a social sign-in, then a session cookie), one file each.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../../service';
import { linkApiRoutes } from './api';
import { settingsRoutes } from './settings';
import { shareRoutes } from './share';
import { codeRoutes } from './signin';
import { socialRoutes } from './social';
import { viewerRoutes } from './viewer';

export const linkRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    for (const routes of [settingsRoutes, shareRoutes, linkApiRoutes, viewerRoutes, codeRoutes, socialRoutes])
      await app.register(routes(service));
  };
