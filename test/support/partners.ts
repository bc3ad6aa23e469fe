/**
 * Stand-ins for the mail partners' APIs (Lob, PostGrid), for the hand-off tests: the partners are
 * outside our world, so these play them. Every request is checked against the partner's published
 * schema (test/fixtures/partners/*.schema.json) as the partner would read it: multipart fields in
 * bracket notation (`to[address_line1]`), files by their bytes, each PDF page the size's page with
 * its bleed. Each answers as its partner does (Lob: a repeated Idempotency-Key gets the postcard
 * made the first time; PostGrid: a search finds a postcard by what it carries) and plays the
 * partner's webhook events, signed as the partner signs them. Their own answers and events are
 * checked against the same schemas, so a stand-in cannot drift from what the partner sends.
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { PDFDocument } from 'pdf-lib';
import { root } from './fixtures';

export type PartnerName = 'lob' | 'postgrid';

/** A postcard a stand-in made, as the tests read it whichever the partner. */
export interface MadePostcard {
  /** The partner's id of it. */
  id: string;
  /** Ours, from the metadata we sent. */
  ours: string;
  /** Our size name (4x6, …). */
  size: string;
  /** The recipient as the partner took it. */
  to: Party;
  /** Who it is from, when it was sent a return address. */
  from?: Party;
  /** The partner's own record of it (what its events carry). */
  record: Record<string, unknown>;
}

/** Someone's name and address as the tests read them, whichever the partner. */
export interface Party {
  name: string;
  company?: string;
  line1: string;
  line2?: string;
  city: string;
  state: string;
  zip: string;
  country: string;
}

const lobParty = (a: Record<string, string> | undefined): Party | undefined =>
  a && {
    name: a.name,
    company: a.company,
    line1: a.address_line1,
    line2: a.address_line2,
    city: a.address_city,
    state: a.address_state,
    zip: a.address_zip,
    country: a.address_country,
  };

const postgridParty = (a: Record<string, string> | undefined): Party | undefined =>
  a && {
    name: [a.firstName, a.lastName].filter(Boolean).join(' '),
    company: a.companyName,
    line1: a.addressLine1,
    line2: a.addressLine2,
    city: a.city,
    state: a.provinceOrState,
    zip: a.postalOrZip,
    country: a.countryCode,
  };

/** What happened to a postcard, as each partner's events say it. */
export type PartnerHappening = 'mailed' | 'in_transit' | 'returned';

export interface PartnerStandIn {
  name: PartnerName;
  url: string;
  key: string;
  secret: string;
  /** Every postcard made (once per mail piece, however often it was asked for). */
  made: MadePostcard[];
  /** Every request, the id of ours it carried, and what was wrong with it (empty: it met the schema). */
  requests: { key?: string; problems: string[] }[];
  /** Makes the next postcard asked for, then drops the connection without answering (the answer lost on the way). */
  loseNextAnswer(): void;
  /** Refuses postcards to this first name with the partner's 422. */
  refuseName(firstName: string): void;
  /** A webhook event of the partner's about one of its postcards, signed: the headers and body to deliver. */
  event(
    what: PartnerHappening,
    postcard: MadePostcard,
    options?: { secret?: string; at?: Date },
  ): { headers: Record<string, string>; body: string };
  close(): Promise<void>;
}

/** Each partner's page for each of our sizes, in points (width, height), bleed included. */
const PAGES: Record<string, [number, number]> = { '4x6': [450, 306], '6x9': [666, 450], '6x11': [810, 450] };

interface Schema {
  components: unknown;
  [root: string]: unknown;
}
const schemaOf = (name: string) =>
  JSON.parse(
    fs.readFileSync(path.join(root, `test/fixtures/partners/${name}-postcards.schema.json`), 'utf8'),
  ) as Schema;

function validators(name: PartnerName) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const schema = schemaOf(name);
  ajv.addSchema({ $id: name, components: schema.components });
  const of = (ref: string) => ajv.compile({ $ref: `${name}${ref}` });
  const check = (validate: ValidateFunction, value: unknown) =>
    validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
  return { schema, ajv, of, check };
}

