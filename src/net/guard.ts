/**
 * Where the server may send requests of its own to an address someone else chose (webhooks, and
 * the OpenID Connect providers of Magic Link sign-in). By default not to loopback, link-local,
 * private or otherwise special addresses, checked on the address actually connected to (after
 * DNS), so neither feature can be used to reach the operator's own network. WEBHOOK_ALLOW_PRIVATE
 * and OIDC_ALLOW_PRIVATE lift that for private deployments and tests.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The IPv4 address an IPv6 one stands for, where it embeds one: IPv4-mapped and -translated
 * (::ffff:a.b.c.d), NAT64 with the well-known prefix (64:ff9b::/96, RFC 6052) and 6to4
 * (2002:AABB:CCDD::/48). Such an address reaches whatever its IPv4 address reaches.
 */
function embeddedIPv4(a: ipaddr.IPv6): string | undefined {
  const bytes = a.toByteArray();
  switch (a.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d: the last 32 bits (ipaddr.js converts only the first form)
      return bytes.slice(12).join('.');
    case 'rfc6052':
      // only the well-known /96 puts the address in the last 32 bits; local-use prefixes (64:ff9b:1::/48) are private
      return a.match(NAT64_WELL_KNOWN) ? bytes.slice(12).join('.') : undefined;
    case '6to4':
      return bytes.slice(2, 6).join('.');
    default:
      return undefined;
  }
}

/**
 * Whether an IP address is one webhooks must not reach unless private targets are allowed: anything
 * but global unicast (loopback, private, carrier-grade NAT, link-local, documentation, benchmarking,
 * multicast, reserved, unique-local, discard-only, Teredo…, by ipaddr.js's ranges), and an IPv6
 * address that embeds such an IPv4 one.
 */
export function isPrivateAddress(ip: string): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip);
  } catch {
    return true;
  }
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    const v4 = embeddedIPv4(v6);
    if (v4 !== undefined) return isPrivateAddress(v4);
    return v6.range() !== 'unicast';
  }
  return addr.range() !== 'unicast';
}

/** What is wrong with a URL as written (before any DNS), or undefined; `setting` lifts the private-address rule. */
export function urlProblem(url: unknown, allowPrivate: boolean, setting = 'WEBHOOK_ALLOW_PRIVATE'): string | undefined {
  if (typeof url !== 'string' || url.length > 2048) return 'must be an http(s) URL of at most 2048 characters';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute http(s) URL, e.g. https://example.com/hooks/paperlink';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must use https (or http)';
  if (u.username || u.password)
    return 'must not carry a user name or password; check the Paperlink-Signature header instead';
  if (!allowPrivate) {
    const host = u.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) && isPrivateAddress(host))) {
      return `points to a loopback, link-local or private address, which this server does not send to (${setting}=true allows it)`;
    }
  }
  return undefined;
}

/** A DNS lookup for http.request that refuses private addresses (the check happens on what is connected to). */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses;
      const usable = allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (usable.length === 0) {
        const e = Object.assign(
          new Error(
            `${hostname} resolves only to private addresses (${list.map((a) => a.address).join(', ')}); not delivering there`,
          ),
          { code: 'EPRIVATE' },
        );
        return callback(e, '', 0);
      }
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      callback(null, usable[0].address, usable[0].family);
    });
  };
}

/** A fetch for a library that takes one (openid-client): what {@link guardedFetch} answers with. */
export type GuardedFetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: unknown; signal?: AbortSignal },
) => Promise<Response>;

/**
 * fetch through the same guard as webhooks: the URL as written and the address connected to; the
 * whole exchange within `timeoutMs`; an answer of at most `maxBytes`; no redirect followed.
 */
export function guardedFetch(o: {
  allowPrivate: boolean;
  setting: string;
  timeoutMs: number;
  maxBytes: number;
}): GuardedFetch {
  return (url, init) => {
    const problem = urlProblem(url, o.allowPrivate, o.setting);
    if (problem) return Promise.reject(Object.assign(new Error(`${url} ${problem}`), { code: 'EPRIVATE' }));
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : typeof init.body === 'string' || init.body instanceof URLSearchParams
          ? String(init.body)
          : Buffer.from(init.body as ArrayBuffer);
    const u = new URL(url);
    return new Promise<Response>((resolve, reject) => {
      const req = (u.protocol === 'https:' ? https : http).request(
        u,
        {
          method: init.method,
          headers: { ...init.headers, ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}) },
          lookup: guardedLookup(o.allowPrivate),
          signal: init.signal,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > o.maxBytes) req.destroy(new Error(`${u.origin} answered more than ${o.maxBytes} bytes`));
            else chunks.push(c);
          });
          res.on('end', () => {
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              for (const one of [v ?? []].flat()) headers.append(k, one);
            const status = res.statusCode ?? 502;
            const empty = status === 204 || status === 304;
            resolve(
              new Response(empty ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage, headers }),
            );
          });
          res.on('error', reject);
        },
      );
      const timer = setTimeout(
        () =>
          req.destroy(
            Object.assign(new Error(`${u.origin} did not answer within ${o.timeoutMs} ms`), { code: 'ETIMEDOUT' }),
          ),
        o.timeoutMs,
      );
      req.on('close', () => clearTimeout(timer));
      req.on('error', reject);
      req.end(body);
    });
  };
}
