/**
 * Idempotency keys, Stripe style: the first request with a key runs; a later one with the same key
 * and the same body gets the first answer again (for 24 hours); the same key with another body is
 * a 409. A duplicate that arrives while the first is still running waits for its answer, and after
 * TAKEOVER_MS runs the work itself: the work is idempotent by itself (the key names the render, see
 * renderIdFor), so when the first request's process died, a retry is answered within seconds with
 * the same document, and when it is only slow, both get the same document.
 */
import type { Clock } from './clock';
import { iso } from './clock';
import { isUniqueViolation, type Db } from './db';
import { ConflictError, ValidationError } from './errors';
import { sha256 } from './secrets';

export const KEEP_MS = 24 * 60 * 60 * 1000;
/** A `running` entry older than this was left by a process that died; it is removed. */
const ABANDONED_MS = 5 * 60 * 1000;
const POLL_MS = 25;
/** How long a duplicate waits for the first request's answer before doing the (idempotent) work itself. */
export const TAKEOVER_MS = 5_000;

/** The render id an Idempotency-Key names, per API key: the same key, the same render, document and link. */
export function renderIdFor(apiKeyId: string, key: string): string {
  return `rnd_${sha256(`${apiKeyId}\n${key}`).slice(0, 26)}`;
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
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /**
   * Runs `work` once per (scope, key). `scope` keeps callers apart (e.g. the API key's id and the
   * route). Errors are not remembered: a request that failed can be retried with the same key.
   */
  async run(
    scope: string,
    key: string,
    request: unknown,
    work: () => Promise<Answer>,
  ): Promise<Answer & { replayed: boolean }> {
    checkKey(key);
    const hash = sha256(canonicalJson(request));
    const started = this.clock.now().getTime();
    let takeOver = false;
    for (;;) {
      const now = this.clock.now();
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
            created_at: iso(now),
            expires_at: iso(new Date(now.getTime() + KEEP_MS)),
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
        const age = now.getTime() - Date.parse(row.created_at);
        if (row.expires_at <= iso(now) || (row.state === 'running' && age > ABANDONED_MS)) {
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
        if (this.clock.now().getTime() - started < TAKEOVER_MS) {
          await this.sleep(POLL_MS);
          continue;
        }
        takeOver = true;
      }
      let answer: Answer;
      try {
        answer = await work();
      } catch (err) {
        if (!takeOver)
          await this.db.deleteFrom('idempotency').where('scope', '=', scope).where('key', '=', key).execute();
        throw err;
      }
      await this.db
        .updateTable('idempotency')
        .set({ state: 'done', status: answer.status, body: JSON.stringify(answer.body) })
        .where('scope', '=', scope)
        .where('key', '=', key)
        .execute();
      return { ...answer, replayed: false };
    }
  }

  /** Drops answers older than 24 hours. */
  async purge(): Promise<number> {
    const r = await this.db
      .deleteFrom('idempotency')
      .where('expires_at', '<=', iso(this.clock.now()))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
