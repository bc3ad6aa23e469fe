/**
 * Idempotency keys, as Stripe defines them: the first request with a key runs; a later one with
 * the same key and the same body gets the first answer again, for 24 hours; the same key with
 * another body is a 409 `idempotency_key_reused`; after 24 hours the key starts a new request.
 *
 * A key's entry names its work: the render id is derived from the key and the moment the entry
 * was made (renderIdFor), so every run of one entry makes the same document and link, and a key
 * used again after its 24 hours makes a new one. A duplicate that arrives while the first is still
 * running waits for its answer while that request's lease holds (TAKEOVER_MS), then runs the work itself (the same render id:
 * when the first request's process died, a retry is answered within seconds with the same
 * document; when it is only slow, both get the same document). A request that failed for what it
 * asked (a 4xx: nothing was made) lets the key go; one that failed otherwise (the database, the
 * disk) keeps its entry, so its retry takes over the same render and finishes what was begun.
 */
import type { ExpressionBuilder } from 'kysely';
import type { Clock } from './clock';
import type { Schema } from './db/schema';
import { iso } from './clock';
import { deleteInBatches, isUniqueViolation, type Db } from './db';
import { ConflictError, PaperlinkError, UnavailableError, ValidationError } from './errors';
import { freeing, isFree, isHeld, LEASES, taking } from './jobs/lease';
import { sha256 } from './secrets';

export const KEEP_MS = 24 * 60 * 60 * 1000;
const POLL_MS = 25;
/**
 * How long a running request holds its entry (its lease, src/jobs/lease.ts): a duplicate waits that
 * long for its answer before doing the (idempotent) work itself; at once when its process is gone.
 */
export const TAKEOVER_MS = 5_000;

/**
 * The render id an Idempotency-Key's entry names, per API key: every run of the entry makes the same
 * render, document and link; the same key in a new entry (after 24 hours) a new one.
 */
export function renderIdFor(apiKeyId: string, key: string, since: string): string {
  return `rnd_${sha256(`${apiKeyId}\n${key}\n${since}`).slice(0, 26)}`;
}

