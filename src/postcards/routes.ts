/** The postcard webhook (no version prefix, token in the body) and the operator's view of postcards. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Service } from '../service';
import { EXAMPLE_IDS } from '../templates/store';
import { AuthenticationError } from '../errors';
import { isObject } from '../guards';
import { PROOF_WIDTH, type ProofOptions } from '../templates/print';
import { PARTNER_NAMES } from './driver';
import type { MailPartnerView } from './partners';
import { STATUSES } from '.';
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
import { MailPartnerSchema, PostcardRequestSchema, PostcardSchema } from './schemas';

/** A postcard request is small: bodies above this are refused with 413 whatever BODY_LIMIT says. */
export const POSTCARD_BODY_LIMIT = 64 * 1024;
/** The largest partner event taken (Lob's carry the whole postcard, a few kilobytes). */
const PARTNER_EVENT_BODY_LIMIT = 256 * 1024;

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
                status: oneOf(STATUSES, {
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
              status: Type.Optional(oneOf(STATUSES, { description: 'Only postcards with this status.' })),
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
    proofRoute(app, service);
    partnerRoutes(app, service);
  };

/** GET /v1/postcards/:id/proof: a rendered postcard's sides as a PNG (src/templates/print.ts). */
function proofRoute(app: FastifyInstance, service: Service): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/v1/postcards/:id/proof',
    {
      schema: {
        operationId: 'getPostcardProof',
        tags,
        summary: "A rendered postcard's proof: the front above the back as a PNG, with the print guides on request",
        description:
          'Drawn from the stored PDF. `guides=true` draws the trim (solid), the safe zone (dashed) and, on the back, the address area the mail partner prints into (tinted red). `side` draws one side; `width` sets the image width in pixels (a thumbnail is small).',
        params: IdParams('postcard', 'pc_01m82kzq5az78r9b7p2fxgxka8'),
        querystring: Type.Object({
          side: Type.Optional(oneOf(['front', 'back'], { description: 'One side only.' })),
          guides: Type.Optional(Type.Boolean({ description: 'Draw the trim, the safe zone and the address area.' })),
          width: Type.Optional(
            Type.Integer({
              minimum: PROOF_WIDTH.min,
              maximum: PROOF_WIDTH.max,
              description: `The image's width in pixels (default ${PROOF_WIDTH.default}).`,
            }),
          ),
        }),
        response: {
          200: {
            description: 'The proof as a PNG image.',
            content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } },
          },
          ...errors(401, 404, 409, 422),
        },
      },
    },
    async (req, reply) => {
      const image = await service.postcards.proof(req.params.id, req.query as Omit<ProofOptions, 'size'>);
      return (
        reply
          .header('Content-Type', 'image/png')
          // a postcard's id (get() found it): letters, digits and underscores
          .header('Content-Disposition', `inline; filename="${req.params.id}-proof.png"`)
          .send(Buffer.from(image))
      );
    },
  );
}

/** The mail partner's settings (GET and PUT /v1/apps/mail_partner) and its webhook events (POST /partners/:partner/events). */
function partnerRoutes(app: FastifyInstance, service: Service): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const shown = async (v: Promise<MailPartnerView>) => ({
    object: 'app' as const,
    name: 'mail_partner' as const,
    ...(await v),
  });
  api.get(
    '/v1/apps/mail_partner',
    {
      schema: {
        operationId: 'getMailPartnerApp',
        tags,
        summary: 'The mail partner live postcards are handed to (the secrets only as whether they are set)',
        response: { 200: answer(MailPartnerSchema, 'The settings.'), ...errors(401) },
      },
    },
    async () => shown(service.apps.mailPartner.get()),
  );
  api.put(
    '/v1/apps/mail_partner',
    {
      schema: {
        operationId: 'setUpMailPartnerApp',
        tags,
        summary: 'Choose the mail partner live postcards are handed to, with its API key and webhook secret',
        body: MailPartnerSchema,
        response: { 200: answer(MailPartnerSchema, 'Saved.'), ...errors(400, 401, 409, 415, 422) },
      },
    },
    async (req) => shown(service.apps.mailPartner.put(req.body)),
  );
  api.post(
    '/partners/:partner/events',
    {
      // anyone may send here, before a signature is checked: no more than an event could be
      bodyLimit: Math.min(PARTNER_EVENT_BODY_LIMIT, service.config.bodyLimit),
      schema: {
        operationId: 'receiveMailPartnerEvent',
        tags,
        summary:
          "The mail partner's webhook events (signed with its webhook secret): move a postcard to submitted, mailed, returned",
        params: Type.Object({ partner: oneOf([...PARTNER_NAMES]) }),
        response: {
          200: {
            ...Type.Object({ received: Type.Literal(true), moved: Type.Union([Type.String(), Type.Null()]) }),
            description: 'Received (moved: the status it moved the postcard to; null: none).',
          },
          ...errors(400, 401, 404, 413, 415),
        },
      },
    },
    async (req) => {
      const raw = (req as { rawBody?: string }).rawBody ?? '';
      return service.handoffs.event(req.params.partner, req.headers, Buffer.from(raw, 'utf8'));
    },
  );
}
