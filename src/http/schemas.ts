/**
 * The API's schemas, declared once with TypeBox and attached to the routes that use them: fastify
 * validates a request's path, query and headers with them (src/http/validation.ts), serializes the
 * answers with them, and @fastify/swagger builds /openapi.json from them (src/http/openapi.ts).
 * A shared schema has an `$id`: it is registered once (`app.addSchema`), routes point at it with
 * `Type.Ref`, and the document lists it under components.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { EVENT_TYPES } from '../events/types';
import { EXAMPLE_IDS } from '../templates/store';
import { MAX_ATTACHMENTS, MAX_METADATA, METADATA_KEYS, PDF_STANDARDS, RELATIONSHIPS } from '../templates/standards';
import { ALL_SCOPES } from '../keys';
import { LONGEST, MAX_VIEWS } from '../links/policy';
import { ACCESS_LOG_SHOWN } from '../links/model';
import { DEFAULT_PAGE, MAX_CURSOR, MAX_PAGE, type PageQuery as Page } from '../pagination';

export const T = '2026-11-22T10:00:00.000Z';

/**
 * A shared schema: registered once by its `$id`, pointed at with `ref`. A schema may name the code a
 * failure of one of its keywords answers with (`'x-codes': { additionalProperties: 'unknown_unit' }`),
 * where the core has a word of its own for the mistake (src/http/validation.ts).
 */
const shared = <S = unknown>(id: string, schema: Record<string, unknown>) => Type.Unsafe<S>({ $id: id, ...schema });
const ref = (id: string) => ({ $ref: id });

/** One of these strings (an `enum` in the document). */
export const oneOf = <V extends string>(values: readonly V[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<V>({ type: 'string', enum: [...values], ...options });

/** `type: [X, 'null']`, as the API answers null for "none". */
const nullable = (type: 'string' | 'integer', options: Record<string, unknown> = {}) =>
  Type.Unsafe<string | number | null>({ type: [type, 'null'], ...options });

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'What went wrong, for programs: e.g. `validation_failed`, `not_found`.' }),
      message: Type.String({ description: 'What went wrong and what to do, for people.' }),
      details: Type.Array(
        Type.Object({
          field: Type.String(),
          message: Type.String(),
          code: Type.Optional(Type.String()),
        }),
        { description: 'One entry per field at fault.' },
      ),
      request_id: Type.Optional(Type.String()),
    }),
  },
  { $id: 'Error' },
);

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

export const HealthSchema = Type.Object(
  {
    status: Type.Literal('ok'),
    database: oneOf(['sqlite', 'postgres']),
    storage: oneOf(['filesystem', 'database']),
    version: Type.String(),
  },
  { $id: 'Health' },
);

// ---- what the API returns and takes ----

export const GenerateRequestSchema = shared('GenerateRequest', {
  type: 'object',
  required: ['template_id', 'merge_parameters', 'destinations'],
  properties: {
    template_id: { type: 'string' },
    merge_parameters: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    destinations: {
      type: 'object',
      minProperties: 1,
      properties: {
        inkit_storage: {
          type: 'object',
          properties: {
            name: {
              type: 'string',
              maxLength: 200,
              description: 'Default: the name of the template (the date is the created_at of the document).',
            },
            retain_for: {
              allOf: [ref('Duration')],
              description: 'The same as retain_for at the top (give one, or both the same).',
            },
          },
          additionalProperties: false,
        },
        magic_link: ref('MagicLinkSettings'),
      },
      additionalProperties: false,
      'x-codes': { additionalProperties: 'unknown_destination', minProperties: 'required' },
    },
    name: { type: ['string', 'null'], maxLength: 200 },
    description: { type: ['string', 'null'], maxLength: 2000 },
    retain_for: {
      allOf: [ref('Duration')],
      description:
        "How long the document is kept: then it is deleted with its bytes, and its Magic Links end (reason document_expired). Default: the storage app's retain_for (PUT /v1/apps/inkit_storage); without one, until it is deleted.",
    },
    pdf_standard: {
      type: 'string',
      enum: [...PDF_STANDARDS],
      'x-codes': { enum: 'enum' },
      description:
        'The standard the PDF must meet, checked by veraPDF in our tests: PDF/A (archiving) and/or PDF/UA (accessibility). XML templates meet all; HTML and Word templates the PDF/A levels; fillable PDFs none (422 standard_unavailable). Default: none claimed.',
    },
    pdf_metadata: {
      type: 'object',
      description:
        "What the PDF says about itself (its document properties), over the template's own: an XML template's title, author, subject and keywords attributes, an HTML template's <title>, a Word document's properties. Empty texts are left out.",
      properties: Object.fromEntries(METADATA_KEYS.map((k) => [k, { type: 'string', maxLength: MAX_METADATA }])),
      additionalProperties: false,
    },
    append: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      description:
        "Parts merged after the template, in order, into one document with one outline (an entry per part): more templates, each with its merge parameters, or PDFs uploaded as base64. XML templates' page numbers run across the whole. A merged document cannot claim PDF/UA-1, nor PDF/A with an uploaded PDF in it (422 standard_unavailable).",
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          template_id: { type: 'string' },
          merge_parameters: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
          pdf: { type: 'string', contentEncoding: 'base64', description: 'A PDF to merge as it is' },
          title: {
            type: ['string', 'null'],
            maxLength: 200,
            description: "Its outline entry. Default: the template's name, or Part N",
          },
        },
      },
    },
    attachments: {
      type: 'array',
      maxItems: MAX_ATTACHMENTS,
      description:
        'Files embedded in the PDF, e.g. an e-invoice: with pdf_standard PDF/A-3b and a file named factur-x.xml holding a Factur-X invoice, the PDF is a Factur-X (ZUGFeRD 2) invoice. PDF/A-2b allows none (422).',
      items: {
        type: 'object',
        required: ['name', 'content'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 255, description: 'The file name, without a path' },
          content: { type: 'string', contentEncoding: 'base64', description: "The file's bytes in base64" },
          mime_type: { type: 'string', description: 'Default: text/xml for .xml files, else application/octet-stream' },
          description: { type: 'string', maxLength: MAX_METADATA },
          relationship: {
            type: 'string',
            enum: [...RELATIONSHIPS],
            'x-codes': { enum: 'enum' },
            description:
              'How the file relates to the document (PDF/A-3 AFRelationship). Default: Alternative for factur-x.xml, else Unspecified',
          },
        },
      },
    },
  },
});

