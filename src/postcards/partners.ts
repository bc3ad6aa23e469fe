/**
 * Mail partners: who prints a live postcard and puts it in the mail. One small interface, a driver
 * per partner (Lob first), and the partner's settings (GET and PUT /v1/apps/mail_partner, the web
 * app's Settings). A driver submits a print-ready postcard (its front and back as one-page PDFs,
 * the recipient's address as data, our postcard id as the idempotency key, so a retried submit is
 * the same mail piece) and reads the partner's webhook events into our statuses.
 */
import { createHmac } from 'node:crypto';
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import { Setting } from '../db/setting';
import { AuthenticationError, ValidationError, type ErrorDetail } from '../errors';
import { isObject } from '../guards';
import { sameHash } from '../secrets';
import type { PresetName } from '../templates/presets';

/** What a partner says of a postcard, as our statuses (postcard.submitted, .mailed, .returned). */
export type PartnerStatus = 'submitted' | 'mailed' | 'returned';

/** A postcard as a partner receives it. */
export interface MailPiece {
  /** Our postcard id: the idempotency key, and the partner's metadata, so its events find it. */
  id: string;
  size: PresetName;
  front: Uint8Array;
  back: Uint8Array;
  to: {
    name: string;
    company?: string;
    address_line_1: string;
    address_line_2?: string;
    address_city: string;
    address_state: string;
    address_zip: string;
    address_country: string;
  };
}

/** A partner refused the postcard for good (its answer would be the same every time). */
export class PartnerRefused extends Error {}

export interface PartnerEvent {
  /** The partner's id of the event (a partner sends an event again until it is answered 2xx). */
  id: string;
  /** The partner's id of the postcard. */
  partnerId: string;
  /** Our id of it, where the partner keeps what we sent (Lob's metadata): found even before its id was recorded. */
  postcardId?: string;
  status: PartnerStatus;
}

export interface PartnerDriver {
  readonly name: PartnerName;
  /** Hands the postcard over; resolves with the partner's id of it. Throws PartnerRefused when retrying cannot help. */
  submit(piece: MailPiece): Promise<string>;
  /**
   * One of the partner's webhook events, its signature checked (401 otherwise): what it says of
   * which postcard, or undefined for an event that moves no status of ours.
   */
  event(headers: Record<string, string | string[] | undefined>, body: Buffer, now: Date): PartnerEvent | undefined;
}

export const PARTNER_NAMES = ['lob'] as const;
export type PartnerName = (typeof PARTNER_NAMES)[number];

/** The mail partner's settings: which partner, its API key and webhook secret (write-only), where its API is. */
export interface MailPartnerApp {
  partner: PartnerName | null;
  api_key?: string;
  webhook_secret?: string;
  /** The partner's API (its default when null); a test or a proxy points elsewhere. */
  api_url: string | null;
  /** Lob's use_type: what the mail is, as US law asks (marketing or operational). */
  use_type: 'marketing' | 'operational';
  configured_at: string | null;
}

/** The settings as the API shows them: the secrets only as whether they are set. */
export type MailPartnerView = Omit<MailPartnerApp, 'api_key' | 'webhook_secret'> & {
  api_key_set: boolean;
  webhook_secret_set: boolean;
};

const KEY = 'app:mail_partner';
const UNSET: MailPartnerApp = { partner: null, api_url: null, use_type: 'marketing', configured_at: null };

