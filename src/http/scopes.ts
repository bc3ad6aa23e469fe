/**
 * The scope each route of the API needs (src/keys SCOPES). One table, so that what a key may do
 * reads in one place; a /v1 route missing from it needs `admin`, so a new route is closed until
 * it is given its scope (test/http/scopes.test.ts lists every route against this table).
 */
import { ForbiddenError } from '../errors';
import type { KeyInfo, Scope } from '../keys';

const ROUTES: Record<string, Scope | readonly Scope[] | null> = {
  // any valid key: who am I, and may I do these
  'GET /v1/key': null,
  'POST /v1/generate': 'generate',
  'GET /v1/documents': 'documents:read',
  'GET /v1/documents/:id': 'documents:read',
  'GET /v1/documents/:id/pdf': 'documents:read',
  'GET /v1/documents/:id/pages/:page': 'documents:read',
  'DELETE /v1/documents/:id': 'documents:write',
  // sharing a stored document lets whoever opens the link read it: a key must be allowed to read it too
  'POST /v1/documents/:id/magic_links': ['links:write', 'documents:read'],
  'GET /v1/magic_links': 'links:read',
  'GET /v1/magic_links/:id': 'links:read',
  'GET /v1/magic_links/:id/access_log': 'links:read',
  'POST /v1/magic_links/expire': 'links:write',
  'POST /v1/magic_links/:id/expire': 'links:write',
  'POST /v1/magic_links/:id/resend': 'links:write',
  'GET /v1/templates': 'templates:read',
  'GET /v1/templates/:id': 'templates:read',
  'POST /v1/templates': 'templates:write',
  'DELETE /v1/templates/:id': 'templates:write',
  'GET /v1/templates/:id/versions': 'templates:read',
  'GET /v1/templates/:id/versions/:version': 'templates:read',
  'GET /v1/templates/:id/versions/:version/source': 'templates:read',
  'POST /v1/templates/:id/versions': 'templates:write',
  'POST /v1/templates/:id/versions/:version/make_current': 'templates:write',
  // runs what it is given, as an upload does, and shows a stored template's content and sample values
  'POST /v1/templates/preview': ['templates:write', 'templates:read'],
  'GET /v1/templates/gallery': 'templates:read',
  'POST /v1/templates/gallery/:key/use': 'templates:write',
  'GET /v1/postcards': 'postcards:read',
  'GET /v1/postcards/:id': 'postcards:read',
  'GET /v1/postcards/:id/proof': 'postcards:read',
  'GET /v1/apps/mail_partner': 'admin',
  'PUT /v1/apps/mail_partner': 'admin',
  'GET /v1/apps/magic_link': 'admin',
  'PUT /v1/apps/magic_link': 'admin',
  'GET /v1/apps/inkit_storage': 'admin',
  'PUT /v1/apps/inkit_storage': 'admin',
  'GET /v1/webhooks': 'admin',
  'POST /v1/webhooks': 'admin',
  'GET /v1/webhooks/:id': 'admin',
  'DELETE /v1/webhooks/:id': 'admin',
  'POST /v1/webhooks/:id/test': 'admin',
  'GET /v1/webhooks/:id/deliveries': 'admin',
};

/**
 * Fields a read answers with that belong to another scope than the route's (a document's Magic
 * Links hold their recipients' addresses): left out for a key without that scope. Answers to
 * writes echo what their request named (a generate's magic_link, its recipient included).
 */
export const FIELD_SCOPES: Record<string, Scope> = {
  magic_links: 'links:read',
  recipient_email: 'links:read',
  auth_email: 'links:read',
};

/** Whether `key` may read `field` of an answer (FIELD_SCOPES). */
export function mayRead(key: KeyInfo, field: keyof typeof FIELD_SCOPES): boolean {
  return key.scopes.includes(FIELD_SCOPES[field]);
}

/** A route's key in the table: a HEAD is its GET. */
const routeKey = (method: string, url: string) => `${method === 'HEAD' ? 'GET' : method} ${url}`;

/** The scopes a /v1 route needs, all of them (`url` as registered, e.g. /v1/documents/:id); none: any valid key. */
export function scopesOf(method: string, url: string): Scope[] {
  const found = ROUTES[routeKey(method, url)];
  if (found === undefined) return ['admin'];
  return found === null ? [] : [found].flat();
}

/** Whether the table names this route (the route test checks every registered one is named). */
export function hasScopeEntry(method: string, url: string): boolean {
  return routeKey(method, url) in ROUTES;
}

/** Throws 403 insufficient_scope when `key` may not do what `scope` names. */
export function requireScopes(key: KeyInfo, scopes: readonly Scope[]): void {
  const missing = scopes.filter((s) => !key.scopes.includes(s));
  if (missing.length)
    throw new ForbiddenError(
      `This API key lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}. Make a key that has ${missing.length > 1 ? 'them' : 'it'} (paperlink keys create --scope …), or use one that does.`,
      'insufficient_scope',
      {
        details: missing.map((s) => ({
          field: 'X-Service-API-Token',
          message: `the key lacks the scope ${s}`,
          code: 'insufficient_scope',
        })),
      },
    );
}
