/**
 * Postcard intake: a checked request is committed (grouped with the others of the same moment,
 * one fsync for all) and only then answered 202; the postcard is rendered afterwards by the
 * postcard flow, stored as a document, and marked `rendered` or `failed` with a reason.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import { PreparedQuery, type Db } from '../db';
import type { PostcardRow } from '../db/schema';
import type { Documents } from '../documents';
import type { Events } from '../events';
import {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  PaperlinkError,
  UnavailableError,
  ValidationError,
} from '../errors';
import { newId } from '../ids';
import { KEEP_MS } from '../idempotency';
import type { Keys } from '../keys';
import { toPage, type Page, type PageQuery } from '../pagination';
import type { TemplateStore } from '../templates/store';
import { missingVariables, type RenderWarning } from '../templates';
import type { Renderer } from '../templates/pool';
import { shownWarning, type PrintWarning, type ProofOptions } from '../templates/print';
import type { PresetName } from '../templates/presets';
import type { Handoffs } from './handoff';
import type { PartnerName } from './driver';
import type { EventType } from '../events/types';
import { checkPostcard, mailingAddress, mergeValues, type PostcardRequest } from './rules';
import { POLICIES } from '../flows/policies';

/** received → rendered → (a live postcard with a mail partner) submitted → mailed → returned; failed from any before mailed. */
export type PostcardStatus = 'received' | 'rendered' | 'submitted' | 'mailed' | 'returned' | 'failed';
export const STATUSES: PostcardStatus[] = ['received', 'rendered', 'submitted', 'mailed', 'returned', 'failed'];

/** Renders of one postcard that may fail for a passing reason before it is marked failed. */
export const RENDER_ATTEMPTS = POLICIES.postcard_render.attempts;

/**
 * Whether a render failed for a reason a later try can change: its time limit (CPU contention
 * alone can trip it), a program or service briefly missing. Everything else (a template that
 * cannot render these values) fails the same way every time.
 */
function passing(err: PaperlinkError): boolean {
  if (err instanceof UnavailableError || err.code === 'format_unavailable') return true;
  return err.code === 'render_limit_exceeded' && err.details.some((d) => d.field === 'render_time_ms');
}

export interface PostcardWarning {
  code: string;
  field: string;
  message: string;
  box?: PrintWarning['box'];
}

export interface PostcardInfo {
  id: string;
  object: 'postcard';
  status: PostcardStatus;
  template_id: string;
  /** The template version it is rendered from: the current one when it was received. */
  template_version: number | null;
  contact: PostcardRequest['contact'];
  address: PostcardRequest['address'];
  /** The address as a mail partner receives it (rules.ts mailingAddress): capitals, the postal code in its country's shape. */
  mailing_address: PostcardRequest['address'];
  custom_data: Record<string, string>;
  document_id: string | null;
  failure_reason: string | null;
  /** Made with a test token: rendered and proofed, never handed on to a mail partner. */
  test: boolean;
  /** The postcard size its PDF was checked for and marked with (docs/postcards.md); null when its template names none. */
  size: PresetName | null;
  /** The mail partner it was handed to (a live postcard of a sized template, with a partner set up), and the partner's id of it. */
  partner: string | null;
  partner_id: string | null;
  /**
   * What the render and the print check warned about: `text_overflow` (text that does not fit its
   * box) with the variable as `field`; `outside_safe_zone`, `ink_in_address_area`, `low_resolution`
   * with the side as `field` and where it is as `box` (points from the page's top left).
   */
  warnings: PostcardWarning[];
  created_at: string;
  updated_at: string;
}