export class MailPartnerApps {
  private readonly stored: Setting<MailPartnerApp>;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.stored = new Setting(db, KEY);
  }

  async settings(): Promise<MailPartnerApp> {
    return { ...UNSET, ...(await this.stored.read()) };
  }

  async get(): Promise<MailPartnerView> {
    return view(await this.settings());
  }

  /**
   * `PUT /v1/apps/mail_partner`: {"partner": "lob", "api_key": "…", "webhook_secret": "…"}; a
   * secret left out keeps the stored one; {"partner": null} hands nothing on from now on.
   */
  async put(body: unknown): Promise<MailPartnerView> {
    const details: ErrorDetail[] = [];
    const known = ['partner', 'api_key', 'webhook_secret', 'api_url', 'use_type'];
    const shown = ['object', 'name', 'configured_at', 'api_key_set', 'webhook_secret_set'];
    if (!isObject(body))
      throw new ValidationError('The body must be a JSON object.', [
        { field: 'body', message: 'must be an object', code: 'type' },
      ]);
    for (const k of Object.keys(body))
      if (!known.includes(k) && !shown.includes(k))
        details.push({ field: k, message: 'is not a mail partner setting', code: 'unknown_field' });
    const { partner, api_key, webhook_secret, api_url, use_type } = body;
    if (partner !== undefined && partner !== null && !(PARTNER_NAMES as readonly unknown[]).includes(partner))
      details.push({
        field: 'partner',
        message: `must be one of ${PARTNER_NAMES.join(', ')}, or null`,
        code: 'invalid',
      });
    for (const [field, v] of [
      ['api_key', api_key],
      ['webhook_secret', webhook_secret],
    ] as const)
      if (v !== undefined && (typeof v !== 'string' || !v.trim() || v.length > 500))
        details.push({ field, message: 'must be a string of 1 to 500 characters', code: 'invalid' });
    if (
      api_url !== undefined &&
      api_url !== null &&
      (typeof api_url !== 'string' || !/^https?:\/\/[^\s]+$/.test(api_url))
    )
      details.push({
        field: 'api_url',
        message: 'must be an http(s) URL, or null for the partner’s own',
        code: 'invalid',
      });
    if (use_type !== undefined && use_type !== 'marketing' && use_type !== 'operational')
      details.push({ field: 'use_type', message: 'must be marketing or operational', code: 'invalid' });
    if (details.length) throw new ValidationError('The mail partner settings are not valid; see details.', details);
    const now = iso(this.clock.now());
    const saved = await this.stored.update((current) => {
      const next: MailPartnerApp = { ...UNSET, ...current, configured_at: now };
      if (partner !== undefined) next.partner = partner as PartnerName | null;
      if (typeof api_key === 'string') next.api_key = api_key.trim();
      if (typeof webhook_secret === 'string') next.webhook_secret = webhook_secret.trim();
      if (api_url !== undefined) next.api_url = (api_url as string | null)?.replace(/\/+$/, '') ?? null;
      if (use_type !== undefined) next.use_type = use_type as MailPartnerApp['use_type'];
      if (next.partner && !next.api_key)
        throw new ValidationError(`Handing postcards to ${next.partner} needs its API key.`, [
          { field: 'api_key', message: 'is required with a partner', code: 'required' },
        ]);
      return next;
    });
    return view(saved);
  }

  /** The driver of the configured partner, or undefined when postcards are not handed on. */
  async driver(): Promise<PartnerDriver | undefined> {
    const s = await this.settings();
    if (s.partner === 'lob' && s.api_key) return lob(s);
    return undefined;
  }
}

function view(app: MailPartnerApp): MailPartnerView {
  const { api_key, webhook_secret, ...rest } = app;
  return { ...rest, api_key_set: Boolean(api_key), webhook_secret_set: Boolean(webhook_secret) };
}

/** How long a submit may take before it is tried again (a PDF upload to the partner). */
const SUBMIT_TIMEOUT_MS = 60_000;
/** How far a partner's signed timestamp may be from our clock: older events are refused as replays. */
const EVENT_TOLERANCE_MS = 5 * 60_000;

