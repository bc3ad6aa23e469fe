/**
 * The payload codec of TEMPORAL_PAYLOAD_KEYS and its codec server (no Temporal server needed), and
 * the step activity that shares a stored document under a key.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import { PaperlinkError } from '../../src/errors';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { codecServer, ENCRYPTED, PaperlinkCodec, payloadCodec } from '../../workflows/codec';
import { testService, type TestService } from '../support/service';

const key = () => randomBytes(32).toString('base64');
const json = (v: unknown): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(JSON.stringify(v)),
});
const text = (p: Payload) => Buffer.from(p.data!).toString('utf8');

describe('the payload codec (TEMPORAL_PAYLOAD_KEYS)', () => {
  it('encrypts with the first key, reads with any, and reads a payload from before the keys as it is', async () => {
    const k1 = `k1:${key()}`;
    const old = payloadCodec({ payloadKeys: k1 })!;
    const [sealed] = await old.encode([json({ email: 'ada@example.com' })]);
    expect(Buffer.from(sealed.metadata!.encoding).toString()).toBe(ENCRYPTED);
    expect(Buffer.from(sealed.data!).toString('latin1')).not.toContain('ada@example.com');
    // rotated: a new key first, the old one after it
    const rotated = payloadCodec({ payloadKeys: `k2:${key()},${k1}` })!;
    expect(text((await rotated.decode([sealed]))[0])).toBe('{"email":"ada@example.com"}');
    const [resealed] = await rotated.encode([json(1)]);
    expect(text((await rotated.decode([resealed]))[0])).toBe('1');
    await expect(old.decode([resealed])).rejects.toThrow(/k2/);
    // unencrypted (written before the keys were set): passed through
    expect(await rotated.decode([json('plain')])).toEqual([json('plain')]);
    expect(await rotated.encode([])).toEqual([]);
  });

  it('refuses a payload whose ciphertext was changed', async () => {
    const codec = payloadCodec({ payloadKeys: `k1:${key()}` })!;
    const [sealed] = await codec.encode([json('x')]);
    const data = Buffer.from(sealed.data!);
    data[data.length - 1] ^= 1;
    await expect(codec.decode([{ ...sealed, data }])).rejects.toThrow();
  });

  it('refuses keys that are not keys, and one id twice, as invalid_configuration', () => {
    for (const payloadKeys of ['k1:short', `k1:${key()},k1:${key()}`]) {
      let err: unknown;
      try {
        payloadCodec({ payloadKeys });
      } catch (e) {
        err = e;
      }
      expect((err as PaperlinkError).code).toBe('invalid_configuration');
    }
    expect(payloadCodec({})).toBeUndefined();
  });

  it("serves Temporal's codec protocol to the UI's origin only at its own host, within its limit", async () => {
    const codec = new PaperlinkCodec([{ id: 'k1', key: randomBytes(32) }]);
    const server = codecServer(codec, 'http://ui.example');
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    try {
      const plain = {
        metadata: { encoding: Buffer.from('json/plain').toString('base64') },
        data: Buffer.from('"hi"').toString('base64'),
      };
      const encoded = await post('/encode', { payloads: [plain] });
      expect(encoded.status).toBe(200);
      expect(encoded.headers.get('access-control-allow-origin')).toBe('http://ui.example');
      const sealed = ((await encoded.json()) as { payloads: unknown[] }).payloads;
      const decoded = await post('/decode', { payloads: sealed });
      expect(((await decoded.json()) as { payloads: unknown[] }).payloads).toEqual([plain]);
      expect((await post('/other', { payloads: [] })).status).toBe(404);
      expect((await post('/decode', 'not json')).status).toBe(400);
      expect((await post('/decode', 'x'.repeat(9 * 1024 * 1024))).status).toBe(413);
      // a name that resolves here but is not this server's (DNS rebinding)
      const rebound = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${url}/decode`,
          { method: 'POST', headers: { host: 'attacker.example', 'content-type': 'application/json' } },
          (res) => (res.resume(), resolve(res.statusCode ?? 0)),
        );
        req.on('error', reject);
        req.end(JSON.stringify({ payloads: sealed }));
      });
      expect(rebound).toBe(421);
    } finally {
      server.close();
    }
  });
});

describe('the shareDocument step', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
    await t.service.apps.magicLink.put({});
  }, 60_000);
  afterAll(() => t?.stop());

  it('makes one link per document and key, however often it runs, and another for another document', async () => {
    const variables = (await t.service.templates.load(EXAMPLE_IDS.letter)).variables;
    const body = {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations: { inkit_storage: {} },
    };
    const a = await t.service.documents.generate(body, { keyId: null, name: 'test' });
    const b = await t.service.documents.generate(body, { keyId: null, name: 'test' });
    const steps = {
      shareDocument: (documentId: string, shareKey: string) =>
        t.service.documents.share(
          documentId,
          { recipient_email: 'ada@example.com', expire_after_n_views: 1 },
          null,
          shareKey,
        ),
    };
    const first = await steps.shareDocument(a.document_id, 'order-1');
    const again = await steps.shareDocument(a.document_id, 'order-1');
    const other = await steps.shareDocument(b.document_id, 'order-1');
    expect(again.link.id).toBe(first.link.id);
    expect(other.link.id).not.toBe(first.link.id);
    expect(other.link.document_id).toBe(b.document_id);
  }, 60_000);
});
