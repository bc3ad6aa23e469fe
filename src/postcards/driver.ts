/**
 * The one small interface every mail partner's driver has (lob.ts, postgrid.ts): submit a
 * print-ready postcard so that a retried submit is the same mail piece, and read the partner's
 * signed webhook events into our statuses. What the drivers share is here too: the signature
 * check, the timeout, and which answers are a refusal for good.
 */
import { createHmac } from 'node:crypto';
import { PDFDocument } from 'pdf-lib';
import { AuthenticationError, MalformedRequestError } from '../errors';
import { sameHash } from '../secrets';
import type { PresetName } from '../templates/presets';

export const PARTNER_NAMES = ['lob', 'postgrid'] as const;
export type PartnerName = (typeof PARTNER_NAMES)[number];

/** What a partner says of a postcard, as our statuses (postcard.submitted, .mailed, .returned). */
export type PartnerStatus = 'submitted' | 'mailed' | 'returned';

/** A postcard as a partner receives it. */
export interface MailPiece {
  /** Our postcard id: how a retried submit finds the mail piece made before, and the partner's metadata, so its events find it. */
  id: string;
  size: PresetName;
  /** The print-ready PDF: the front, then the back, each the size's page with its bleed. */
  pdf: Uint8Array;
  /** The recipient: the contact's names and the `mailing_address` (rules.ts). */
  to: Addressee;
}

/** Someone with an address, as a partner prints it: the recipient, or who the postcards are from. */
export interface Addressee {
  first_name?: string;
  last_name?: string;
  company?: string;
  address_line_1: string;
  address_line_2?: string;
  address_city: string;
  address_state: string;
  address_zip: string;
  address_country: string;
}

/** A partner refused the postcard for good (its answer would be the same every time). */
export class PartnerRefused extends Error {}

export interface PartnerEvent {
  /** The partner's id of the event (a partner sends an event again until it is answered 2xx). */
  id: string;
  /** The partner's id of the postcard. */
  partnerId: string;
  /** Our id of it, where the partner keeps what we sent (its metadata): found even before its id was recorded. */
  postcardId?: string;
  status: PartnerStatus;
}

export type Headers = Record<string, string | string[] | undefined>;

export interface PartnerDriver {
  readonly name: PartnerName;
  /**
   * Hands the postcard over; resolves with the partner's id of it. Throws PartnerRefused when
   * retrying cannot help. Every call it makes ends with `signal` (the attempt's deadline, within
   * its lease: handoff.ts), so no attempt outlives its lease and meets the next one.
   */
  submit(piece: MailPiece, signal: AbortSignal): Promise<string>;
  /**
   * One of the partner's webhook events, its signature checked (401 otherwise): what it says of
   * which postcard, or undefined for an event that moves no status of ours.
   */
  event(headers: Headers, body: Buffer, now: Date): PartnerEvent | undefined;
}

/** How far a partner's signed timestamp may be from our clock: older events are refused as replays. */
const EVENT_TOLERANCE_MS = 5 * 60_000;

/** The first value of a header. */
export function header(headers: Headers, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Checks an event's signature as both partners sign theirs: the hex HMAC-SHA256 of
 * `<timestamp>.<raw body>` with the webhook's secret, any of `signatures` (a partner rotating its
 * secret sends two), the timestamp (digits: seconds, or milliseconds from 1e12 on) within 5
 * minutes of ours. Throws 401 otherwise.
 */
export function checkSigned(
  secret: string | undefined,
  signed: { timestamp: string; signatures: string[]; scheme: string },
  body: Buffer,
  now: Date,
): void {
  const expected = secret ? createHmac('sha256', secret).update(`${signed.timestamp}.`).update(body).digest('hex') : '';
  const t = /^\d{1,16}$/.test(signed.timestamp) ? Number(signed.timestamp) : NaN;
  const at = t < 1e12 ? t * 1000 : t;
  const matches = signed.signatures.some((s) => /^[0-9a-f]{64}$/i.test(s) && sameHash(expected, s.toLowerCase()));
  if (!secret || !matches || !(Math.abs(now.getTime() - at) <= EVENT_TOLERANCE_MS))
    throw new AuthenticationError(
      `The event is not signed with the mail partner’s webhook secret (${signed.scheme}), or its timestamp is more than 5 minutes off.`,
    );
}

/** A signed event's body as JSON (400 malformed_json when it is not). */
export function eventBody<T>(body: Buffer): T {
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch {
    throw new MalformedRequestError('malformed_json', 'The event is not JSON.');
  }
}

/**
 * A partner's answer read as JSON; a refusal when it is to the postcard itself (400, 422: the
 * same every time), an error to try again otherwise. A key that is wrong or was rotated (401,
 * 403), a wrong api_url (404), a conflict, a timeout or a rate limit may pass once someone mends
 * it: tried again by the policy.
 */
export async function answerOf<T>(partner: string, res: Response, of: 'postcard' | 'query' = 'postcard'): Promise<T> {
  const text = await res.text();
  if (res.ok) {
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`${partner} answered ${res.status} with what is not JSON`);
    }
  }
  const said = (() => {
    try {
      return (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
    } catch {
      return text;
    }
  })().slice(0, 200);
  // a 4xx to a query of ours (a search) says nothing of the postcard: tried again like any other
  if (of === 'postcard' && (res.status === 400 || res.status === 422))
    throw new PartnerRefused(`${partner} refused the postcard (${res.status}): ${said}`);
  throw new Error(`${partner} answered ${res.status}: ${said}`);
}

/** The postcard's two sides, each a one-page PDF (for a partner that takes them apart). */
export async function sides(pdf: Uint8Array): Promise<[Uint8Array, Uint8Array]> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const side = async (i: number) => {
    const one = await PDFDocument.create({ updateMetadata: false });
    const [page] = await one.copyPages(doc, [i]);
    one.addPage(page);
    return one.save({ objectsPerTick: Infinity });
  };
  return [await side(0), await side(1)];
}

/** A PDF as a multipart file. */
export const pdfFile = (bytes: Uint8Array) => new Blob([Buffer.from(bytes)], { type: 'application/pdf' });

/** A multipart form of the fields that have a value, bracket notation as both partners read it (`to[name]`). */
export function formOf(fields: Record<string, string | undefined>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value) form.append(name, value);
  return form;
}

/** What a signed event says, once it moves a status of ours; undefined otherwise. */
export function partnerEvent(
  id: unknown,
  partnerId: unknown,
  ours: unknown,
  status: PartnerStatus | undefined,
): PartnerEvent | undefined {
  if (!status || typeof partnerId !== 'string' || typeof id !== 'string') return undefined;
  return { id, partnerId, postcardId: typeof ours === 'string' ? ours : undefined, status };
}
