/**
 * A live postcard's hand-off to the mail partner, a job on the process's runner (src/jobs/runner.ts)
 * like every other background effect: a row per postcard in `postcard_handoffs`, written in the
 * transaction that marks the postcard rendered, due at once; any process that runs background work
 * takes it under a lease (src/jobs/lease.ts), submits the postcard (src/postcards/partners.ts) and
 * writes the outcome fenced by the lease's epoch. A failure that retrying may cure waits by
 * POLICIES.postcard_handoff; a refusal fails the postcard at once. The postcard id is how a
 * driver finds the mail piece an earlier attempt made (Lob's idempotency key; PostGrid's metadata,
 * searched before making one): an attempt whose answer was lost (a crash, a timeout, a failed
 * write) is tried again and gets the same mail piece, so a postcard is mailed once.
 *
 * The partner's webhook events (POST /partners/:partner/events) move the postcard on: submitted,
 * mailed, returned, each once, forward only, each with its event in the same transaction.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import type { PostcardRow } from '../db/schema';
import type { Documents } from '../documents';
import { NotFoundError } from '../errors';
import { givesUp, POLICIES, waitMs } from '../flows/policies';
import { freeing, isFree, isHeld, LEASES, taking, type Held } from '../jobs/lease';
import { backlogOf, type Backlog, type JobKind, type Runner } from '../jobs/runner';
import type { PresetName } from '../templates/presets';
import { mailingAddress, type PostcardRequest } from './rules';
import { PartnerRefused, type Headers, type MailPiece, type PartnerName, type PartnerStatus } from './driver';
import type { MailPartnerApps } from './partners';

const LEASE = LEASES.postcard_handoff;
const POLICY = POLICIES.postcard_handoff;
/** How long one attempt holds its lease: its submit's deadline and a margin for reading the PDF and writing the outcome. */
const ATTEMPT_MS = 2 * 60_000;
/** The deadline of a submit (the PDF read, every call to the partner): within the lease, so a live attempt is never taken over. */
const SUBMIT_MS = 90_000;
/** The order of a partner's statuses: an event moves a postcard forward only. */
const ORDER: PartnerStatus[] = ['submitted', 'mailed', 'returned'];

