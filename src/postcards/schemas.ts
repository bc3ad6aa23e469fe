/** A postcard request as the webhook takes it, and a postcard as the API answers it. */
import { PRESET_NAMES } from '../templates/presets';
import { PRINT_BOX } from '../templates/schemas';
import { PARTNER_NAMES } from './driver';
import { ADDRESS_FIELDS } from './rules';
import type { TSchema } from '@sinclair/typebox';
import { shared } from '../http/schemas';

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
    'template_version',
    'contact',
    'address',
    'mailing_address',
    'custom_data',
    'document_id',
    'failure_reason',
    'test',
    'size',
    'partner',
    'partner_id',
    'warnings',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { const: 'postcard' },
    status: { enum: ['received', 'rendered', 'submitted', 'mailed', 'returned', 'failed'] },
    template_id: { type: 'string' },
    template_version: {
      type: ['integer', 'null'],
      description:
        'The template version it is rendered from: the current one when it was received (null before versions).',
    },
    contact: { type: 'object', additionalProperties: { type: 'string' } },
    address: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'As given: trimmed, the state and country in capitals.',
    },
    mailing_address: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        "As a mail partner receives it: in capitals, the postal code in its country's shape (ZIP+4 with its hyphen, a UK postcode with its space).",
    },
    custom_data: { type: 'object', additionalProperties: { type: 'string' } },
    document_id: { type: ['string', 'null'] },
    failure_reason: { type: ['string', 'null'] },
    partner: { type: ['string', 'null'], description: 'The mail partner it was handed to; null: not handed on.' },
    partner_id: { type: ['string', 'null'], description: "The partner's id of it (Lob's psc_…), once it has it." },
    test: {
      type: 'boolean',
      description: 'Made with a test postcard token (`plp_test_…`): rendered and proofed, never handed on.',
    },
    size: {
      enum: [...PRESET_NAMES, null],
      description:
        'The postcard size its PDF was checked for and marked with (TrimBox, BleedBox); null when its template names none. See docs/postcards.md.',
    },
    warnings: {
      type: 'array',
      description:
        "What the render and the print check warned about: `text_overflow` when a text does not fit its box (`field` is the variable); `outside_safe_zone`, `ink_in_address_area` and `low_resolution` (`field` is the side, `box` where it is, in points from the page's top left).",
      items: {
        type: 'object',
        required: ['code', 'field', 'message'],
        properties: {
          code: { type: 'string' },
          field: { type: 'string' },
          message: { type: 'string' },
          box: PRINT_BOX,
        },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
});

/** The mail partner's settings (GET and PUT /v1/apps/mail_partner): the secrets are written, never read back. */
export const MailPartnerSchema = shared('MailPartnerApp', {
  type: 'object',
  properties: {
    object: { const: 'app' },
    name: { const: 'mail_partner' },
    partner: {
      enum: [...PARTNER_NAMES, null],
      description: 'Who prints and mails live postcards; null: nobody (they stay rendered).',
    },
    api_key: { type: 'string', writeOnly: true, description: "The partner's secret API key (never shown again)." },
    webhook_secret: {
      type: 'string',
      writeOnly: true,
      description: 'The secret the partner signs its webhook events with.',
    },
    api_url: {
      type: ['string', 'null'],
      description:
        "The partner's API: https, or http on this machine; null: its own (https://api.lob.com, https://api.postgrid.com).",
    },
    use_type: {
      enum: ['marketing', 'operational'],
      description: 'What the mail is, as Lob asks (its use_type; Lob only).',
    },
    return_address: {
      type: ['object', 'null'],
      description:
        "Who the postcards are from, printed by the partner: `first_name`, `last_name` or `company`, and `address_line_1`, `address_line_2`, `address_city`, `address_state`, `address_zip`, `address_country`, checked as a postcard's address is; its address fields kept in capitals as the partner receives them. Lob needs one, in the US, for mail abroad. null: none.",
      properties: Object.fromEntries(
        ['first_name', 'last_name', 'company', ...ADDRESS_FIELDS].map((k) => [k, { type: 'string' }]),
      ),
      additionalProperties: false,
    },
    api_key_set: { type: 'boolean', readOnly: true },
    webhook_secret_set: { type: 'boolean', readOnly: true },
    configured_at: { type: ['string', 'null'], readOnly: true },
  },
  additionalProperties: false,
});

/** The shared schemas of postcards, registered once on the app. */
export const POSTCARD_SCHEMAS: TSchema[] = [PostcardRequestSchema, PostcardSchema, MailPartnerSchema];
