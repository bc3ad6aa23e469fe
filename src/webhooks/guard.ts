/**
 * Where webhooks may be delivered. By default not to loopback, link-local, private or otherwise
 * special addresses, checked on the address actually connected to (after DNS), so the webhook
 * feature cannot be used to reach the operator's own network. WEBHOOK_ALLOW_PRIVATE=true lifts
 * that for private deployments and tests.
 */
import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';

const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => (n << 8) + Number(part), 0) >>> 0;
}

/** Whether an IP address is one webhooks must not reach unless private targets are allowed. */
export function isPrivateAddress(ip: string): boolean {
  if (net.isIPv4(ip)) {
    const n = v4ToInt(ip);
    return V4_BLOCKED.some(([base, bits]) => (n >>> (32 - bits)) === (v4ToInt(base) >>> (32 - bits)));
  }
  const a = ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isPrivateAddress(mapped[1]);
  // the same, as URL parsing writes it: ::ffff:7f00:1
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (hex) {
    const n = (parseInt(hex[1], 16) << 16) | parseInt(hex[2], 16);
    return isPrivateAddress([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'));
  }
  if (a === '::' || a === '::1') return true;
  const first = parseInt(a.split(':')[0] || '0', 16);
  return (first & 0xfe00) === 0xfc00 /* fc00::/7 unique local */ || (first & 0xffc0) === 0xfe80 /* fe80::/10 link-local */ || (first & 0xff00) === 0xff00 /* multicast */;
}

/** What is wrong with a webhook URL as written (before any DNS), or undefined. */
export function urlProblem(url: unknown, allowPrivate: boolean): string | undefined {
  if (typeof url !== 'string' || url.length > 2048) return 'must be an http(s) URL of at most 2048 characters';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute http(s) URL, e.g. https://example.com/hooks/paperlink';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must use https (or http)';
  if (u.username || u.password) return 'must not carry a user name or password; check the Paperlink-Signature header instead';
  if (!allowPrivate) {
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) && isPrivateAddress(host))) {
      return 'points to a loopback, link-local or private address, which this server does not deliver to (WEBHOOK_ALLOW_PRIVATE=true allows it)';
    }
  }
  return undefined;
}

/** A DNS lookup for http.request that refuses private addresses (the check happens on what is connected to). */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as dns.LookupAddress[];
      const usable = allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (usable.length === 0) {
        const e = Object.assign(new Error(`${hostname} resolves only to private addresses (${list.map((a) => a.address).join(', ')}); not delivering there`), { code: 'EPRIVATE' });
        return callback(e, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      callback(null, usable[0].address, usable[0].family);
    });
  };
}
