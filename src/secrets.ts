/**
 * Secrets (API keys, postcard tokens, link tokens, one-time codes) are stored only as SHA-256
 * hashes and compared in constant time. The plain value is shown once, when it is made.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A random string of `bytes` bytes of entropy from the operating system's CSPRNG, in base62. */
export function randomToken(bytes = 32): string {
  return base62(randomBytes(bytes));
}

/**
 * A token that can be made again: HMAC-SHA256 of `message` under `key`, in base62 (the same shape
 * as randomToken(32)). Whoever holds the key can recompute it; nobody else can guess it.
 */
export function derivedToken(key: Uint8Array, message: string): string {
  return base62(createHmac('sha256', key).update(message).digest());
}

function base62(raw: Uint8Array): string {
  const bytes = raw.length;
  let n = 0n;
  for (const b of raw) n = (n << 8n) | BigInt(b);
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

export function sha256(value: string | Uint8Array): string {
  return createHash('sha256').update(value).digest('hex');
}

/** Compares two hex digests in constant time. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}