/** Bracket-notation fields (`to[name]`) as the object they stand for. */
function unflatten(entries: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    const m = /^([^[]+)\[([^\]]+)\]$/.exec(name);
    if (m) ((out[m[1]] ??= {}) as Record<string, unknown>)[m[2]] = value;
    else out[name] = value;
  }
  return out;
}

/**
 * A multipart body's fields and files; a file stands in the fields as the partner's schema reads
 * it: Lob's by its name (a local file path), PostGrid's by its bytes (`format: byte`, base64).
 */
async function formOf(req: http.IncomingMessage, body: Buffer, file: 'name' | 'bytes') {
  const form = await new Request('http://partner', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type'] ?? '' },
    body: new Uint8Array(body),
  }).formData();
  const files: Record<string, Uint8Array> = {};
  const entries: [string, unknown][] = [];
  const pending: [string, FormDataEntryValue][] = [];
  form.forEach((value, name) => pending.push([name, value]));
  for (const [name, value] of pending) {
    if (typeof value === 'string') entries.push([name, value]);
    else {
      files[name] = new Uint8Array(await value.arrayBuffer());
      entries.push([name, file === 'name' ? value.name : Buffer.from(files[name]).toString('base64')]);
    }
  }
  return { fields: unflatten(entries), files };
}

/** What is wrong with a PDF as a partner's printer takes it: `pages` pages, each the size's page. */
async function pdfProblems(label: string, bytes: Uint8Array | undefined, pages: number, size: string) {
  if (!bytes) return [`${label}: not a PDF file`];
  const doc = await PDFDocument.load(bytes);
  const problems: string[] = [];
  if (doc.getPageCount() !== pages) problems.push(`${label}: ${doc.getPageCount()} pages, not ${pages}`);
  const [w, h] = PAGES[size] ?? [0, 0];
  for (const page of doc.getPages())
    if (Math.abs(page.getWidth() - w) > 1 || Math.abs(page.getHeight() - h) > 1)
      problems.push(`${label}: ${page.getWidth()} × ${page.getHeight()} pt, not the ${size} page`);
  return problems;
}

const sign = (secret: string, timestamp: string, body: string) =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

/** What each partner's API does, on the plumbing startPartner shares. */
interface Behaviour {
  key: string;
  secret: string;
  /** A request, read and checked: answers it, or returns the postcard made (and the answer to give). */
  handle(
    req: http.IncomingMessage,
    body: Buffer,
    reply: (status: number, body: unknown) => void,
  ): Promise<{ key?: string; problems: string[]; made?: MadePostcard; answer?: () => void } | void>;
  event: PartnerStandIn['event'];
}

