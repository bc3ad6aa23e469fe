/** The webhooks' schemas: a subscription, a delivery with its attempts, and what POST /v1/webhooks takes. */
import { Type, type TSchema } from '@sinclair/typebox';
import { EVENT_TYPES } from '../events/types';
import { nullable, oneOf } from '../http/schemas';

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook'),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: nullable('string'),
    created_at: Type.String(),
    secret: Type.Optional(Type.String({ description: 'Only in the answer to POST /v1/webhooks.' })),
  },
  { $id: 'Webhook', additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('delivery'),
    event: Type.Object({ id: Type.String(), type: Type.String(), created_at: Type.String() }),
    status: oneOf(['pending', 'succeeded', 'failed']),
    attempts: Type.Array(
      Type.Object({
        at: Type.String(),
        status_code: nullable('integer'),
        duration_ms: Type.Number(),
        error: nullable('string'),
      }),
    ),
    next_attempt_at: nullable('string'),
    created_at: Type.String(),
  },
  { $id: 'Delivery', additionalProperties: false },
);

export const WebhookCreate = Type.Object(
  {
    url: Type.String({ description: 'https (or http) URL of a public address' }),
    events: Type.Unsafe<string[] | '*'>({
      oneOf: [
        {
          type: 'array',
          minItems: 1,
          items: { type: 'string', enum: ['*', ...EVENT_TYPES], 'x-codes': { enum: 'unknown_event_type' } },
        },
        { const: '*' },
      ],
      description: 'The event types to send, or `["*"]` (or `"*"`) for all.',
    }),
    description: Type.Optional(nullable('string', { maxLength: 500 })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        url: 'https://hooks.example.com/paperlink',
        events: ['document.generated', 'magic_link.viewed'],
        description: 'CRM sync',
      },
    ],
  },
);

/** The shared schemas of webhooks, registered once on the app. */
export const WEBHOOK_SCHEMAS: TSchema[] = [WebhookSchema, DeliverySchema];
