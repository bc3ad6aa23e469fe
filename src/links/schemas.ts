/** Magic Links as the API takes and answers them: a duration, a watermark, a link's settings, the link with its access log, and the Magic Link app's settings. */
import type { TSchema } from '@sinclair/typebox';
import { LONGEST, MAX_MESSAGE, MAX_VIEWS } from './policy';
import { ACCESS_LOG_SHOWN } from './model';
import { EXPIRY_REASONS } from '../events';
import { ref, shared } from '../http/schemas';

export const DurationSchema = shared('Duration', {
  type: 'object',
  description: 'Exactly one unit key with a positive whole number, at most 10 years, e.g. {"hours": 24}.',
  minProperties: 1,
  maxProperties: 1,
  properties: {
    minutes: { type: 'integer', minimum: 1, maximum: LONGEST.as('minutes') },
    hours: { type: 'integer', minimum: 1, maximum: LONGEST.as('hours') },
    days: { type: 'integer', minimum: 1, maximum: LONGEST.as('days') },
  },
  additionalProperties: false,
  'x-codes': { additionalProperties: 'unknown_unit', minProperties: 'one_unit', maxProperties: 'one_unit' },
});

export const WatermarkSchema = shared('Watermark', {
  type: 'object',
  required: ['text'],
  description:
    'A watermark; its text may use {{email}} (the address the viewer proved), {{viewed_at}} (when their view started, UTC), {{ip}} and {{link_id}}.',
  properties: {
    text: { type: 'string', minLength: 1, maxLength: 200, examples: ['Shared with {{email}} · {{viewed_at}}'] },
    position: { enum: ['center', 'top', 'bottom', 'tiled'], default: 'center' },
    opacity: { type: 'number', minimum: 0.05, maximum: 1, default: 0.2 },
    size: {
      type: ['number', 'null'],
      minimum: 6,
      maximum: 144,
      description: 'Points; null or left out: as large as fits (center), 10 (top, bottom), 18 (tiled).',
    },
    rotation: {
      type: ['number', 'null'],
      minimum: -90,
      maximum: 90,
      description: 'Degrees counter-clockwise; null or left out: 45 in the center and tiled, 0 at the top and bottom.',
    },
  },
  additionalProperties: false,
});

export const MagicLinkSettingsSchema = shared('MagicLinkSettings', {
  type: 'object',
  required: ['recipient_email'],
  description:
    'At least one limit: expire_after_n_views, retain_from_created or retain_from_opened (views may be combined with one time limit; whichever comes first ends the link). With a view limit the link also expires 10 days after creation.',
  properties: {
    recipient_email: { type: 'string', format: 'email', description: 'The link is e-mailed here.' },
    auth_email: {
      type: 'string',
      format: 'email',
      description: 'The address the recipient must prove; defaults to recipient_email.',
    },
    // null is a field left out, as in the link the API answers with
    auth_type: { enum: ['email', 'social', null], default: 'email' },
    expire_after_n_views: { type: ['integer', 'null'], minimum: 1, maximum: MAX_VIEWS },
    retain_from_created: { oneOf: [ref('Duration'), { type: 'null' }] },
    retain_from_opened: { oneOf: [ref('Duration'), { type: 'null' }] },
    watermark: {
      oneOf: [ref('Watermark'), { type: 'null' }],
      description: 'Drawn over every page the recipient sees or downloads, filled in per viewing session.',
    },
    allowed_viewers: {
      type: ['array', 'null'],
      maxItems: 100,
      items: { type: 'string', maxLength: 254 },
      examples: [['ann@acme.example', '@acme.example']],
      description:
        'Who may open the link besides auth_email: addresses, and domains written @acme.example (that domain exactly). Each person proves their own address (a code e-mailed to it, or a social sign-in); the view limit counts everyone.',
    },
    notify_sender: {
      type: ['object', 'null'],
      description:
        "E-mails to the sender (email, default: the Magic Link app's sender_email): when the link is first viewed (on_first_view) and when it ends, and why (on_end).",
      properties: {
        on_first_view: { type: 'boolean', default: false },
        on_end: { type: 'boolean', default: false },
        email: { type: ['string', 'null'], format: 'email' },
      },
      additionalProperties: false,
    },
    remind_before: {
      oneOf: [ref('Duration'), { type: 'null' }],
      description:
        'E-mail the recipient a reminder, with the link, this long before the link ends while they have not opened it. Shorter than the link lasts.',
    },
    allow_download: {
      type: ['boolean', 'null'],
      default: true,
      description:
        'false: the recipient sees the pages as images in the browser; no download button, and no route serves them the PDF (screenshots remain possible).',
    },
    message: {
      type: ['string', 'null'],
      minLength: 1,
      maxLength: MAX_MESSAGE,
      description: "The sender's words to the recipient (plain text): in the link's e-mail and above the document.",
      examples: ['Here is the signed lease. Call me with any questions.'],
    },
  },
  additionalProperties: false,
});

/** An entry of a link's access log: what happened, when, from where. */
function accessEntry() {
  return {
    type: 'object',
    required: ['at', 'kind', 'outcome'],
    additionalProperties: false,
    properties: {
      at: { type: 'string' },
      kind: { type: 'string' },
      outcome: { type: 'string' },
      ip: { type: ['string', 'null'] },
      user_agent: { type: ['string', 'null'] },
      email: { type: ['string', 'null'] },
      count: {
        type: 'integer',
        minimum: 1,
        description:
          'How many times it happened: an anonymous refusal repeated from the same IP and browser (an ended link opened again and again) adds to the newest entry instead of writing another',
      },
      last_at: { type: ['string', 'null'], description: 'The latest of those times; null while count is 1' },
    },
  };
}

