/**
 * Lob (https://docs.lob.com): POST /v1/postcards as multipart/form-data with the two sides as PDF
 * files, HTTP basic auth with the API key, our postcard id as its Idempotency-Key (Lob answers a
 * repeat within 24 hours with the postcard it made the first time). Its webhook events are signed:
 * `Lob-Signature` is the hex HMAC-SHA256 of `<Lob-Signature-Timestamp>.<raw body>` with the
 * webhook's secret.
 */
import {
  answerOf,
  checkSigned,
  eventBody,
  formOf,
  header,
  partnerEvent,
  pdfFile,
  sides,
  type Addressee,
  type PartnerDriver,
  type PartnerStatus,
} from './driver';

export interface LobSettings {
  api_key?: string;
  webhook_secret?: string;
  api_url: string | null;
  use_type: 'marketing' | 'operational';
  return_address: Addressee | null;
}

/** Someone as Lob's address fields under `to` or `from` (names and companies 40 characters at most). */
function address(prefix: 'to' | 'from', a: Addressee | null): Record<string, string | undefined> {
  if (!a) return {};
  return {
    [`${prefix}[name]`]: [a.first_name, a.last_name].filter(Boolean).join(' ').slice(0, 40),
    [`${prefix}[company]`]: a.company?.slice(0, 40),
    [`${prefix}[address_line1]`]: a.address_line_1,
    [`${prefix}[address_line2]`]: a.address_line_2,
    [`${prefix}[address_city]`]: a.address_city,
    [`${prefix}[address_state]`]: a.address_state,
    [`${prefix}[address_zip]`]: a.address_zip,
    [`${prefix}[address_country]`]: a.address_country,
  };
}

/** Lob's events that move a postcard's status (the others, e.g. in_transit, are Lob's own detail). */
const EVENTS: Record<string, PartnerStatus> = {
  'postcard.created': 'submitted',
  'postcard.mailed': 'mailed',
  'postcard.returned_to_sender': 'returned',
};

export function lob(settings: LobSettings): PartnerDriver {
  const base = settings.api_url ?? 'https://api.lob.com';
  const auth = `Basic ${Buffer.from(`${settings.api_key}:`).toString('base64')}`;
  return {
    name: 'lob',
    async submit(piece, signal) {
      const form = formOf({
        description: `Paperlink postcard ${piece.id}`,
        ...address('to', piece.to),
        ...address('from', settings.return_address),
        size: piece.size,
        use_type: settings.use_type,
        'metadata[paperlink_postcard]': piece.id,
      });
      const [front, back] = await sides(piece.pdf);
      form.append('front', pdfFile(front), 'front.pdf');
      form.append('back', pdfFile(back), 'back.pdf');
      const res = await fetch(`${base}/v1/postcards`, {
        method: 'POST',
        headers: { authorization: auth, 'idempotency-key': piece.id },
        body: form,
        signal,
      });
      const { id } = await answerOf<{ id?: unknown }>('Lob', res);
      if (typeof id !== 'string') throw new Error(`Lob answered ${res.status} without a postcard id`);
      return id;
    },
    event(headers, body, now) {
      checkSigned(
        settings.webhook_secret,
        {
          timestamp: header(headers, 'lob-signature-timestamp') ?? '',
          signatures: [header(headers, 'lob-signature') ?? ''],
          scheme: 'Lob-Signature',
        },
        body,
        now,
      );
      const event = eventBody<{
        id?: unknown;
        reference_id?: unknown;
        event_type?: { id?: string };
        body?: { id?: unknown; metadata?: { paperlink_postcard?: unknown } };
      }>(body);
      return partnerEvent(
        event.id,
        event.reference_id ?? event.body?.id,
        event.body?.metadata?.paperlink_postcard,
        EVENTS[event.event_type?.id ?? ''],
      );
    },
  };
}