export class Handoffs {
  /** This process's presence id, written into each lease (a new one after the presence was lost). */
  owner = 0;
  /** Called after a hand-off was made due (the runner looks at once). */
  onDue: () => void = () => undefined;
  /** The process's runner, once it runs the hand-offs (service.ts): drain() runs what is due. */
  runner?: Runner;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>,
    private readonly documents: Documents,
    readonly apps: MailPartnerApps,
    /** Moves a postcard's status (and tells subscribers) in a transaction: the postcards' own writer. */
    private readonly move: (
      trx: Db,
      id: string,
      from: readonly string[],
      set: { status: PartnerStatus | 'failed'; failure_reason?: string | null; partner_id?: string },
    ) => Promise<boolean>,
  ) {}

  /** The partner a postcard rendered now is handed to, if one is set up (read before the render's transaction). */
  async partner(): Promise<PartnerName | undefined> {
    return (await this.apps.driver())?.name;
  }

  /** Makes a rendered live postcard's hand-off due now, in the transaction that marked it rendered. */
  async enqueue(trx: Db, id: string, partner: PartnerName): Promise<void> {
    const now = iso(this.clock.now());
    await trx
      .insertInto('postcard_handoffs')
      .values({ id, partner, status: 'pending', next_attempt_at: now, created_at: now, updated_at: now })
      .onConflict((c) => c.column('id').doNothing())
      .execute();
    await trx.updateTable('postcards').set({ partner }).where('id', '=', id).execute();
  }

  /** The job as the runner runs it. */
  kind(): JobKind<Held> {
    return {
      name: 'postcard_handoff',
      concurrency: 4,
      // the partner's API does the work, not this process
      whileBusy: 4,
      take: (now, n, running) => this.take(now, n, running),
      run: (held) => this.attempt(held),
      next: async () => {
        const row = await this.db
          .selectFrom('postcard_handoffs')
          .select('next_attempt_at')
          .where('status', '=', 'pending')
          .orderBy('next_attempt_at')
          .limit(1)
          .executeTakeFirst();
        return row?.next_attempt_at ? new Date(row.next_attempt_at) : undefined;
      },
      backlog: (now) => this.backlog(now),
    };
  }

  private async backlog(now: Date): Promise<Backlog> {
    const row = await this.db
      .selectFrom('postcard_handoffs')
      .select((e) => [e.fn.countAll<number | string>().as('n'), e.fn.min('next_attempt_at').as('oldest')])
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', iso(now))
      .where(isFree(LEASE, now))
      .executeTakeFirst();
    return backlogOf(row);
  }

  private async take(now: Date, limit: number, running: ReadonlySet<string>): Promise<Held[]> {
    if (limit <= 0) return [];
    const due = (
      await this.db
        .selectFrom('postcard_handoffs')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', iso(now))
        .where(isFree(LEASE, now))
        .$if(running.size > 0, (q) => q.where('id', 'not in', [...running]))
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute()
    ).map((r) => r.id);
    if (!due.length) return [];
    // taken only while still free: another process taking the same rows at once gets none of them.
    // Due again when the lease runs out: what a holder that died leaves is taken up then, and
    // meanwhile the runner does not see it as due (it would look again and again)
    const until = new Date(now.getTime() + ATTEMPT_MS);
    return this.db
      .updateTable('postcard_handoffs')
      .set({ ...taking(LEASE, this.owner, until), next_attempt_at: iso(until) })
      .where('id', 'in', due)
      .where('status', '=', 'pending')
      .where(isFree(LEASE, now))
      .returning(['id', 'claimed_epoch as epoch'])
      .execute();
  }

  /** One attempt: submit, then record the partner's id; or wait and try again; or give up. */
  private async attempt(held: Held): Promise<void> {
    const id = held.id;
    const postcard = await this.db.selectFrom('postcards').selectAll().where('id', '=', id).executeTakeFirst();
    const handoff = await this.db.selectFrom('postcard_handoffs').selectAll().where('id', '=', id).executeTakeFirst();
    if (!postcard || !handoff) return;
    const now = this.clock.now();
    try {
      const driver = await this.apps.driver();
      if (!driver)
        throw new Error(
          'no mail partner is set up any more (PUT /v1/apps/mail_partner, or Settings in the web app): set one up and the hand-off is tried again',
        );
      if (driver.name !== handoff.partner)
        throw new PartnerRefused(
          `the mail partner changed from ${handoff.partner} to ${driver.name} after the postcard was rendered`,
        );
      // one deadline for reading the PDF and every call to the partner
      const deadline = AbortSignal.timeout(SUBMIT_MS);
      const partnerId = await driver.submit(await this.piece(postcard), deadline);
      await this.inTransaction(async (trx) => {
        const done = await trx
          .updateTable('postcard_handoffs')
          .set({
            status: 'done',
            next_attempt_at: null,
            last_error: null,
            updated_at: iso(this.clock.now()),
            ...freeing(LEASE),
          })
          .where('id', '=', id)
          .where(isHeld(LEASE, held.epoch))
          .where('status', '=', 'pending')
          .executeTakeFirst();
        if (!Number(done.numUpdatedRows)) return;
        // an event of the partner's may have moved it on already (its answer to us was lost meanwhile)
        await this.move(trx, id, ['rendered'], { status: 'submitted', partner_id: partnerId });
        await trx.updateTable('postcards').set({ partner_id: partnerId }).where('id', '=', id).execute();
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const attempts = handoff.attempts + 1;
      const first = handoff.first_attempt_at ?? iso(now);
      const final = err instanceof PartnerRefused || givesUp(POLICY, attempts, now.getTime() - Date.parse(first));
      await this.inTransaction(async (trx) => {
        const wrote = await trx
          .updateTable('postcard_handoffs')
          .set({
            status: final ? 'failed' : 'pending',
            attempts,
            first_attempt_at: first,
            last_error: message.slice(0, 1000),
            next_attempt_at: final ? null : iso(new Date(now.getTime() + waitMs(POLICY, attempts))),
            updated_at: iso(now),
            ...freeing(LEASE),
          })
          .where('id', '=', id)
          .where(isHeld(LEASE, held.epoch))
          .where('status', '=', 'pending')
          .executeTakeFirst();
        if (final && Number(wrote.numUpdatedRows))
          await this.move(trx, id, ['rendered'], {
            status: 'failed',
            failure_reason: `handoff_failed: ${message}`.slice(0, 1000),
          });
      });
      if (!final) throw err;
    }
  }

  /** The postcard as the partner receives it: its print-ready PDF, its address as data. */
  private async piece(p: PostcardRow): Promise<MailPiece> {
    if (!p.document_id || !p.size) throw new PartnerRefused('the postcard has no print-ready PDF');
    const contact = JSON.parse(p.contact) as Record<string, string | undefined>;
    const address = mailingAddress(JSON.parse(p.address) as PostcardRequest['address']);
    return {
      id: p.id,
      size: p.size as PresetName,
      pdf: (await this.documents.pdf(p.document_id)).bytes,
      to: {
        first_name: contact.first_name || undefined,
        last_name: contact.last_name || undefined,
        company: contact.company || undefined,
        address_line_1: address.address_line_1,
        address_line_2: address.address_line_2 || undefined,
        address_city: address.address_city,
        address_state: address.address_state,
        address_zip: address.address_zip,
        address_country: address.address_country,
      },
    };
  }

  /**
   * A partner's webhook event, its signature checked by the partner's driver: moves the postcard
   * it names forward (each status once), or nothing for an event of a postcard not ours or one
   * that moved on already. Answered 200 either way, so the partner stops sending it.
   */
  async event(
    partner: string,
    headers: Headers,
    body: Buffer,
  ): Promise<{ received: true; moved: PartnerStatus | null }> {
    const driver = await this.apps.driver();
    if (!driver || driver.name !== partner) throw new NotFoundError('mail partner', partner);
    const event = driver.event(headers, body, this.clock.now());
    if (!event) return { received: true, moved: null };
    const target = ORDER.indexOf(event.status);
    const moved = await this.inTransaction(async (trx) => {
      const row = await trx
        .selectFrom('postcards')
        .select(['id', 'status', 'failure_reason'])
        .where('partner', '=', partner)
        .where((e) =>
          event.postcardId
            ? e.or([e('partner_id', '=', event.partnerId), e('id', '=', event.postcardId)])
            : e('partner_id', '=', event.partnerId),
        )
        .orderBy('id')
        .executeTakeFirst();
      if (!row) return false;
      // a hand-off we gave up on (its answer lost, then refused or out of time) that the partner
      // mailed after all: what the partner says wins
      const before =
        row.status === 'rendered' || (row.status === 'failed' && row.failure_reason?.startsWith('handoff_failed:'));
      const from = before ? -1 : ORDER.indexOf(row.status as PartnerStatus);
      // received, or failed before the hand-off: nothing a partner says applies
      if ((!before && from < 0) || target <= from) return false;
      // in the order every writer takes them (attempt(): the hand-off, then the postcard), so two never wait on each other
      await trx
        .updateTable('postcard_handoffs')
        .set({ status: 'done', next_attempt_at: null, updated_at: iso(this.clock.now()) })
        .where('id', '=', row.id)
        .where('status', 'in', ['pending', 'failed'])
        .execute();
      await trx
        .updateTable('postcards')
        .set({ partner_id: event.partnerId })
        .where('id', '=', row.id)
        .where('partner_id', 'is', null)
        .execute();
      let any = false;
      for (let i = from + 1; i <= target; i++)
        any =
          (await this.move(trx, row.id, i === 0 ? ['rendered', 'failed'] : [ORDER[i - 1]], {
            status: ORDER[i],
            ...(i === 0 && { failure_reason: null }),
          })) || any;
      return any;
    });
    return { received: true, moved: moved ? event.status : null };
  }

  /** Runs every hand-off due now (and what those make due) to its end: for tests and tools on a fake clock. */
  async drain(): Promise<void> {
    await this.runner?.drain(['postcard_handoff']);
  }
}