function info(row: PostcardRow): PostcardInfo {
  return {
    id: row.id,
    object: 'postcard',
    status: row.status as PostcardStatus,
    template_id: row.template_id,
    template_version: row.template_version,
    contact: JSON.parse(row.contact) as PostcardInfo['contact'],
    address: JSON.parse(row.address) as PostcardInfo['address'],
    mailing_address: mailingAddress(JSON.parse(row.address) as PostcardInfo['address']),
    custom_data: JSON.parse(row.custom) as PostcardInfo['custom_data'],
    document_id: row.document_id,
    failure_reason: row.failure_reason,
    test: Boolean(row.test),
    size: row.size as PresetName | null,
    partner: row.partner,
    partner_id: row.partner_id,
    warnings: JSON.parse(row.warnings) as PostcardInfo['warnings'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** What a render made of a postcard besides its PDF, kept with a spooled PDF (src/documents/spool.ts). */
interface Printed {
  templateName: string;
  warnings: PostcardWarning[];
  size: PresetName | null;
}

export class Postcards {
  /** Called with the id of each newly received postcard (the engine starts its flow). */
  onReceived: (id: string) => void = () => undefined;
  /** The hand-off of live postcards to the mail partner (service.ts sets it). */
  handoffs?: Handoffs;
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly keys: Keys,
    private readonly templates: TemplateStore,
    private readonly documents: Documents,
    private readonly events: Events,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>,
    private readonly renderer: Renderer,
  ) {
    // the intake's one write, compiled once (see PreparedQuery)
    this.insert = new PreparedQuery<PostcardRow, never>(db, (d, arg) =>
      d.insertInto('postcards').values({
        id: arg('id'),
        status: arg('status'),
        template_id: arg('template_id'),
        template_version: arg('template_version'),
        contact: arg('contact'),
        address: arg('address'),
        custom: arg('custom'),
        token_id: arg('token_id'),
        idempotency_key: arg('idempotency_key'),
        document_id: arg('document_id'),
        failure_reason: arg('failure_reason'),
        warnings: arg('warnings'),
        claimed_by: arg('claimed_by'),
        claimed_until: arg('claimed_until'),
        claimed_epoch: arg('claimed_epoch'),
        wake_at: arg('wake_at'),
        render_attempts: arg('render_attempts'),
        test: arg('test'),
        size: arg('size'),
        partner: arg('partner'),
        partner_id: arg('partner_id'),
        created_at: arg('created_at'),
        updated_at: arg('updated_at'),
      }),
    );
  }

  private readonly insert: PreparedQuery<PostcardRow, never>;

  /**
   * Checks and stores a postcard request. Resolves only once the record is durable. With an
   * idempotency key, the same request stored under it (for this token) in the last 24 hours gives
   * its id again; another request under it is `409 idempotency_key_reused`; after 24 hours the key
   * starts a new postcard.
   */
  async accept(
    body: unknown,
    idempotencyKey?: string,
    /** What the route's schema refused (the HTTP intake), thrown once the token is known good. */
    refused?: Error,
  ): Promise<{ id: string; status: PostcardStatus; replayed: boolean }> {
    const token = (body as Record<string, unknown> | null)?.api_token;
    // the credential first: without it, say nothing about the rest
    const key = await this.keys.authenticate('postcard', token);
    if (!key) throw new AuthenticationError('A valid postcard token is required in the api_token field of the body.');
    if (refused) throw refused;
    const checked = checkPostcard(body);
    if (!checked.ok)
      throw new ValidationError(
        'The postcard request is not valid; see details for each field to fix.',
        checked.details,
      );
    const req = checked.value;
    // the version current now is the one it is rendered from, however long its render waits
    const current = await this.templates.resolve(req.template_id).catch((err: unknown) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    });
    if (!current) {
      throw new ValidationError('The postcard request is not valid; see details.', [
        {
          field: 'template_id',
          message: `no template has the id ${JSON.stringify(req.template_id)}`,
          code: 'not_found',
        },
      ]);
    }
    // refused now rather than accepted and failed later: the fields fill the template's variables
    const missing = missingVariables(current.template, mergeValues(req));
    if (missing.length) {
      throw new ValidationError(
        `The template ${req.template_id} needs a value for ${missing.join(', ')}. Send each as a field of the request, or make it optional in the template with {{name | default: ""}}.`,
        missing.map((v) => ({ field: v, message: 'is required by the template', code: 'required' })),
        'missing_variables',
      );
    }
    if (idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw new ValidationError('An Idempotency-Key is 1 to 255 characters.', [
        { field: 'Idempotency-Key', message: 'must be 1 to 255 characters', code: 'invalid' },
      ]);
    }
    const result = await this.inTransaction(async (trx) => {
      const now = iso(this.clock.now());
      const row: PostcardRow = {
        id: newId('pc', this.clock.now()),
        status: 'received',
        template_id: req.template_id,
        template_version: current.version,
        contact: JSON.stringify(req.contact),
        address: JSON.stringify(req.address),
        custom: JSON.stringify(req.custom),
        token_id: key.id,
        idempotency_key: idempotencyKey ?? null,
        claimed_by: null,
        claimed_until: null,
        claimed_epoch: 0,
        // due at once: a runner (of this process, told by onReceived, or of any other) renders it
        wake_at: now,
        document_id: null,
        failure_reason: null,
        warnings: '[]',
        render_attempts: 0,
        test: key.test ? 1 : 0,
        size: null,
        partner: null,
        partner_id: null,
        created_at: now,
        updated_at: now,
      };
      if (idempotencyKey === undefined) {
        await this.insert.execute(trx, row);
        await this.events.emit(trx, 'postcard.received', row.id, () => ({ object: info(row) }));
        return { id: row.id, status: 'received' as PostcardStatus, replayed: false };
      }
      // a key is remembered for 24 hours, as generate's: used again later, it starts a new postcard
      const earlier = () =>
        trx
          .selectFrom('postcards')
          .select(['id', 'status', 'created_at', 'template_id', 'contact', 'address', 'custom'])
          .where('token_id', '=', key.id)
          .where('idempotency_key', '=', idempotencyKey)
          .executeTakeFirst();
      const replay = (first: NonNullable<Awaited<ReturnType<typeof earlier>>>) => {
        // the same request is the same stored fields; another body under the key is refused
        const same = ['template_id', 'contact', 'address', 'custom'].every(
          (f) => first[f as keyof typeof first] === row[f as keyof PostcardRow],
        );
        if (!same)
          throw new ConflictError(
            'idempotency_key_reused',
            'This Idempotency-Key was already used with a different postcard request. Use a new key for a new request.',
          );
        return { id: first.id, status: first.status as PostcardStatus, replayed: true };
      };
      const found = await earlier();
      if (found && Date.parse(found.created_at) > this.clock.now().getTime() - KEEP_MS) return replay(found);
      // its 24 hours are over: the old postcard keeps its record, the key goes to the new one
      if (found) await trx.updateTable('postcards').set({ idempotency_key: null }).where('id', '=', found.id).execute();
      const inserted = await trx
        .insertInto('postcards')
        .values(row)
        .onConflict((c) => c.columns(['token_id', 'idempotency_key']).doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted) {
        await this.events.emit(trx, 'postcard.received', row.id, () => ({ object: info(row) }));
        return { id: row.id, status: 'received' as PostcardStatus, replayed: false };
      }
      // another request with the key stored its postcard at the same moment
      return replay((await earlier())!);
    });
    if (!result.replayed) this.onReceived(result.id);
    return result;
  }

  async get(id: string): Promise<PostcardInfo> {
    const row = await this.db.selectFrom('postcards').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('postcard', id);
    return info(row);
  }

  async list(page: PageQuery, status?: string): Promise<Page<PostcardInfo>> {
    if (status !== undefined && !(STATUSES as string[]).includes(status)) {
      throw new ValidationError('Unknown status filter.', [
        { field: 'status', message: `must be one of ${STATUSES.join(', ')}`, code: 'invalid' },
      ]);
    }
    let q = this.db
      .selectFrom('postcards')
      .selectAll()
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('id', '<', page.startingAfter);
    if (status) q = q.where('status', '=', status);
    return toPage(await q.execute(), page.limit, info);
  }

  /**
   * Renders a received postcard and stores it as a document; marks it `rendered`, or `failed` with
   * the reason when the request cannot make a postcard (unknown template, unfilled merge fields).
   * Safe to run twice: only a `received` postcard is rendered, and only one run can mark it.
   */
  async render(id: string): Promise<PostcardStatus> {
    const row = await this.db.selectFrom('postcards').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('postcard', id);
    if (row.status !== 'received') return row.status as PostcardStatus;
    const p = info(row);
    const fail = async (reason: string) => {
      await this.settle(id, { status: 'failed', failure_reason: reason.slice(0, 1000) });
      return 'failed' as const;
    };
    let pdf: Uint8Array;
    let done: Printed;
    // the render id follows from the postcard id, so a render that runs twice stores one document;
    // a render whose storing failed left its bytes for this run (src/documents/spool.ts)
    const renderId = `rnd_${id}`;
    const spooled = await this.documents.spooled<Printed>(renderId);
    if (spooled) {
      pdf = spooled.pdf;
      done = spooled.meta;
    } else
      try {
        const template = await this.templates.load(p.template_id, p.template_version ?? undefined);
        const drawn: RenderWarning[] = [];
        pdf = await this.renderer.render(
          template,
          mergeValues({ contact: p.contact, address: p.address, custom: p.custom_data }),
          { now: this.clock.now(), warnings: drawn },
        );
        const warnings: PostcardWarning[] = drawn.map((w) => ({
          code: w.code,
          field: w.variable ?? 'template',
          message: w.message,
        }));
        let size: PresetName | null = null;
        // a template made for a postcard size: checked as a printer would, and its boxes marked
        if (template.postcard) {
          const printed = await this.renderer.printReady(pdf, template.postcard);
          pdf = printed.pdf;
          size = printed.size;
          warnings.push(...printed.warnings.map(shownWarning));
        }
        done = { templateName: template.name, warnings, size };
      } catch (err) {
        if (!(err instanceof PaperlinkError)) throw err;
        if (err instanceof NotFoundError)
          return fail(
            `the template ${p.template_id}${p.template_version ? ` (version ${p.template_version})` : ''} no longer exists`,
          );
        const reason = `${err.code}: ${err.message}`;
        if (!passing(err)) return fail(reason);
        // the same render may pass when the machine is less busy: tried again with back-off (the flow,
        // or Temporal's retry policy), and failed only after RENDER_ATTEMPTS
        const tried = await this.db
          .updateTable('postcards')
          .set((e) => ({ render_attempts: e('render_attempts', '+', 1) }))
          .where('id', '=', id)
          .returning('render_attempts')
          .executeTakeFirstOrThrow();
        if (tried.render_attempts >= RENDER_ATTEMPTS)
          return fail(`${reason} (failed ${tried.render_attempts} times; a retry might pass on a less busy server)`);
        throw new Error(`rendering postcard ${id} failed for a passing reason, to be tried again: ${reason}`, {
          cause: err,
        });
      }
    const name = [p.contact.first_name, p.contact.last_name].filter(Boolean).join(' ');
    const docId = await this.documents.store({
      renderId,
      meta: done,
      spooled: spooled !== undefined,
      templateId: p.template_id,
      templateVersion: p.template_version,
      name: `${done.templateName} for ${name}`,
      description: `postcard ${id}`,
      pdf,
      caller: { keyId: row.token_id, name: 'postcard intake' },
    });
    // a live postcard made for print goes on to the mail partner, if one is set up
    const partner = !p.test && done.size ? await this.handoffs?.partner() : undefined;
    await this.settle(
      id,
      { status: 'rendered', document_id: docId, warnings: JSON.stringify(done.warnings), size: done.size },
      partner,
    );
    return 'rendered';
  }

  /**
   * A rendered postcard's front and back as a PNG (one side with `side`), with the trim, the safe
   * zone and the address area drawn over it with `guides`: what a print shop's proof shows.
   */
  async proof(id: string, options: Omit<ProofOptions, 'size'>): Promise<Uint8Array> {
    const p = await this.get(id);
    if (!p.document_id)
      throw new ConflictError(
        'proof_unavailable',
        `The postcard is ${p.status}: a proof is drawn from its rendered PDF.${p.status === 'received' ? ' Ask again once it is rendered (GET /v1/postcards/:id, or the postcard.rendered webhook).' : ''}`,
      );
    if (!p.size)
      throw new ConflictError(
        'proof_unavailable',
        `The postcard's template names no postcard size, so it has no trim, safe zone or address area to proof. Give the template one (<document postcard="4x6">, see docs/postcards.md); its PDF is GET /v1/documents/${p.document_id}/pdf.`,
      );
    const { bytes: pdf } = await this.documents.pdf(p.document_id);
    return this.renderer.proof(pdf, { ...options, size: p.size });
  }

  /** Moves a received postcard to its end state and tells subscribers, in one transaction; hands a live one to the mail partner. */
  private async settle(
    id: string,
    set: {
      status: PostcardStatus;
      failure_reason?: string;
      document_id?: string;
      warnings?: string;
      size?: string | null;
    },
    partner?: PartnerName,
  ): Promise<void> {
    await this.inTransaction(async (trx) => {
      // settled: nothing left to wake it for, and Temporal's mark (src/engine/marks.ts) goes
      const moved = await this.move(trx, id, ['received'], { ...set, wake_at: null });
      if (moved && partner) await this.handoffs!.enqueue(trx, id, partner);
    });
    if (partner) this.handoffs!.onDue();
  }

  /**
   * Moves a postcard from one of `from` to `set.status` in `trx`, and tells subscribers
   * (`postcard.<status>`); false when it was not in one of `from` (another write moved it first).
   */
  async move(
    trx: Db,
    id: string,
    from: readonly string[],
    set: Partial<Omit<PostcardRow, 'id'>> & { status: PostcardStatus },
  ): Promise<boolean> {
    const row = await trx
      .updateTable('postcards')
      .set({ ...set, updated_at: iso(this.clock.now()) })
      .where('id', '=', id)
      .where('status', 'in', from)
      .returningAll()
      .executeTakeFirst();
    if (row) await this.events.emit(trx, `postcard.${set.status}` as EventType, id, () => ({ object: info(row) }));
    return Boolean(row);
  }
}