export const RenderSchema = shared('Render', {
  type: 'object',
  required: ['id', 'object', 'document_id', 'status', 'template_id', 'destinations', 'warnings', 'created_at'],
  properties: {
    id: { type: 'string', description: 'The render id.' },
    object: { const: 'render' },
    document_id: { type: 'string' },
    magic_link_piece_id: {
      type: 'string',
      description: 'The Magic Link id, when a magic_link destination was given.',
    },
    status: { const: 'completed' },
    template_id: { type: 'string' },
    destinations: {
      type: 'object',
      properties: {
        inkit_storage: {
          type: 'object',
          required: ['document_id', 'name', 'size', 'sha256', 'expires_at'],
          properties: {
            document_id: { type: 'string' },
            name: { type: 'string' },
            size: { type: 'integer' },
            sha256: { type: 'string' },
            expires_at: {
              type: ['string', 'null'],
              format: 'date-time',
              description: 'When the document is deleted (retain_for); null: kept until deleted.',
            },
          },
          additionalProperties: false,
        },
        magic_link: {
          type: 'object',
          required: ['id', 'url', 'recipient_email', 'expires_at', 'views_left', 'status'],
          properties: {
            id: { type: 'string' },
            url: { type: 'string' },
            recipient_email: { type: 'string' },
            expires_at: { type: ['string', 'null'] },
            views_left: { type: ['integer', 'null'] },
            status: { enum: ['active', 'send_failed', 'expired', 'revoked'] },
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    warnings: {
      type: 'array',
      items: {
        type: 'object',
        required: ['code', 'field', 'message'],
        properties: { code: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
});

export const TemplateUploadSchema = shared('TemplateUpload', {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 200 },
    source: { type: 'string', description: 'XML text' },
    source_base64: { type: 'string', description: 'An XML file or a fillable PDF, base64' },
    assets: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'The images and fonts an XML template names, by the path it names them with, each as base64: `{ "images/logo.png": "iVBOR…" }`',
    },
  },
});

export const TemplateSchema = shared('Template', {
  type: 'object',
  required: ['id', 'object', 'name', 'format', 'variables', 'optional_variables', 'size', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { const: 'template' },
    name: { type: 'string' },
    format: { enum: ['xml', 'html', 'docx', 'pdf'] },
    variables: {
      type: 'array',
      items: { type: 'string' },
      description: 'Every merge field, in order of first use. Each needs a value, but the optional ones.',
    },
    optional_variables: {
      type: 'array',
      description:
        'The variables that may be left out (written `{{name | default: "text"}}` in the template), each with the text it takes then.',
      items: {
        type: 'object',
        required: ['name', 'default'],
        properties: { name: { type: 'string' }, default: { type: 'string' } },
        additionalProperties: false,
      },
    },
    size: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
});

export const DocumentSchema = shared('Document', {
  type: 'object',
  required: [
    'id',
    'object',
    'name',
    'description',
    'status',
    'template_id',
    'created_at',
    'created_by',
    'size',
    'sha256',
  ],
  properties: {
    id: { type: 'string' },
    object: { const: 'document' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    status: { const: 'generated' },
    template_id: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    created_by: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: ['string', 'null'], description: 'The name of the API key that made it.' } },
    },
    size: { type: 'integer' },
    sha256: { type: 'string' },
    expires_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When it is deleted with its bytes and links (retain_for); null: kept until deleted.',
    },
    magic_links: {
      type: 'array',
      items: ref('MagicLink'),
      description: 'Only on GET /v1/documents/{id}, and only for a key with the scope links:read.',
    },
  },
  additionalProperties: false,
});

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

export const StorageAppSchema = shared('StorageApp', {
  type: 'object',
  properties: {
    object: { const: 'app', readOnly: true },
    name: { const: 'inkit_storage', readOnly: true },
    configured_at: { type: ['string', 'null'], format: 'date-time', readOnly: true },
    retain_for: {
      oneOf: [ref('Duration'), { type: 'null' }],
      description:
        'How long a document is kept when its generate request gives no retain_for; null: until it is deleted. Documents made before a change keep their time.',
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

/**
 * A field of a postcard request: text, or null (left out). Its length is the intake's rule, not the
 * schema's: the intake trims and normalizes (NFC) a text before it counts its characters, so a
 * schema's count of the raw text would refuse what the rule takes (`too_long` in the rules' round).
 */
const postcardText = (max: number, extra: Record<string, unknown> = {}) => ({
  type: ['string', 'null'],
  description: `At most ${max} characters, counted once trimmed and normalized (NFC).`,
  ...extra,
});

export const PostcardRequestSchema = shared('PostcardRequest', {
  type: 'object',
  required: [
    'api_token',
    'template_id',
    'address_line_1',
    'address_city',
    'address_state',
    'address_zip',
    'address_country',
  ],
  description:
    'first_name or last_name is required. Every other field is custom data (a string). null is a field left out.',
  properties: {
    api_token: { type: 'string' },
    template_id: { type: 'string' },
    first_name: postcardText(100),
    last_name: postcardText(100),
    email: { type: ['string', 'null'], description: 'An e-mail address (spaces around it are trimmed).' },
    company: postcardText(200),
    phone: postcardText(40),
    address_line_1: postcardText(64),
    address_line_2: postcardText(64),
    address_city: postcardText(100),
    address_state: {
      type: ['string', 'null'],
      description:
        'Two letters, any case (spaces around them are trimmed); a US state or territory code when the country is US.',
    },
    address_zip: postcardText(20),
    address_country: {
      type: ['string', 'null'],
      description: 'ISO 3166-1 alpha-2, any case (spaces around it are trimmed); stored upper-case.',
    },
    source: postcardText(100),
  },
  additionalProperties: postcardText(2000),
});

export const PostcardSchema = shared('Postcard', {
  type: 'object',
  required: [
    'id',
    'object',
    'status',
    'template_id',
    'contact',
    'address',
    'custom_data',
    'document_id',
    'failure_reason',
    'warnings',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { const: 'postcard' },
    status: { enum: ['received', 'rendered', 'failed'] },
    template_id: { type: 'string' },
    contact: { type: 'object', additionalProperties: { type: 'string' } },
    address: { type: 'object', additionalProperties: { type: 'string' } },
    custom_data: { type: 'object', additionalProperties: { type: 'string' } },
    document_id: { type: ['string', 'null'] },
    failure_reason: { type: ['string', 'null'] },
    warnings: {
      type: 'array',
      description:
        'What the render warned about: `text_overflow` when a text does not fit its box (`field` is the variable).',
      items: {
        type: 'object',
        required: ['code', 'field', 'message'],
        properties: { code: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
});

/** Every schema with an `$id`, registered once on the app (src/http/app.ts). */
export const SHARED_SCHEMAS: TSchema[] = [
  ErrorSchema,
  WebhookSchema,
  DeliverySchema,
  HealthSchema,
  GenerateRequestSchema,
  RenderSchema,
  TemplateUploadSchema,
  TemplateSchema,
  DocumentSchema,
  DurationSchema,
  WatermarkSchema,
  StorageAppSchema,
  MagicLinkSettingsSchema,
  MagicLinkSchema,
  AccessEntrySchema,
  MagicLinkAppSchema,
  PostcardRequestSchema,
  PostcardSchema,
];

/** The content type of a Word document (.docx). */
export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** What POST /v1/templates takes: XML, HTML, a Word document, a PDF, JSON, or a multipart form. */
export const TemplateUploadBody = {
  content: {
    'application/json': {
      schema: described(TemplateUploadSchema, {
        name: 'Thank you note',
        source: '<document size="A5"><body><p>Thank you, {{name}}!</p></body></document>',
      }),
    },
    'application/xml': {
      schema: { type: 'string', examples: ['<document><body><p>Hello {{name}}</p></body></document>'] },
    },
    'text/html': {
      schema: {
        type: 'string',
        examples: ['<!doctype html><html><body><p>Hello {{ name }}</p></body></html>'],
      },
    },
    'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } },
    [DOCX_TYPE]: { schema: { type: 'string', contentMediaType: DOCX_TYPE } },
    'multipart/form-data': {
      schema: {
        type: 'object',
        properties: {
          file: { type: 'string', contentMediaType: 'application/octet-stream' },
          name: { type: 'string' },
        },
        required: ['file'],
      },
    },
  },
};

// ---- examples ----

export const exampleDocument = {
  id: 'doc_01m82kzq5az78r9b7p2fxgxka8',
  object: 'document',
  name: 'Welcome letter',
  description: null,
  status: 'generated',
  template_id: EXAMPLE_IDS.letter,
  created_at: T,
  created_by: { name: 'n8n production' },
  size: 50907,
  sha256: 'c24a4762e2e5dcf0d2abf4b9a29f6371c5a6b49bb148fd8aac569c2ca797b975',
  expires_at: null,
};
export const exampleTemplate = {
  id: EXAMPLE_IDS.letter,
  object: 'template',
  name: 'Letter',
  format: 'xml',
  variables: ['date', 'recipient_name', 'body', 'sender_name', 'enclosure'],
  optional_variables: [{ name: 'enclosure', default: '' }],
  size: 3520,
  created_at: T,
  updated_at: T,
};
export const exampleGenerate = {
  template_id: EXAMPLE_IDS.letter,
  merge_parameters: {
    date: 'November 22, 2026',
    recipient_name: 'Dr. Eleanor Vance',
    body: 'Thank you for meeting with us.',
    sender_name: 'Marta Kowalczyk',
  },
  destinations: { inkit_storage: { name: 'Welcome letter' } },
};
export const exampleRender = {
  id: 'rnd_01m82kzq5ayn1abaq43v42m6fp',
  object: 'render',
  document_id: exampleDocument.id,
  status: 'completed',
  template_id: EXAMPLE_IDS.letter,
  destinations: {
    inkit_storage: {
      document_id: exampleDocument.id,
      name: 'Welcome letter',
      size: 50907,
      sha256: exampleDocument.sha256,
      expires_at: null,
    },
  },
  warnings: [],
  created_at: T,
};

const exampleError = (code: string, message: string, details: unknown[] = []) => ({
  error: { code, message, details },
});

const ERRORS = {
  400: [
    'The body is not valid JSON (`malformed_json`), a multipart body is cut short (`malformed_multipart`), the address has a broken %-escape (`bad_url`), or the request could not be read (`bad_request`).',
    exampleError('malformed_json', 'The body is not valid JSON.'),
  ],
  401: [
    'The X-Service-API-Token header is missing or not a live key (`unauthorized`).',
    exampleError('unauthorized', 'A valid API key is required in the X-Service-API-Token header.'),
  ],
  403: [
    'The key is live but lacks the scope this operation needs (`insufficient_scope`; `details` names it). See `x-scope`.',
    exampleError('insufficient_scope', 'This API key lacks the scope documents:read.', [
      { field: 'X-Service-API-Token', message: 'the key lacks the scope documents:read', code: 'insufficient_scope' },
    ]),
  ],
  404: ['No such resource (`not_found`).', exampleError('not_found', 'No document with id "doc_…" exists.')],
  408: [
    'The request did not arrive whole within REQUEST_TIMEOUT_MS (`request_timeout`); the connection is closed.',
    exampleError('request_timeout', 'The request was not sent whole within 60000 ms (REQUEST_TIMEOUT_MS).'),
  ],
  409: [
    'The Idempotency-Key was used with another body (`idempotency_key_reused`), a Magic Link was asked for before the Magic Link app was set up (`app_not_configured`), there are WEBHOOK_MAX_SUBSCRIPTIONS webhooks already (`webhook_limit_reached`), or the settings of an app kept changing under this change (`settings_busy`: send it again).',
    exampleError('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.'),
  ],
  413: [
    'The body is larger than this operation takes: BODY_LIMIT, or 64 KB for a postcard (`body_too_large`; the message names the limit).',
    exampleError('body_too_large', 'The request body is larger than this server accepts.'),
  ],
  415: [
    'The body is not JSON (`unsupported_media_type`).',
    exampleError('unsupported_media_type', 'This endpoint takes a JSON body.'),
  ],
  422: [
    'A rule is broken; one entry in `details` per field (`validation_failed`, `missing_variables`, `template_invalid`, `invalid_value`, `unsupported_character`).',
    exampleError('missing_variables', 'Give a value for every variable of the template; missing: date.', [
      { field: 'merge_parameters.date', message: 'is required by the template', code: 'required' },
    ]),
  ],
  429: [
    'Too many requests a minute from this address (`rate_limited`); `Retry-After` says how many seconds to wait.',
    exampleError('rate_limited', 'Too many requests from this address (at most 3000 a minute here).'),
  ],
  431: [
    'The request headers are larger than 16 KB (`headers_too_large`).',
    exampleError('headers_too_large', 'The request headers are larger than 16 KB.'),
  ],
  503: [
    'Not now; `Retry-After` says when to try again, with the same Idempotency-Key where one was given: the database does not answer (`database_unavailable`), the document storage does not take the document (`storage_unavailable`), Chromium or LibreOffice would not start (`renderer_unavailable`), Temporal did not run the render in time (`engine_unavailable`), or the server is shutting down (`stopping`).',
    exampleError('database_unavailable', 'The database does not answer now (restarting or unreachable).'),
  ],
  507: [
    'The server cannot write to its disk (full or read-only) and kept nothing of the request (`insufficient_storage`); `Retry-After` says when to try again.',
    exampleError('insufficient_storage', 'The server cannot write to its disk now (full or read-only).'),
  ],
  500: [
    'Our fault; nothing internal is shown (`internal_error`).',
    exampleError('internal_error', 'Something went wrong on our side.'),
  ],
} as const;

/**
 * An answer that is a shared schema, described, with examples. (A bare `$ref` would lose its
 * description and examples on the way into the document.)
 */
export const answer = <S extends TSchema>(shared: S, description: string, ...examples: unknown[]) =>
  Type.Unsafe<Static<S>>({ allOf: [Type.Ref(shared)], description, ...(examples.length ? { examples } : {}) });

/** A request or answer schema with its example (and description): a shared one is pointed at. */
export function described<S extends TSchema>(schema: S, example: unknown, description?: string): S {
  const extra = { examples: [example], ...(description ? { description } : {}) };
  return ('$id' in schema ? { allOf: [Type.Ref(schema)], ...extra } : { ...schema, ...extra }) as S;
}

/** The Idempotency-Key header (its rules are checked by src/idempotency.ts, for every caller). */
export const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Any unique string (e.g. a UUID), 1 to 255 visible ASCII characters: the same key and body give the first answer again for 24 hours.',
    }),
  ),
});

/** The description and example of an error answer, for what is added to the document after it is built. */
/** An error status this API answers with. */
export type ErrorStatus = keyof typeof ERRORS;
export const errorExample = (status: ErrorStatus) => ERRORS[status];

/** The error answers of an operation, each in the one error shape. */
export function errors(...statuses: (keyof typeof ERRORS)[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, answer(ErrorSchema, ERRORS[s][0], ERRORS[s][1])]));
}

/** `:id` in the path. */
export const IdParams = (what: string, example: string) =>
  Type.Object({ id: Type.String({ description: `The ${what} id.`, maxLength: 100, examples: [example] }) });

/** `?limit&starting_after` of every list (the same rules as src/pagination.ts). */
export const PageQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      default: DEFAULT_PAGE,
      description: `Items per page, 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`,
    }),
  ),
  starting_after: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_CURSOR, description: 'The `next_cursor` of the previous page.' }),
  ),
});

/** The page a list's query asks for. */
export const pageOf = (query: Static<typeof PageQuery>): Page => ({
  limit: query.limit ?? DEFAULT_PAGE,
  startingAfter: query.starting_after,
});

/** A page of `item`s. */
export const List = (item: string) =>
  Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(Type.Ref(item)),
      has_more: Type.Boolean(),
      next_cursor: nullable('string'),
    },
    { additionalProperties: false },
  );

/** The answer to a DELETE. */
export const Deleted = (object: string) =>
  Type.Object(
    { id: Type.String(), object: Type.Literal(object), deleted: Type.Literal(true) },
    { additionalProperties: false },
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

export const KeyInfoSchema = Type.Object({
  object: Type.Literal('api_key'),
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  scopes: Type.Array(oneOf(ALL_SCOPES)),
});