async function serve(name: PartnerName, b: Behaviour, state: { lose: boolean }) {
  const requests: PartnerStandIn['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      b.handle(req, Buffer.concat(chunks), reply)
        .then((r) => {
          if (!r) return;
          requests.push({ key: r.key, problems: r.problems });
          if (r.made && state.lose) {
            state.lose = false;
            req.socket.destroy();
            return;
          }
          r.answer?.();
        })
        .catch((err: unknown) => reply(500, { error: { message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    name,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function startPartner(name: PartnerName, now: () => Date = () => new Date()): Promise<PartnerStandIn> {
  const made: MadePostcard[] = [];
  const refused = new Set<string>();
  const state = { lose: false };
  const b = (name === 'lob' ? lobBehaviour : postgridBehaviour)(made, refused, now);
  const served = await serve(name, b, state);
  return {
    ...served,
    key: b.key,
    secret: b.secret,
    made,
    loseNextAnswer: () => {
      state.lose = true;
    },
    refuseName: (n) => refused.add(n),
    event: b.event,
  };
}

/**
 * Lob (schema from lob/lob-openapi): POST /v1/postcards, basic auth, the two sides as one-page
 * PDFs `front` and `back`, Idempotency-Key; events signed with Lob-Signature.
 */
function lobBehaviour(made: MadePostcard[], refused: Set<string>, now: () => Date): Behaviour {
  const { schema, ajv, of, check } = validators('lob');
  const request = of('#/components/schemas/postcard_editable');
  const eventSchema = of('#/components/schemas/events');
  const keySchema = ajv.compile(schema.idempotencyKey as object);
  const key = 'test_0123456789abcdef';
  const secret = 'lob-webhook-secret';
  const byKey = new Map<string, MadePostcard>();
  let n = 0;
  const error = (status: number, message: string) => ({ error: { message, status_code: status } });
  return {
    key,
    secret,
    async handle(req, body, reply) {
      if (req.method !== 'POST' || req.url !== '/v1/postcards') return reply(404, error(404, 'not found'));
      if (req.headers.authorization !== `Basic ${Buffer.from(`${key}:`).toString('base64')}`)
        return reply(401, error(401, 'Your API key is not valid.'));
      const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
      const { fields, files } = await formOf(req, body, 'name');
      const size = (fields.size as string | undefined) ?? '4x6';
      const problems = [
        ...(idempotencyKey !== undefined && !keySchema(idempotencyKey) ? ['Idempotency-Key: too long'] : []),
        ...check(request, fields),
        ...(await pdfProblems('front', files.front, 1, size)),
        ...(await pdfProblems('back', files.back, 1, size)),
      ];
      const r = { key: idempotencyKey, problems };
      if (problems.length) return { ...r, answer: () => reply(422, error(422, problems.join('; '))) };
      const to = fields.to as Record<string, string>;
      if (refused.has(to.name.split(' ')[0])) return { ...r, answer: () => reply(422, error(422, 'undeliverable')) };
      let postcard = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
      if (!postcard) {
        const id = `psc_${(++n).toString(16).padStart(16, '0')}`;
        const metadata = (fields.metadata as Record<string, string>) ?? {};
        postcard = {
          id,
          ours: metadata.paperlink_postcard,
          size,
          to: lobParty(to)!,
          from: lobParty(fields.from as Record<string, string> | undefined),
          record: { id, object: 'postcard', metadata },
        };
        made.push(postcard);
        if (idempotencyKey) byKey.set(idempotencyKey, postcard);
      }
      const answer = postcard.record;
      return { ...r, made: postcard, answer: () => reply(200, answer) };
    },
    event(what, postcard, options = {}) {
      const at = options.at ?? now();
      const type = {
        mailed: 'postcard.mailed',
        in_transit: 'postcard.in_transit',
        returned: 'postcard.returned_to_sender',
      }[what];
      const event = {
        id: `evt_${(++n).toString(16)}`,
        object: 'event',
        reference_id: postcard.id,
        date_created: at.toISOString(),
        event_type: { id: type, enabled_for_test: true, resource: 'postcards', object: 'event_type' },
        body: postcard.record,
      };
      const wrong = check(eventSchema, event);
      if (wrong.length) throw new Error(`the stand-in's event breaks Lob's schema: ${wrong.join('; ')}`);
      const body = JSON.stringify(event);
      const timestamp = String(at.getTime());
      return {
        headers: {
          'content-type': 'application/json',
          'lob-signature': sign(options.secret ?? secret, timestamp, body),
          'lob-signature-timestamp': timestamp,
        },
        body,
      };
    },
  };
}

/**
 * PostGrid (schema from postgrid/postgrid-node's openapi.yaml): POST /print-mail/v1/postcards with
 * X-API-Key and the postcard as one two-page `pdf`; GET /print-mail/v1/postcards?search= finds
 * postcards whose record holds the (quoted) string; events signed with PostGrid-Signature.
 */
function postgridBehaviour(made: MadePostcard[], refused: Set<string>, now: () => Date): Behaviour {
  const { schema, ajv, of, check } = validators('postgrid');
  const request = of('#/components/schemas/PostcardCreateWithPDFFile');
  const answerSchema = of('#/components/schemas/Postcard');
  const listSchema = of('#/components/schemas/PostcardList');
  const eventSchema = of('#/components/schemas/Event');
  const params = Object.fromEntries(
    Object.entries(schema.listParams as Record<string, object>).map(([k, v]) => [k, ajv.compile(v)]),
  );
  const key = 'live_sk_0123456789abcdef';
  const secret = 'postgrid-webhook-secret';
  const ours = { '6x4': '4x6', '9x6': '6x9', '11x6': '6x11' } as Record<string, string>;
  let n = 0;
  const error = (type: string, message: string) => ({ object: 'error', error: { type, message } });
  /** Our answer checked against PostGrid's schema before it is given. */
  const checked = (validate: ValidateFunction, value: unknown) => {
    const wrong = check(validate, value);
    if (wrong.length) throw new Error(`the stand-in's answer breaks PostGrid's schema: ${wrong.join('; ')}`);
    return value;
  };
  return {
    key,
    secret,
    async handle(req, body, reply) {
      const url = new URL(req.url ?? '/', 'http://postgrid');
      if (url.pathname !== '/print-mail/v1/postcards') return reply(404, error('not_found_error', 'not found'));
      if (req.headers['x-api-key'] !== key) return reply(401, error('unauthorized_error', 'Invalid API key.'));
      if (req.method === 'GET') {
        const problems: string[] = [];
        for (const [name, value] of url.searchParams) {
          const v = name === 'search' ? value : Number(value);
          if (!params[name]) problems.push(`?${name}: not a parameter`);
          else if (!params[name](v)) problems.push(`?${name}: ${value}`);
        }
        const search = url.searchParams.get('search') ?? '';
        // quoted, PostGrid finds the string as it is; unquoted, it matches more loosely (its docs)
        if (!/^".+"$/.test(search)) problems.push(`?search: ${search} is not a quoted string`);
        const needle = search.slice(1, -1);
        const data = made.filter((p) => JSON.stringify(p.record).includes(needle)).map((p) => p.record);
        const list = { object: 'list', totalCount: data.length, skip: 0, limit: 10, data };
        return { key: needle, problems, answer: () => reply(200, checked(listSchema, list)) };
      }
      if (req.method !== 'POST') return reply(404, error('not_found_error', 'not found'));
      const { fields, files } = await formOf(req, body, 'bytes');
      const size = ours[fields.size as string] ?? '';
      const problems = [...check(request, fields), ...(await pdfProblems('pdf', files.pdf, 2, size))];
      const metadata = (fields.metadata as Record<string, string>) ?? {};
      const r = { key: metadata.paperlink_postcard, problems };
      if (problems.length) return { ...r, answer: () => reply(400, error('validation_error', problems.join('; '))) };
      const to = fields.to as Record<string, string>;
      if (refused.has(to.firstName))
        return { ...r, answer: () => reply(422, error('address_error', 'The address is undeliverable.')) };
      // PostGrid takes no idempotency key here: every request makes a postcard
      const id = `postcard_${(++n).toString(16).padStart(12, '0')}`;
      const at = now().toISOString();
      const contact = (c: Record<string, string>, i: number) => ({
        ...c,
        id: `contact_${n.toString(16)}x${i}`,
        object: 'contact',
        live: true,
        addressStatus: 'verified',
        createdAt: at,
        updatedAt: at,
      });
      const from = fields.from as Record<string, string> | undefined;
      const record = {
        id,
        object: 'postcard',
        status: 'ready',
        live: true,
        to: contact(to, 0),
        ...(from && { from: contact(from, 1) }),
        size: fields.size,
        description: fields.description,
        metadata,
        mailingClass: 'first_class',
        sendDate: at,
        createdAt: at,
        updatedAt: at,
      };
      const postcard: MadePostcard = {
        id,
        ours: metadata.paperlink_postcard,
        size,
        to: postgridParty(to)!,
        from: postgridParty(from),
        record,
      };
      made.push(postcard);
      return { ...r, made: postcard, answer: () => reply(201, checked(answerSchema, record)) };
    },
    event(what, postcard, options = {}) {
      const at = options.at ?? now();
      const changed = {
        mailed: { status: 'processed_for_delivery' },
        in_transit: { status: 'processed_for_delivery', imbStatus: 'out_for_delivery' },
        returned: { status: 'completed', imbStatus: 'returned_to_sender' },
      }[what];
      Object.assign(postcard.record, changed, { updatedAt: at.toISOString() });
      const event = {
        id: `event_${(++n).toString(16)}`,
        object: 'event',
        type: 'postcard.updated',
        live: true,
        data: postcard.record,
        updatedFields: changed,
      };
      checked(eventSchema, event);
      const body = JSON.stringify(event);
      const timestamp = String(at.getTime());
      return {
        headers: {
          'content-type': 'application/json',
          'postgrid-signature': `t=${timestamp},v1=${sign(options.secret ?? secret, timestamp, body)}`,
        },
        body,
      };
    },
  };
}
