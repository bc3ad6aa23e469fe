/** A template as the API takes (POST /v1/templates in each medium) and answers it, with its example. */
import type { TSchema } from '@sinclair/typebox';
import { EXAMPLE_IDS } from './store';
import { PRESET_NAMES } from './presets';
import { described, DOCX_TYPE, shared, T } from '../http/schemas';

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
        'The images and fonts an XML template names, by the path it names them with, each as base64: `{ "images/logo.png": "iVBOR…" }`. A new version takes the ones it does not carry from the current version.',
    },
    sample_values: {
      type: 'object',
      additionalProperties: { type: ['string', 'number', 'boolean'] },
      description:
        'Values to fill it with in previews and the web editor, kept with the version (a multipart form sends them as JSON text).',
    },
  },
});

/** Where a print warning is: a box in points from the page's top left (a template's `print_warnings`, a postcard's `warnings`). */
export const PRINT_BOX = {
  type: 'object',
  required: ['x', 'y', 'width', 'height'],
  properties: { x: { type: 'number' }, y: { type: 'number' }, width: { type: 'number' }, height: { type: 'number' } },
  additionalProperties: false,
} as const;

/** What a version is, shared by a template (its current version's) and each of its versions. */
const CONTENT = {
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
  sample_values: {
    type: ['object', 'null'],
    additionalProperties: { type: 'string' },
    description: 'The values previews and the web editor fill it with, saved with the version; null: none.',
  },
  size: { type: 'integer' },
  postcard: {
    enum: [...PRESET_NAMES, null],
    description:
      'The postcard size the template names (`<document postcard="4x6">`, `<meta name="paperlink-postcard" content="4x6">`); null: not a postcard template. See docs/postcards.md.',
  },
  print_warnings: {
    type: 'array',
    description:
      "A postcard template is printed once with its sample values when it is saved: what that print warned of, `outside_safe_zone`, `ink_in_address_area` or `low_resolution`, with the side as `field` and where as `box` (points from the page's top left). A print a printer would refuse is not saved: `422 not_print_ready`.",
    items: {
      type: 'object',
      required: ['code', 'field', 'message', 'box'],
      properties: {
        code: { enum: ['outside_safe_zone', 'ink_in_address_area', 'low_resolution'] },
        field: { enum: ['front', 'back'] },
        message: { type: 'string' },
        box: PRINT_BOX,
      },
      additionalProperties: false,
    },
  },
} as const;

export const TemplateSchema = shared('Template', {
  type: 'object',
  required: ['id', 'object', 'name', 'version', ...Object.keys(CONTENT), 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { const: 'template' },
    name: { type: 'string' },
    version: {
      type: 'integer',
      description: 'Its current version: what a render that names no template_version uses. The fields below are its.',
    },
    ...CONTENT,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: {
      type: 'string',
      format: 'date-time',
      description: 'When its name or its current version last changed.',
    },
  },
  additionalProperties: false,
});

export const TemplateVersionSchema = shared('TemplateVersion', {
  type: 'object',
  required: ['id', 'object', 'template_id', 'version', 'current', ...Object.keys(CONTENT), 'created_at'],
  properties: {
    id: { type: 'string', description: '`<template id>@<version>`; a list of versions pages by it.' },
    object: { const: 'template_version' },
    template_id: { type: 'string' },
    version: { type: 'integer', description: '1, 2, 3, … in the order saved.' },
    current: { type: 'boolean', description: 'Whether renders that name no version use it.' },
    ...CONTENT,
    created_at: { type: 'string', format: 'date-time', description: 'When it was saved.' },
  },
  additionalProperties: false,
});

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

export const exampleTemplate = {
  id: EXAMPLE_IDS.letter,
  object: 'template',
  name: 'Letter',
  version: 1,
  format: 'xml',
  variables: ['date', 'recipient_name', 'body', 'sender_name', 'enclosure'],
  optional_variables: [{ name: 'enclosure', default: '' }],
  sample_values: { date: 'November 22, 2026', recipient_name: 'Dr. Eleanor Vance' },
  size: 3520,
  postcard: null,
  print_warnings: [],
  created_at: T,
  updated_at: T,
};

/** The shared schemas of templates, registered once on the app. */
export const exampleVersion = {
  id: `${EXAMPLE_IDS.letter}@2`,
  object: 'template_version',
  template_id: EXAMPLE_IDS.letter,
  version: 2,
  current: true,
  format: 'xml',
  variables: exampleTemplate.variables,
  optional_variables: exampleTemplate.optional_variables,
  sample_values: exampleTemplate.sample_values,
  size: 3610,
  postcard: null,
  print_warnings: [],
  created_at: T,
};

export const TEMPLATE_SCHEMAS: TSchema[] = [TemplateUploadSchema, TemplateSchema, TemplateVersionSchema];
