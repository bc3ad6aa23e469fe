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

let lastTime = -1;
let lastRand = 0n;

/**
 * Like newId, but strictly increasing within this process even within one millisecond (or when
 * the clock stands still or steps back): for rows whose order is their meaning (deliveries).
 */
export function sequentialId(prefix: string, now: Date = new Date()): string {
  const t = now.getTime();
  if (t > lastTime) {
    lastTime = t;
    const bytes = randomBytes(8);
    lastRand = 0n;
    for (const b of bytes) lastRand = (lastRand << 8n) | BigInt(b);
    lastRand >>= 2n; // room to count up without overflowing 80 bits
  } else {
    lastRand += 1n;
  }
  let time = '';
  let tt = lastTime;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[tt % 32] + time;
    tt = Math.floor(tt / 32);
  }
  let rand = '';
  let bits = lastRand;
  for (let i = 0; i < 16; i++) {
    rand = ALPHABET[Number(bits & 31n)] + rand;
    bits >>= 5n;
  }
  return `${prefix}_${time}${rand}`;
}
