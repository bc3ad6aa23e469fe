/**
 * Webhook signatures: `Paperlink-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`
 * keyed with the subscription's signing secret. Receivers check the HMAC in constant time and
 * refuse old timestamps, so a captured delivery cannot be replayed later.
 * No imports besides node:crypto: the n8n trigger node uses this file as it is.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'paperlink-signature';
/** How old a signed timestamp may be (5 minutes), by default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export function sign(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

export type Verification = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'too_old' | 'mismatch' };

/** Checks a delivery: the raw body exactly as received, the header, the secret. */
export function verify(
  secret: string,
  body: string | Buffer,
  header: string | undefined,
  options: { nowSeconds?: number; toleranceSeconds?: number } = {},
): Verification {
  if (!header) return { ok: false, reason: 'missing' };
  const parts = new Map<string, string[]>();
  for (const piece of header.split(',')) {
    const i = piece.indexOf('=');
    if (i <= 0) return { ok: false, reason: 'malformed' };
    const k = piece.slice(0, i).trim();
    parts.set(k, [...(parts.get(k) ?? []), piece.slice(i + 1).trim()]);
  }
  const t = Number(parts.get('t')?.[0]);
  const macs = parts.get('v1') ?? [];
  if (!Number.isInteger(t) || macs.length === 0) return { ok: false, reason: 'malformed' };
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS))
    return { ok: false, reason: 'too_old' };
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  // several v1 entries may be present while a secret is being rolled: any may match
  const match = macs.some((m) => /^[0-9a-f]{64}$/.test(m) && timingSafeEqual(Buffer.from(m, 'hex'), expected));
  return match ? { ok: true } : { ok: false, reason: 'mismatch' };
}