/** The first value of a header. */
const header = (headers: Record<string, string | string[] | undefined>, name: string) => {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Lob (https://docs.lob.com): POST /v1/postcards as multipart/form-data with the two sides as PDF
 * files, HTTP basic auth with the API key, our postcard id as its Idempotency-Key (Lob answers a
 * repeat within 24 hours with the postcard it made the first time). Its webhook events are signed:
 * `Lob-Signature` is the hex HMAC-SHA256 of `<Lob-Signature-Timestamp>.<raw body>` with the
 * webhook's secret.
 */
export function lob(settings: MailPartnerApp): PartnerDriver {
  const base = settings.api_url ?? 'https://api.lob.com';
  const auth = `Basic ${Buffer.from(`${settings.api_key}:`).toString('base64')}`;
  return {
    name: 'lob',
    async submit(piece) {
      const form = new FormData();
      const field = (name: string, value: string | undefined) => {
        if (value) form.append(name, value);
      };
      field('description', `Paperlink postcard ${piece.id}`);
      field('to[name]', piece.to.name.slice(0, 40));
      // Lob's names and companies are 40 characters at most
      field('to[company]', piece.to.company?.slice(0, 40));
      field('to[address_line1]', piece.to.address_line_1);
      field('to[address_line2]', piece.to.address_line_2);
      field('to[address_city]', piece.to.address_city);
      field('to[address_state]', piece.to.address_state);
      field('to[address_zip]', piece.to.address_zip);
      field('to[address_country]', piece.to.address_country);
      field('size', piece.size);
      field('use_type', settings.use_type);
      field('metadata[paperlink_postcard]', piece.id);
      form.append('front', new Blob([Buffer.from(piece.front)], { type: 'application/pdf' }), 'front.pdf');
      form.append('back', new Blob([Buffer.from(piece.back)], { type: 'application/pdf' }), 'back.pdf');
      const res = await fetch(`${base}/v1/postcards`, {
        method: 'POST',
        headers: { authorization: auth, 'idempotency-key': piece.id },
        body: form,
        signal: AbortSignal.timeout(SUBMIT_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.ok) {
        const id = (JSON.parse(text) as { id?: unknown }).id;
        if (typeof id !== 'string') throw new Error(`Lob answered ${res.status} without a postcard id`);
        return id;
      }
      const said = (() => {
        try {
          return (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text.slice(0, 300);
        } catch {
          return text.slice(0, 300);
        }
      })();
      // only what Lob says of the postcard itself (400, 422) is refused the same way again; a key
      // that is wrong or was rotated (401, 403), a wrong api_url (404), a conflict, a timeout or its
      // rate limit may pass once someone mends it: tried again by the policy
      if (res.status === 400 || res.status === 422)
        throw new PartnerRefused(`Lob refused the postcard (${res.status}): ${said.slice(0, 200)}`);
      throw new Error(`Lob answered ${res.status}: ${said.slice(0, 200)}`);
    },
    event(headers, body, now) {
      const secret = settings.webhook_secret;
      const timestamp = header(headers, 'lob-signature-timestamp') ?? '';
      const signature = header(headers, 'lob-signature') ?? '';
      const expected = secret ? createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex') : '';
      // seconds or milliseconds since the epoch
      const at = Number(timestamp) < 1e12 ? Number(timestamp) * 1000 : Number(timestamp);
      if (
        !secret ||
        !signature ||
        !sameHash(expected, signature) ||
        !(Math.abs(now.getTime() - at) <= EVENT_TOLERANCE_MS)
      )
        throw new AuthenticationError(
          'The event is not signed with the mail partner’s webhook secret (Lob-Signature), or its timestamp is more than 5 minutes off.',
        );
      const event = JSON.parse(body.toString('utf8')) as {
        id?: string;
        reference_id?: string;
        event_type?: { id?: string };
        body?: { id?: string; metadata?: { paperlink_postcard?: string } };
      };
      const status = LOB_EVENTS[event.event_type?.id ?? ''];
      const partnerId = event.reference_id ?? event.body?.id;
      if (!status || typeof partnerId !== 'string' || typeof event.id !== 'string') return undefined;
      const ours = event.body?.metadata?.paperlink_postcard;
      return { id: event.id, partnerId, postcardId: typeof ours === 'string' ? ours : undefined, status };
    },
  };
}

/** Lob's events that move a postcard's status (the others, e.g. in_transit, are Lob's own detail). */
const LOB_EVENTS: Record<string, PartnerStatus> = {
  'postcard.created': 'submitted',
  'postcard.mailed': 'mailed',
  'postcard.returned_to_sender': 'returned',
};
