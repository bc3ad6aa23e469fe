/**
 * A stand-in for Lob's print and mail API, for the mail partner tests: Lob is outside our world,
 * so this plays it. Every request is checked against Lob's published schema
 * (test/fixtures/partners/lob-postcards.schema.json, taken from lob/lob-openapi) as Lob would read
 * it, multipart fields in bracket notation (`to[address_line1]`) and files by their names; each
 * side must be a one-page PDF of the size's page (Lob's "4.25 × 6.25 in" and so on). It answers
 * as Lob does, a repeated Idempotency-Key with the postcard it made the first time, and plays
 * Lob's webhook events signed as Lob signs them.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import fs from 'node:fs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { PDFDocument } from 'pdf-lib';
import { root } from './fixtures';

const SCHEMA = JSON.parse(
  fs.readFileSync(path.join(root, 'test/fixtures/partners/lob-postcards.schema.json'), 'utf8'),
) as { components: unknown; idempotencyKey: object };

/** Lob's page for each of its sizes, in points (width, height), bleed included. */
const PAGES: Record<string, [number, number]> = { '4x6': [450, 306], '6x9': [666, 450], '6x11': [810, 450] };

export interface LobPostcard {
  id: string;
  object: 'postcard';
  size: string;
  to: Record<string, string>;
  metadata: Record<string, string>;
  /** The request's fields as Lob read them. */
  fields: Record<string, unknown>;
}

export interface LobStandIn {
  url: string;
  key: string;
  secret: string;
  /** Every postcard made, once per idempotency key. */
  made: LobPostcard[];
  /** Every request, with what was wrong with it (empty: it met the schema). */
  requests: { idempotencyKey?: string; problems: string[] }[];
  /** Makes the next request's postcard, then drops the connection without answering (the answer lost on the way). */
  loseNextAnswer(): void;
  /** Refuses postcards to this name with Lob's 422. */
  refuseName(name: string): void;
  /** A webhook event of Lob's about one of its postcards, signed with the webhook secret: the headers and body to deliver. */
  event(
    type: string,
    postcard: LobPostcard,
    options?: { secret?: string; at?: Date },
  ): { headers: Record<string, string>; body: string };
  close(): Promise<void>;
}

/** Lob's request fields in bracket notation as the object they stand for. */
function unflatten(entries: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    const m = /^([^[]+)\[([^\]]+)\]$/.exec(name);
    if (m) ((out[m[1]] ??= {}) as Record<string, unknown>)[m[2]] = value;
    else out[name] = value;
  }
  return out;
}

export async function startLob(now: () => Date = () => new Date()): Promise<LobStandIn> {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'lob', components: SCHEMA.components });
  const request = ajv.compile({ $ref: 'lob#/components/schemas/postcard_editable' });
  const eventSchema = ajv.compile({ $ref: 'lob#/components/schemas/events' });
  const keySchema = ajv.compile(SCHEMA.idempotencyKey);
  const key = 'test_0123456789abcdef';
  const secret = 'lob-webhook-secret';
  const made: LobPostcard[] = [];
  const byKey = new Map<string, LobPostcard>();
  const requests: LobStandIn['requests'] = [];
  let lose = false;
  const refused = new Set<string>();
  let n = 0;

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const error = (res: http.ServerResponse, status: number, message: string) =>
    answer(res, status, { error: { message, status_code: status } });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        if (req.method !== 'POST' || req.url !== '/v1/postcards') return error(res, 404, 'not found');
        if (req.headers.authorization !== `Basic ${Buffer.from(`${key}:`).toString('base64')}`)
          return error(res, 401, 'Your API key is not valid.');
        const problems: string[] = [];
        const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
        if (idempotencyKey !== undefined && !keySchema(idempotencyKey)) problems.push('Idempotency-Key: too long');
        const form = await new Request('http://lob', {
          method: 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? '' },
          body: Buffer.concat(chunks),
        }).formData();
        const files: Record<string, Uint8Array> = {};
        const pending: [string, FormDataEntryValue][] = [];
        const entries: [string, unknown][] = [];
        form.forEach((value, name) => pending.push([name, value]));
        for (const [name, value] of pending) {
          if (typeof value === 'string') entries.push([name, value]);
          else {
            // a file is read as Lob reads a local file: by its name, and its bytes checked for size
            files[name] = new Uint8Array(await value.arrayBuffer());
            entries.push([name, value.name]);
          }
        }
        const fields = unflatten(entries);
        if (!request(fields))
          problems.push(...(request.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`));
        const size = (fields.size as string | undefined) ?? '4x6';
        for (const side of ['front', 'back']) {
          const bytes = files[side];
          if (!bytes) {
            problems.push(`${side}: not a PDF file`);
            continue;
          }
          const doc = await PDFDocument.load(bytes);
          const page = doc.getPage(0);
          const [w, h] = PAGES[size] ?? [0, 0];
          if (doc.getPageCount() !== 1) problems.push(`${side}: ${doc.getPageCount()} pages`);
          if (Math.abs(page.getWidth() - w) > 1 || Math.abs(page.getHeight() - h) > 1)
            problems.push(`${side}: ${page.getWidth()} × ${page.getHeight()} pt, not the ${size} page`);
        }
        requests.push({ idempotencyKey, problems });
        if (problems.length) return error(res, 422, problems.join('; '));
        const to = fields.to as Record<string, string>;
        if (refused.has(to.name)) return error(res, 422, 'address undeliverable');
        let postcard = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
        if (!postcard) {
          postcard = {
            id: `psc_${(++n).toString(16).padStart(16, '0')}`,
            object: 'postcard',
            size,
            to,
            metadata: (fields.metadata as Record<string, string>) ?? {},
            fields,
          };
          made.push(postcard);
          if (idempotencyKey) byKey.set(idempotencyKey, postcard);
        }
        if (lose) {
          lose = false;
          req.socket.destroy();
          return;
        }
        answer(res, 200, { ...postcard, fields: undefined });
      })().catch((err: unknown) => error(res, 500, String(err)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    secret,
    made,
    requests,
    loseNextAnswer: () => {
      lose = true;
    },
    refuseName: (name) => refused.add(name),
    event(type, postcard, options = {}) {
      const at = options.at ?? now();
      const event = {
        id: `evt_${(++n).toString(16)}`,
        object: 'event',
        reference_id: postcard.id,
        date_created: at.toISOString(),
        event_type: { id: type, enabled_for_test: true, resource: 'postcards', object: 'event_type' },
        body: { id: postcard.id, object: 'postcard', metadata: postcard.metadata },
      };
      if (!eventSchema(event))
        throw new Error(`the stand-in's event breaks Lob's schema: ${ajv.errorsText(eventSchema.errors)}`);
      const body = JSON.stringify(event);
      const timestamp = String(at.getTime());
      const signature = createHmac('sha256', options.secret ?? secret)
        .update(`${timestamp}.${body}`)
        .digest('hex');
      return {
        headers: {
          'content-type': 'application/json',
          'lob-signature': signature,
          'lob-signature-timestamp': timestamp,
        },
        body,
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