/** An Idempotency-Key's entry, as the work sees it. */
export interface KeyEntry {
  /** When the entry was made (ISO): with the key, it names the work (renderIdFor). */
  since: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

/** Deeper bodies are refused: no request of this API nests more than a few levels. */
export const MAX_DEPTH = 64;

/** JSON with object keys sorted, so that `{a,b}` and `{b,a}` are the same request. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_DEPTH) {
    throw new ValidationError(`The body nests deeper than ${MAX_DEPTH} levels; no request of this API needs that.`, [
      { field: 'body', message: `nests deeper than ${MAX_DEPTH} levels`, code: 'too_deep' },
    ]);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k], depth + 1)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function checkKey(key: string): void {
  if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new ValidationError('An Idempotency-Key is 1 to 255 visible ASCII characters, e.g. a UUID.', [
      { field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters', code: 'invalid' },
    ]);
  }
}

export class Idempotency {
  /** This process's presence id (src/db/presence.ts), written into the lease of a request it runs. */
  owner: () => number = () => 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /**
   * Runs `work` once per (scope, key) and 24 hours. `scope` keeps callers apart (e.g. the API key's
   * id and the route).
   */
  async run(
    scope: string,
    key: string,
    request: unknown,
    work: (entry: KeyEntry) => Promise<Answer>,
  ): Promise<Answer & { replayed: boolean }> {
    checkKey(key);
    const hash = sha256(canonicalJson(request));
    for (;;) {
      const now = this.clock.now();
      let since = iso(now);
      // the running request holds its entry under a lease (src/jobs/lease.ts) for TAKEOVER_MS
      const until = new Date(now.getTime() + TAKEOVER_MS);
      let epoch = 1;
      try {
        await this.db
          .insertInto('idempotency')
          .values({
            scope,
            key,
            request_hash: hash,
            state: 'running',
            status: null,
            body: null,
            created_at: since,
            expires_at: iso(new Date(now.getTime() + KEEP_MS)),
            claimed_by: this.owner(),
            claimed_until: iso(until),
            claimed_epoch: epoch,
          })
          .execute();
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        const row = await this.db
          .selectFrom('idempotency')
          .selectAll()
          .where('scope', '=', scope)
          .where('key', '=', key)
          .executeTakeFirst();
        if (!row) continue; // the first request failed and let the key go: try again
        if (row.expires_at <= iso(now)) {
          // its 24 hours are over: the key starts a new request
          await this.db
            .deleteFrom('idempotency')
            .where('scope', '=', scope)
            .where('key', '=', key)
            .where('created_at', '=', row.created_at)
            .execute();
          continue;
        }
        if (row.request_hash !== hash) {
          throw new ConflictError(
            'idempotency_key_reused',
            'This Idempotency-Key was already used with a different request body. Use a new key for a new request.',
          );
        }
        if (row.state === 'done')
          return { status: row.status ?? 200, body: JSON.parse(row.body ?? 'null'), replayed: true };
        // running elsewhere: wait for its answer while its lease holds; once it is free (it ran out,
        // its process is gone, or the request failed) take it and run the same work here
        const taken = await this.db
          .updateTable('idempotency')
          .set({ ...taking(LEASES.idempotent_request, this.owner(), until), state: 'running' })
          .where('scope', '=', scope)
          .where('key', '=', key)
          .where('created_at', '=', row.created_at)
          .where('state', '!=', 'done')
          .where(isFree(LEASES.idempotent_request, now))
          .returning('claimed_epoch')
          .executeTakeFirst();
        if (!taken) {
          await this.sleep(POLL_MS);
          continue;
        }
        since = row.created_at;
        epoch = taken.claimed_epoch;
      }
      // this run's entry; `held`: while its lease is the one this run took (not taken over since)
      const entry = (e: ExpressionBuilder<Schema, 'idempotency'>) =>
        e.and([e('scope', '=', scope), e('key', '=', key), e('created_at', '=', since)]);
      const held = (e: ExpressionBuilder<Schema, 'idempotency'>) =>
        e.and([entry(e), isHeld(LEASES.idempotent_request, epoch)]);
      let answer: Answer;
      try {
        answer = await work({ since });
      } catch (err) {
        // a request refused for what it asked made nothing: the key is free for the fixed request
        // (the same request would be refused again); any other failure keeps the entry, and its
        // retry takes over the same work at once. Either only while this run holds the entry: one
        // that was taken over leaves it to the run that took it
        const refused = err instanceof PaperlinkError && !(err instanceof UnavailableError);
        if (refused) await this.db.deleteFrom('idempotency').where(held).execute();
        else
          await this.db
            .updateTable('idempotency')
            .set({ ...freeing(LEASES.idempotent_request), state: 'failed' })
            .where(held)
            .where('state', '=', 'running')
            .execute()
            .catch(() => undefined);
        throw err;
      }
      await this.db
        .updateTable('idempotency')
        .set({
          state: 'done',
          status: answer.status,
          body: JSON.stringify(answer.body),
          ...freeing(LEASES.idempotent_request),
        })
        // every run of an entry makes the same render, so the first answer to finish is the one kept,
        // whether or not this run's lease was taken over meanwhile
        .where(entry)
        .where('state', '!=', 'done')
        .execute();
      return { ...answer, replayed: false };
    }
  }

  /** Drops answers older than 24 hours. */
  async purge(): Promise<number> {
    const now = iso(this.clock.now());
    return deleteInBatches(
      async (limit) =>
        (
          await this.db
            .deleteFrom('idempotency')
            .where((eb) =>
              eb(
                eb.refTuple('scope', 'key'),
                'in',
                eb
                  .selectFrom('idempotency')
                  .select(['scope', 'key'])
                  .where('expires_at', '<=', now)
                  .limit(limit)
                  .$asTuple('scope', 'key'),
              ),
            )
            .executeTakeFirst()
        ).numDeletedRows,
    );
  }
}
