/**
 * Lob (https://docs.lob.com): POST /v1/postcards as multipart/form-data with the two sides as PDF
 * files, HTTP basic auth with the API key, our postcard id as its Idempotency-Key (Lob answers a
 * repeat within 24 hours with the postcard it made the first time). Its webhook events are signed:
 * `Lob-Signature` is the hex HMAC-SHA256 of `<Lob-Signature-Timestamp>.<raw body>` with the
 * webhook's secret.
 */
import {
  answerOf,
  CALL_TIMEOUT_MS,
  checkSigned,
  eventBody,
  header,
  pdfFile,
  sides,
  type PartnerDriver,
  type PartnerStatus,
} from './driver';

export interface LobSettings {
  api_key?: string;
  webhook_secret?: string;
  api_url: string | null;
  use_type: 'marketing' | 'operational';
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
    async submit(piece) {
      const form = new FormData();
      const field = (name: string, value: string | undefined) => {
        if (value) form.append(name, value);
      };
      const to = piece.to;
      field('description', `Paperlink postcard ${piece.id}`);
      // Lob's names and companies are 40 characters at most
      field('to[name]', [to.first_name, to.last_name].filter(Boolean).join(' ').slice(0, 40) || undefined);
      field('to[company]', to.company?.slice(0, 40));
      field('to[address_line1]', to.address_line_1);
      field('to[address_line2]', to.address_line_2);
      field('to[address_city]', to.address_city);
      field('to[address_state]', to.address_state);
      field('to[address_zip]', to.address_zip);
      field('to[address_country]', to.address_country);
      field('size', piece.size);
      field('use_type', settings.use_type);
      field('metadata[paperlink_postcard]', piece.id);
      const [front, back] = await sides(piece.pdf);
      form.append('front', pdfFile(front), 'front.pdf');
      form.append('back', pdfFile(back), 'back.pdf');
      const res = await fetch(`${base}/v1/postcards`, {
        method: 'POST',
        headers: { authorization: auth, 'idempotency-key': piece.id },
        body: form,
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
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
          signature: header(headers, 'lob-signature') ?? '',
          scheme: 'Lob-Signature',
        },
        body,
        now,
      );
      const event = eventBody<{
        id?: string;
        reference_id?: string;
        event_type?: { id?: string };
        body?: { id?: string; metadata?: { paperlink_postcard?: string } };
      }>(body);
      const status = EVENTS[event.event_type?.id ?? ''];
      const partnerId = event.reference_id ?? event.body?.id;
      if (!status || typeof partnerId !== 'string' || typeof event.id !== 'string') return undefined;
      const ours = event.body?.metadata?.paperlink_postcard;
      return { id: event.id, partnerId, postcardId: typeof ours === 'string' ? ours : undefined, status };
    },
  };
}
