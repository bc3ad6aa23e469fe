/** The postcard webhook (no version prefix, token in the body) and the operator's view of postcards. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../service';
import { EXAMPLE_IDS } from '../templates/store';
import { AuthenticationError } from '../errors';
import { isObject } from '../guards';
import {
  answer,
  described,
  errors,
  IdempotencyHeader,
  IdParams,
  List,
  oneOf,
  PageQuery,
  pageOf,
} from '../http/schemas';
import { PostcardRequestSchema, PostcardSchema } from './schemas';

/** A postcard request is small: bodies above this are refused with 413 whatever BODY_LIMIT says. */
export const POSTCARD_BODY_LIMIT = 64 * 1024;

const tags = ['Postcards'];

/** At POSTCARD_PATH (the intake) and under /v1/postcards. */
export const postcardRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    api.post(
      service.config.postcardPath,
      {
        bodyLimit: Math.min(POSTCARD_BODY_LIMIT, service.config.bodyLimit),
        // the schema's verdict waits for the token (accept): no live token is a 401 whatever the body
        attachValidation: true,
        schema: {
          operationId: 'submitPostcard',
          tags,
          summary: 'Submit a postcard request (the postcard webhook)',
          description:
            'The token is the body field `api_token` (a postcard token, `paperlink tokens create --kind postcard`), never a header. Fields as spec 2.5; any other field is custom data that fills merge fields of the same name. Answered 202 only after the request is stored durably; rendered afterwards. An Idempotency-Key gives the same id again for the same request within 24 hours (another request under it: 409 `idempotency_key_reused`); after 24 hours it starts a new postcard.',
          security: [],
          headers: IdempotencyHeader,
          body: described(PostcardRequestSchema, {
            api_token: 'plp_…',
            template_id: EXAMPLE_IDS.postcard,
            first_name: 'Jordan',
            last_name: 'Alvarez',
            email: 'jordan@example.com',
            address_line_1: '742 Evergreen Terrace',
            address_city: 'Springfield',
            address_state: 'OR',
            address_zip: '97477',
            address_country: 'US',
            source: 'website',
            tagline: 'See you on the slopes',
          }),
          response: {
            202: Type.Object(
              {
                id: Type.String(),
                status: oneOf(['received', 'rendered', 'failed'], {
                  description:
                    '`received` in the first answer; an answer replayed for its Idempotency-Key says where it is now.',
                }),
              },
              {
                additionalProperties: false,
                description: 'Stored; it will be rendered.',
                examples: [{ id: 'pc_01m82kzq5az78r9b7p2fxgxka8', status: 'received' }],
              },
            ),
            ...errors(400, 401, 409, 413, 415, 422, 500),
          },
        },
      },
      async (req, reply) => {
        // the credential first (accept checks it): without it, a broken body says nothing
        const result = await service.postcards.accept(req.body, req.headers['idempotency-key'], req.validationError);
        if (result.replayed) void reply.header('Idempotent-Replayed', 'true');
        return reply.status(202).send({ id: result.id, status: result.status });
      },
    );
    // what the n8n credential's Test asks: is this a live postcard token? (no postcard is made)
    api.post(
      `${service.config.postcardPath}/token`,
      {
        bodyLimit: 4096,
        attachValidation: true,
        schema: {
          operationId: 'checkPostcardToken',
          tags,
          summary: 'Check a postcard token without submitting a postcard',
          description:
            "The token is the body field `api_token`, as in a postcard request. Answers 200 with the token's name and prefix when it is a live postcard token, 401 otherwise. Rate-limited with the intake.",
          security: [],
          body: described(Type.Object({ api_token: Type.String({ maxLength: 200 }) }), { api_token: 'plp_…' }),
          response: {
            200: Type.Object(
              {
                object: Type.Literal('postcard_token'),
                name: Type.String(),
                prefix: Type.String({ description: 'The first characters of the token, as lists show it.' }),
              },
              {
                additionalProperties: false,
                description: 'A live postcard token.',
                examples: [{ object: 'postcard_token', name: 'website form', prefix: 'plp_3xK9mQ2v' }],
              },
            ),
            ...errors(400, 401, 413, 415, 422),
          },
        },
      },
      async (req) => {
        // as the intake: whatever the body is, no live token is a 401 before anything else
        const body: unknown = req.body;
        const token = await service.keys.authenticate('postcard', isObject(body) ? body.api_token : undefined);
        if (!token) throw new AuthenticationError('api_token is not a live postcard token.');
        if (req.validationError) throw req.validationError;
        return { object: 'postcard_token' as const, name: token.name, prefix: token.prefix };
      },
    );
    api.get(
      '/v1/postcards',
      {
        schema: {
          operationId: 'listPostcards',
          tags,
          summary: 'List postcards, newest first, optionally by status',
          querystring: Type.Composite([
            PageQuery,
            Type.Object({
              status: Type.Optional(
                oneOf(['received', 'rendered', 'failed'], { description: 'Only postcards with this status.' }),
              ),
            }),
          ]),
          response: { 200: { ...List('Postcard'), description: 'A page of postcards.' }, ...errors(401, 422) },
        },
      },
      async (req) => service.postcards.list(pageOf(req.query), req.query.status),
    );
    api.get(
      '/v1/postcards/:id',
      {
        schema: {
          operationId: 'getPostcard',
          tags,
          summary: 'A postcard: status, normalised contact and address, custom data, document, failure reason',
          params: IdParams('postcard', 'pc_01m82kzq5az78r9b7p2fxgxka8'),
          response: { 200: answer(PostcardSchema, 'The postcard.'), ...errors(401, 404) },
        },
      },
      async (req) => service.postcards.get(req.params.id),
    );
  };
