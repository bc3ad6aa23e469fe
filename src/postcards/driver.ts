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
  to: {
    first_name?: string;
    last_name?: string;
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
  /** Our id of it, where the partner keeps what we sent (its metadata): found even before its id was recorded. */
  postcardId?: string;
  status: PartnerStatus;
}

export type Headers = Record<string, string | string[] | undefined>;

export interface PartnerDriver {
  readonly name: PartnerName;
  /** Hands the postcard over; resolves with the partner's id of it. Throws PartnerRefused when retrying cannot help. */
  submit(piece: MailPiece): Promise<string>;
  /**
   * One of the partner's webhook events, its signature checked (401 otherwise): what it says of
   * which postcard, or undefined for an event that moves no status of ours.
   */
  event(headers: Headers, body: Buffer, now: Date): PartnerEvent | undefined;
}

/** How long one call to a partner may take before it is tried again (a PDF upload). */
export const CALL_TIMEOUT_MS = 60_000;
/** How far a partner's signed timestamp may be from our clock: older events are refused as replays. */
const EVENT_TOLERANCE_MS = 5 * 60_000;

/** The first value of a header. */
export function header(headers: Headers, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Checks an event's signature as both partners sign theirs: the hex HMAC-SHA256 of
 * `<timestamp>.<raw body>` with the webhook's secret, the timestamp within 5 minutes of ours
 * (seconds or milliseconds since the epoch). Throws 401 otherwise.
 */
export function checkSigned(
  secret: string | undefined,
  signed: { timestamp: string; signature: string; scheme: string },
  body: Buffer,
  now: Date,
): void {
  const expected = secret ? createHmac('sha256', secret).update(`${signed.timestamp}.`).update(body).digest('hex') : '';
  const t = Number(signed.timestamp);
  const at = t < 1e12 ? t * 1000 : t;
  if (
    !secret ||
    !signed.signature ||
    !sameHash(expected, signed.signature) ||
    !(Math.abs(now.getTime() - at) <= EVENT_TOLERANCE_MS)
  )
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
 * A partner's answer read as JSON; a refusal when it is about the postcard itself (400, 422: the
 * same every time), an error to try again otherwise. A key that is wrong or was rotated (401,
 * 403), a wrong api_url (404), a conflict, a timeout or a rate limit may pass once someone mends
 * it: tried again by the policy.
 */
export async function answerOf<T>(partner: string, res: Response): Promise<T> {
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
  if (res.status === 400 || res.status === 422)
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
