/**
 * PostGrid (https://docs.postgrid.com, Print & Mail API v1): POST /print-mail/v1/postcards as
 * multipart/form-data with the postcard as one two-page PDF (`pdf`: the front, then the back),
 * the API key in `X-API-Key`. Its sizes are 6x4, 9x6 and 11x6 (our 4x6, 6x9, 6x11, landscape, with
 * the 1/8 in bleed: 6.25 × 4.25 in and so on); it prints no A6 or A5.
 *
 * PostGrid takes no idempotency key for postcards. So every attempt first asks for the postcard an
 * earlier attempt made (its answer lost, or its process gone before writing it down): a search for
 * our id, which the postcard carries in its metadata and description; only when there is none is
 * one made. One attempt runs at a time (the hand-off's lease, which outlasts the attempt's
 * deadline), so two never both search at once. What is left: a card PostGrid made after we stopped
 * waiting for it, or one its search does not show yet, when the next attempt asks (docs/postcards.md).
 *
 * Its webhook events (JSON payload format) are signed: `PostGrid-Signature: t=<ms>,v1=<hex
 * HMAC-SHA256 of "<t>.<raw body>" with the webhook's secret>`.
 */
import {
  answerOf,
  checkSigned,
  eventBody,
  formOf,
  header,
  partnerEvent,
  PartnerRefused,
  pdfFile,
  type Addressee,
  type PartnerDriver,
  type PartnerStatus,
} from './driver';
import type { PresetName } from '../templates/presets';

export interface PostGridSettings {
  api_key?: string;
  webhook_secret?: string;
  api_url: string | null;
  return_address: Addressee | null;
}

/** Someone as PostGrid's contact fields under `to` or `from` (a first name or a company). */
function contact(prefix: 'to' | 'from', a: Addressee | null): Record<string, string | undefined> {
  if (!a) return {};
  return {
    // a person's name when there is one
    [`${prefix}[firstName]`]: a.first_name ?? a.last_name,
    [`${prefix}[lastName]`]: a.first_name ? a.last_name : undefined,
    [`${prefix}[companyName]`]: a.company,
    [`${prefix}[addressLine1]`]: a.address_line_1,
    [`${prefix}[addressLine2]`]: a.address_line_2,
    [`${prefix}[city]`]: a.address_city,
    [`${prefix}[provinceOrState]`]: a.address_state,
    [`${prefix}[postalOrZip]`]: a.address_zip,
    [`${prefix}[countryCode]`]: a.address_country,
  };
}

/** Our sizes as PostGrid names them (width × height of the card as it lies, in inches). */
const SIZES: Partial<Record<PresetName, string>> = { '4x6': '6x4', '6x9': '9x6', '6x11': '11x6' };

/** A PostGrid postcard, as far as we read it. */
interface PostGridPostcard {
  id?: unknown;
  status?: string;
  imbStatus?: string;
  metadata?: { paperlink_postcard?: unknown };
}

/**
 * What a PostGrid postcard's state is of ours: in the post once PostGrid has processed it for
 * delivery (or the post has scanned it, or it is completed), returned when the post says so.
 * `ready` and `printing` are PostGrid's own detail; `cancelled` (someone cancelled it in
 * PostGrid's dashboard) moves nothing.
 */
function statusOf(type: string | undefined, p: PostGridPostcard): PartnerStatus | undefined {
  if (p.imbStatus === 'returned_to_sender') return 'returned';
  if (
    p.status === 'processed_for_delivery' ||
    p.status === 'completed' ||
    p.imbStatus === 'entered_mail_stream' ||
    p.imbStatus === 'out_for_delivery'
  )
    return 'mailed';
  if (type === 'postcard.created') return 'submitted';
  return undefined;
}

export function postgrid(settings: PostGridSettings): PartnerDriver {
  const base = `${settings.api_url ?? 'https://api.postgrid.com'}/print-mail/v1`;
  const key = { 'x-api-key': settings.api_key ?? '' };
  return {
    name: 'postgrid',
    async submit(piece, signal) {
      const size = SIZES[piece.size];
      if (!size) throw new PartnerRefused(`PostGrid prints 4x6, 6x9 and 6x11 postcards, not ${piece.size}`);
      // the quotes ask for the postcards that carry our id as it is
      const search = new URLSearchParams({ search: JSON.stringify(piece.id), limit: '10' });
      const found = await answerOf<{ data?: PostGridPostcard[] }>(
        'PostGrid',
        await fetch(`${base}/postcards?${search}`, { headers: key, signal }),
        'query',
      );
      const made = found.data?.find((p) => p.metadata?.paperlink_postcard === piece.id);
      if (typeof made?.id === 'string') return made.id;

      const form = formOf({
        ...contact('to', piece.to),
        ...contact('from', settings.return_address),
        size,
        description: `Paperlink postcard ${piece.id}`,
        'metadata[paperlink_postcard]': piece.id,
      });
      form.append('pdf', pdfFile(piece.pdf), 'postcard.pdf');
      const res = await fetch(`${base}/postcards`, { method: 'POST', headers: key, body: form, signal });
      const { id } = await answerOf<PostGridPostcard>('PostGrid', res);
      if (typeof id !== 'string') throw new Error(`PostGrid answered ${res.status} without a postcard id`);
      return id;
    },
    event(headers, body, now) {
      // `t=<ms>,v1=<hex>`; a second v1 while PostGrid rotates the secret; a part without "=" is no part
      const parts = (header(headers, 'postgrid-signature') ?? '')
        .split(',')
        .map((p) => p.trim().split('='))
        .filter((kv) => kv.length === 2);
      checkSigned(
        settings.webhook_secret,
        {
          timestamp: parts.find(([k]) => k === 't')?.[1] ?? '',
          signatures: parts.filter(([k]) => k === 'v1').map(([, v]) => v),
          scheme: 'PostGrid-Signature',
        },
        body,
        now,
      );
      const event = eventBody<{ id?: unknown; type?: unknown; data?: PostGridPostcard }>(body);
      const data = event.data ?? {};
      const type = typeof event.type === 'string' ? event.type : '';
      const status = type.startsWith('postcard.') ? statusOf(type, data) : undefined;
      return partnerEvent(event.id, data.id, data.metadata?.paperlink_postcard, status);
    },
  };
}
