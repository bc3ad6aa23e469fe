/**
 * Resource ids: a type prefix and 26 characters of Crockford base32, the first ten encoding the
 * creation time in milliseconds, the rest 80 random bits. Ids of one type sort by creation time,
 * which is what "newest first" lists page by.
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Random bytes from the CSPRNG, drawn from a pool filled 4 KB at a time (ids are made on every write). */
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let used = 0;
function random(n: number): Buffer {
  if (used + n > pool.length) {
    pool = randomBytes(POOL_SIZE);
    used = 0;
  }
  used += n;
  return pool.subarray(used - n, used);
}

function timePart(ms: number): string {
  let t = ms;
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

export function newId(prefix: string, now: Date = new Date()): string {
  // 80 random bits, five at a time, most significant first
  const bytes = random(10);
  let rand = '';
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = ((acc << 8) | b) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      rand += ALPHABET[(acc >> bits) & 31];
    }
  }
  return `${prefix}_${timePart(now.getTime())}${rand}`;
}

/**
 * The least id of the type made at or after `at`: ids made before it sort below it, ids made at
 * or after it sort at or above it (a time filter on a list becomes a range of its id index).
 */
export function firstIdAt(prefix: string, at: Date): string {
  return `${prefix}_${timePart(Math.max(0, at.getTime()))}`;
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
    const bytes = random(8);
    lastRand = 0n;
    for (const b of bytes) lastRand = (lastRand << 8n) | BigInt(b);
    lastRand >>= 2n; // room to count up without overflowing 80 bits
  } else {
    lastRand += 1n;
  }
  const time = timePart(lastTime);
  let rand = '';
  let bits = lastRand;
  for (let i = 0; i < 16; i++) {
    rand = ALPHABET[Number(bits & 31n)] + rand;
    bits >>= 5n;
  }
  return `${prefix}_${time}${rand}`;
}
