/** The API key making the call: its name and scopes, and a check that it has some. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ALL_SCOPES, parseScopes } from '.';
import { errors, oneOf } from '../http/schemas';
import { requireScopes } from '../http/scopes';

const KeyInfoSchema = Type.Object({
  object: Type.Literal('api_key'),
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  scopes: Type.Array(oneOf(ALL_SCOPES)),
});

/** GET /v1/key. */
export const keyRoutes: FastifyPluginAsync = async (app) => {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // the key itself: its name and scopes; `?require=a,b` answers 403 insufficient_scope unless it has them all
  api.get(
    '',
    {
      schema: {
        operationId: 'getKey',
        summary: 'The API key making the call: its name and scopes',
        description:
          'Any live key may call it. With `require`, it also checks the key has every scope named, and answers 403 `insufficient_scope` naming those it lacks (the n8n credential test uses it).',
        querystring: Type.Object({
          require: Type.Optional(
            Type.String({
              maxLength: 500,
              pattern: `^\\s*(${ALL_SCOPES.join('|')})?(\\s*,\\s*(${ALL_SCOPES.join('|')})?)*\\s*$`,
              description: 'Scopes the key must have, comma-separated, e.g. `generate,documents:read`.',
            }),
          ),
        }),
        response: {
          200: {
            ...KeyInfoSchema,
            description: 'The key.',
            examples: [
              {
                object: 'api_key',
                id: 'key_01m82kzq5az78r9b7p2fxgxka8',
                name: 'n8n production',
                prefix: 'plk_7fK2aQ9x',
                scopes: ['generate', 'documents:read'],
              },
            ],
          },
          ...errors(401, 422),
        },
      },
    },
    async (req, reply) => {
      const key = req.apiKey!;
      const names = (req.query.require ?? '').split(',').filter((n) => n.trim());
      if (names.length) {
        const required = parseScopes(names, 'require');
        const missing = required.filter((s) => !key.scopes.includes(s));
        // a client that shows only the status line (n8n's credential test shows its reason phrase,
        // never the body) still learns which scopes to add
        if (missing.length) reply.raw.statusMessage = `Forbidden: this API key lacks ${missing.join(', ')}`;
        requireScopes(key, required);
      }
      return { object: 'api_key' as const, id: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes };
    },
  );
};
