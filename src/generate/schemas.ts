/** What POST /v1/generate takes and what it answers (a render), with their examples. */
import type { TSchema } from '@sinclair/typebox';
import { EXAMPLE_IDS } from '../templates/store';
import { MAX_ATTACHMENTS, MAX_METADATA, METADATA_KEYS, PDF_STANDARDS, RELATIONSHIPS } from '../templates/standards';
import { exampleDocument } from '../documents/schemas';
import { ref, shared, T } from '../http/schemas';

export const GenerateRequestSchema = shared('GenerateRequest', {
  type: 'object',
  required: ['template_id', 'merge_parameters', 'destinations'],
  properties: {
    template_id: { type: 'string' },
    template_version: {
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
      description:
        'The version of the template to render (GET /v1/templates/{id}/versions). Default: its current version.',
    },
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
          template_version: {
            type: 'integer',
            minimum: 1,
            maximum: 2147483647,
            description: 'Default: its current version.',
          },
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
  required: [
    'id',
    'object',
    'document_id',
    'status',
    'template_id',
    'template_version',
    'destinations',
    'warnings',
    'created_at',
  ],
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
    template_version: {
      type: ['integer', 'null'],
      description: 'The template version it was rendered from; null for one made before versions.',
    },
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
  template_version: 1,
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

/** The shared schemas of generate, registered once on the app. */
export const GENERATE_SCHEMAS: TSchema[] = [GenerateRequestSchema, RenderSchema];
