/**
 * Resource ids: a type prefix and 26 characters of Crockford base32, the first ten encoding the
 * creation time in milliseconds, the rest 80 random bits. Ids of one type sort by creation time,
 * which is what "newest first" lists page by.
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export function newId(prefix: string, now: Date = new Date()): string {
  let t = now.getTime();
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let rand = '';
  for (let i = 0; i < 16; i++) {
    rand = ALPHABET[Number(bits & 31n)] + rand;
    bits >>= 5n;
  }
  return `${prefix}_${time}${rand}`;
}

/** Whether a string looks like an id of the given prefix (cheap check before a lookup). */
export function isId(prefix: string, value: unknown): value is string {
  return typeof value === 'string' && value.length <= 64 && value.startsWith(`${prefix}_`) && /^[a-z]+_[0-9a-z_]+$/.test(value);
}
