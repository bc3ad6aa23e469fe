/** A stored document and the storage settings (inkit_storage), as the API answers and takes them. */
import type { TSchema } from '@sinclair/typebox';
import { EXAMPLE_IDS } from '../templates/store';
import { ref, shared, T } from '../http/schemas';

export const DocumentSchema = shared('Document', {
  type: 'object',
  required: [
    'id',
    'object',
    'name',
    'description',
    'status',
    'template_id',
    'template_version',
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
    template_version: {
      type: ['integer', 'null'],
      description: 'The template version it was rendered from; null for one made before versions.',
    },
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
      description:
        "When it is deleted with its bytes and links (retain_for, or the storage app's retain_for; for a document that follows its links, 30 days after the last one ended, on GET /v1/documents/{id} only); null: kept until deleted, or while one of its links is active.",
    },
    follows_links: {
      type: 'boolean',
      description:
        'Made only for a Magic Link (no inkit_storage, no retain_for, no default in the storage app): kept while one of its links is active, and deleted 30 days after the last one ends.',
    },
    magic_links: {
      type: 'array',
      items: ref('MagicLink'),
      description: 'Only on GET /v1/documents/{id}, and only for a key with the scope links:read.',
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
        'How long a document is kept when its generate request gives no retain_for; null: until it is deleted (one made only for a Magic Link: 30 days after its last link ends). Documents made before a change keep their time.',
    },
  },
  additionalProperties: false,
});

export const exampleDocument = {
  id: 'doc_01m82kzq5az78r9b7p2fxgxka8',
  object: 'document',
  name: 'Welcome letter',
  description: null,
  status: 'generated',
  template_id: EXAMPLE_IDS.letter,
  template_version: 1,
  created_at: T,
  created_by: { name: 'n8n production' },
  size: 50907,
  sha256: 'c24a4762e2e5dcf0d2abf4b9a29f6371c5a6b49bb148fd8aac569c2ca797b975',
  expires_at: null,
  follows_links: false,
};

/** The shared schemas of documents, registered once on the app. */
export const DOCUMENT_SCHEMAS: TSchema[] = [DocumentSchema, StorageAppSchema];
