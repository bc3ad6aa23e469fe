/**
 * Per-address limits on the routes anyone may call without an API key: postcard intake, the
 * recipient's pages, and code requests; and per-key limits on what costs a render and stores
 * nothing (previews). A token bucket per client address and group, refilled
 * evenly over a minute, read from the service's clock. Kept in this process (with
 * `--processes N` each process counts on its own) and bounded: past MAX_ADDRESSES the address
 * seen longest ago is forgotten.
 */
import type { Clock } from '../clock';
import { RateLimitError } from '../errors';
import type { RateGroup, RateLimits } from '../config';

const MAX_ADDRESSES = 100_000;

/** Which group a route is in (`url` as registered), or undefined for one with no per-address limit. */
export function rateGroupOf(method: string, url: string | undefined, postcardPath: string): RateGroup | undefined {
  if (url === undefined) return undefined;
  if ((url === postcardPath || url === `${postcardPath}/token`) && method === 'POST') return 'postcards';
  if (url === '/l/:token/code') return 'codes';
  if (url === '/v1/templates/preview' && method === 'POST') return 'previews';
  if (url.startsWith('/l/')) return 'pages';
  return undefined;
}

export class RateLimiter {
  /** By `group address`: tokens left and when they were counted; in the order last used. */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly limits: RateLimits,
  ) {}

  /** Counts one request of `address` in `group`; throws 429 rate_limited (with Retry-After) when over the limit. */
  take(group: RateGroup, address: string): void {
    const perMinute = this.limits[group];
    if (perMinute === 0) return;
    const key = `${group} ${address}`;
    const now = this.clock.now().getTime();
    const perMs = perMinute / 60_000;
    const seen = this.buckets.get(key);
    const tokens = seen ? Math.min(perMinute, seen.tokens + (now - seen.at) * perMs) : perMinute;
    if (tokens < 1) {
      throw new RateLimitError(
        `Too many requests from this ${group === 'previews' ? 'API key' : 'address'} (at most ${perMinute} a minute here). Wait as long as Retry-After says, then try again.`,
        Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)),
      );
    }
    this.buckets.delete(key);
    this.buckets.set(key, { tokens: tokens - 1, at: now });
    if (this.buckets.size > MAX_ADDRESSES) this.buckets.delete(this.buckets.keys().next().value as string);
  }

  /** Addresses counted now (tests check the bound). */
  get size(): number {
    return this.buckets.size;
  }
}