export const MagicLinkSchema = shared('MagicLink', {
  type: 'object',
  required: [
    'id',
    'object',
    'document_id',
    'status',
    'recipient_email',
    'auth_email',
    'auth_type',
    'created_at',
    'views_used',
    'views_left',
    'expires_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { const: 'magic_link' },
    document_id: { type: 'string' },
    status: { enum: ['active', 'send_failed', 'expired', 'revoked'] },
    recipient_email: { type: 'string' },
    auth_email: { type: 'string' },
    auth_type: { enum: ['email', 'social'] },
    expire_after_n_views: { type: ['integer', 'null'] },
    retain_from_created: { oneOf: [ref('Duration'), { type: 'null' }] },
    retain_from_opened: { oneOf: [ref('Duration'), { type: 'null' }] },
    watermark: { oneOf: [ref('Watermark'), { type: 'null' }] },
    allow_download: { type: 'boolean' },
    allowed_viewers: { type: 'array', items: { type: 'string' } },
    notify_sender: {
      type: ['object', 'null'],
      properties: {
        on_first_view: { type: 'boolean' },
        on_end: { type: 'boolean' },
        email: { type: ['string', 'null'] },
      },
    },
    remind_before: { oneOf: [ref('Duration'), { type: 'null' }] },
    message: { type: ['string', 'null'] },
    notices_sent: {
      type: 'object',
      description:
        'When each e-mail besides the link went: first_view and ended (to the sender), reminder (to the recipient).',
      properties: {
        first_view: { type: 'string', format: 'date-time' },
        ended: { type: 'string', format: 'date-time' },
        reminder: { type: 'string', format: 'date-time' },
      },
    },
    viewers: {
      type: 'array',
      description: 'With the access log: each person who viewed it, most views first.',
      items: {
        type: 'object',
        required: ['email', 'views', 'last_viewed_at', 'seconds', 'pages'],
        properties: {
          email: { type: 'string' },
          views: { type: 'integer' },
          last_viewed_at: { type: 'string', format: 'date-time' },
          seconds: { type: 'number', description: 'Time on the document, as the viewer reported it.' },
          pages: {
            type: 'array',
            description: 'Time on each page (page analytics), by page number from 1.',
            items: {
              type: 'object',
              required: ['page', 'seconds'],
              properties: { page: { type: 'integer' }, seconds: { type: 'number' } },
            },
          },
        },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
    sent_at: { type: ['string', 'null'], format: 'date-time' },
    opened_at: { type: ['string', 'null'], format: 'date-time' },
    expires_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When the link stops working by time; null when only views end it.',
    },
    views_used: { type: 'integer' },
    views_left: { type: ['integer', 'null'] },
    send_error: { type: ['string', 'null'] },
    ended_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When it ended (expired or revoked); null while it has not.',
    },
    ended_reason: {
      oneOf: [{ enum: [...EXPIRY_REASONS] }, { type: 'null' }],
      description:
        'Why it ended, as the magic_link.expired webhook says: views (its view limit), time (its timer), ten_day_cap, not_opened (a timer from opening, not opened in time), revoked, document_deleted or document_expired (its document was deleted, or its retention ran out); null while it has not ended.',
    },
    url: {
      type: 'string',
      description: 'Only when the link is made or re-sent: the token is stored hashed and cannot be shown again.',
    },
    access_log: {
      type: 'array',
      description: `The newest ${ACCESS_LOG_SHOWN} entries of the access log, oldest first; GET /v1/magic_links/{id}/access_log pages them all.`,
      items: accessEntry(),
    },
    access_log_has_more: {
      type: 'boolean',
      description: 'Whether the access log holds older entries than those in access_log.',
    },
  },
  additionalProperties: false,
});

export const AccessEntrySchema = shared('AccessEntry', {
  ...accessEntry(),
  required: ['id', 'at', 'kind', 'outcome', 'ip', 'user_agent', 'email', 'count', 'last_at'],
  properties: {
    id: { type: 'string', description: 'Pass as starting_after for the next page' },
    ...accessEntry().properties,
  },
  description: `One entry of a link's access log: kept ACCESS_LOG_RETENTION_DAYS (90) days.`,
});

export const MagicLinkAppSchema = shared('MagicLinkApp', {
  type: 'object',
  properties: {
    object: { const: 'app' },
    name: { const: 'magic_link' },
    public_url: {
      type: ['string', 'null'],
      description:
        "Where links point. null (or the server's own address): follow this server's PUBLIC_URL, as a new install does; a URL: always that one.",
    },
    public_url_follows_server: {
      type: 'boolean',
      readOnly: true,
      description: "true when public_url is this server's address (PUBLIC_URL), false when it was set here",
    },
    sender_name: { type: 'string' },
    sender_email: { type: 'string', format: 'email' },
    organization_name: { type: 'string' },
    logo_url: { type: ['string', 'null'] },
    accent_color: { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' },
    auth_types: { type: 'array', items: { enum: ['email', 'social'] } },
    oidc_providers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'issuer', 'client_id'],
        properties: {
          id: { type: 'string' },
          name: { type: 'string' },
          issuer: { type: 'string' },
          client_id: { type: 'string' },
          client_secret: { type: 'string', writeOnly: true },
          client_secret_set: { type: 'boolean', readOnly: true },
        },
      },
    },
    configured_at: { type: 'string', readOnly: true },
  },
});

/** The shared schemas of Magic Links, registered once on the app. */
export const LINK_SCHEMAS: TSchema[] = [
  DurationSchema,
  WatermarkSchema,
  MagicLinkSettingsSchema,
  MagicLinkSchema,
  AccessEntrySchema,
  MagicLinkAppSchema,
];
