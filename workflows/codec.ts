/**
 * Encryption of Paperlink's payloads in Temporal (TEMPORAL_PAYLOAD_KEYS): workflow inputs and
 * results, activity arguments and results, signals — names, e-mail addresses and merge values —
 * are stored by the server as AES-256-GCM ciphertext under a key id. The first key encrypts; every
 * key decrypts, so a new key goes first and the old one stays until no open workflow holds payloads
 * it encrypted. A payload that is not encrypted (a history from before the keys) is read as it is.
 * Every process that talks to Temporal (serve, workers, your client) needs the same keys: the
 * plugin and the client helpers take them from Paperlink's settings; `paperlink codec-server`
 * decodes them for Temporal's UI.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { ConfigError, type TemporalConfig } from '../src/config';
import { parseKeys } from '../src/links/keyring';

/** The encoding of an encrypted payload (its metadata `encoding`). */
export const ENCRYPTED = 'binary/paperlink-encrypted';
const KEY_ID = 'paperlink-key-id';
const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : '');

/** A payload as Temporal's codec-server protocol writes it (protobuf JSON: bytes in base64). */
interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** A payload as the bytes the codec encrypts: its JSON form above. */
const pack = (p: Payload): Buffer => Buffer.from(JSON.stringify(toJson(p)));
const unpack = (b: Buffer): Payload => fromJson(JSON.parse(b.toString('utf8')) as JsonPayload);

export class PaperlinkCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;
  private readonly current: { id: string; key: Buffer };

  constructor(keys: { id: string; key: Buffer }[]) {
    if (!keys.length) throw new ConfigError('TEMPORAL_PAYLOAD_KEYS holds no key.');
    const ids = keys.map((k) => k.id);
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice)
      throw new ConfigError(`TEMPORAL_PAYLOAD_KEYS names key "${twice}" twice: give each key its own id (k2:…,k1:…).`);
    this.keys = new Map(keys.map((k) => [k.id, k.key.subarray(0, 32)]));
    this.current = { id: keys[0].id, key: keys[0].key.subarray(0, 32) };
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      const body = Buffer.concat([cipher.update(pack(p)), cipher.final()]);
      return {
        metadata: { encoding: utf8(ENCRYPTED), [KEY_ID]: utf8(this.current.id) },
        data: Buffer.concat([iv, cipher.getAuthTag(), body]),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (text(p.metadata?.encoding) !== ENCRYPTED) return p;
      const id = text(p.metadata?.[KEY_ID]);
      const key = this.keys.get(id);
      if (!key)
        throw new Error(
          `A Temporal payload is encrypted with key "${id}", which TEMPORAL_PAYLOAD_KEYS does not hold: give every process the same keys (a new one first, the old ones after it).`,
        );
      const data = Buffer.from(p.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(12, 28));
      return unpack(Buffer.concat([decipher.update(data.subarray(28)), decipher.final()]));
    });
  }
}

/** The codec Paperlink's settings name (TEMPORAL_PAYLOAD_KEYS), or none. */
export function payloadCodec(t: Pick<TemporalConfig, 'payloadKeys'>): PaperlinkCodec | undefined {
  return t.payloadKeys ? new PaperlinkCodec(parseKeys(t.payloadKeys, 'TEMPORAL_PAYLOAD_KEYS')) : undefined;
}

/**
 * The data converter of a client or worker that reads and writes Paperlink's payloads: `dataConverter`
 * of `new Client({ … })` (your own client too) and of a worker (the plugin sets it). Adds the
 * codec to one you have.
 */
export function paperlinkDataConverter(
  t: Pick<TemporalConfig, 'payloadKeys'>,
  base: DataConverter = {},
): DataConverter {
  // once: a plugin given both to the connection and to the worker configures it twice
  if (base.payloadCodecs?.some((c) => c instanceof PaperlinkCodec)) return base;
  const codec = payloadCodec(t);
  return codec ? { ...base, payloadCodecs: [...(base.payloadCodecs ?? []), codec] } : base;
}

/**
 * Temporal's codec-server protocol (POST /encode and /decode, `{ payloads: [...] }`), so that
 * Temporal's UI and CLI show Paperlink's payloads decrypted: `paperlink codec-server`. `origin`:
 * the UI's origin, allowed by CORS; `allowHosts`: the host:port names it is reached by besides the
 * address it listens on (a request naming another Host is refused, as DNS rebinding would send). It decrypts whatever it is given: serve it only where the
 * people allowed to read the payloads reach it (it listens on 127.0.0.1 unless told otherwise).
 */
export function codecServer(codec: PayloadCodec, origin: string | undefined, allowHosts: string[] = []): http.Server {
  const server = http.createServer((req, res) => {
    if (origin) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('access-control-allow-credentials', 'true');
    }
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    // a page elsewhere whose name resolves here (DNS rebinding) sends its own Host: refused
    const port = (server.address() as { port?: number } | null)?.port;
    const hosts = [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      ...(server.listening ? [listenHost(server)] : []),
      ...allowHosts,
    ];
    if (!hosts.includes(req.headers.host ?? ''))
      return send(421, {
        error: { code: 'invalid_host', message: `Host ${req.headers.host ?? '(none)'} is not this codec server's.` },
      });
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    const op = req.url?.replace(/\?.*$/, '').replace(/\/+$/, '').split('/').pop();
    if (req.method !== 'POST' || (op !== 'encode' && op !== 'decode'))
      return send(404, { error: { code: 'not_found', message: 'POST /encode or /decode' } });
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (tooLarge)
        return send(413, { error: { code: 'body_too_large', message: `At most ${MAX_BODY} bytes a request.` } });
      void (async () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
          if (!Array.isArray(body.payloads)) throw new Error('the body is { "payloads": [...] }');
          const payloads = body.payloads.map(fromJson);
          const out = op === 'encode' ? await codec.encode(payloads) : await codec.decode(payloads);
          send(200, { payloads: out.map(toJson) });
        } catch (err) {
          send(400, { error: { code: 'invalid_request', message: (err as Error).message } });
        }
      })();
    });
  });
  return server;
}

/** The largest request the codec server reads. */
const MAX_BODY = 8 * 1024 * 1024;

/** The host:port the server listens on, as a Host header names it. */
function listenHost(server: http.Server): string {
  const a = server.address() as { address: string; port: number; family: string };
  return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}
