/**
 * Who may use the web app: the holder of a live API key, or the operator with the password set by
 * `paperlink admin set-password`. A sign-in makes a session; the cookie holds a random token and
 * the database only its SHA-256. A session made with a key ends when the key is revoked.
 */
import { createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import { AuthenticationError, ForbiddenError, RateLimitError, ValidationError } from '../errors';
import type { Keys } from '../keys';
import { randomToken, sha256 } from '../secrets';

const derive = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  length: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;
const PASSWORD_KEY = 'admin:password';
/** The server's key for the sign-in form's token (settings; made on first use, shared by every process). */
const FORM_KEY = 'admin:form_key';
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
export const MIN_PASSWORD = 12;
export const SESSION_MS = 12 * 60 * 60 * 1000;
/** Failed sign-ins allowed per address in FAILURE_WINDOW_MS before answers become 429. */
export const MAX_FAILURES = 10;
const FAILURE_WINDOW_MS = 15 * 60 * 1000;

export interface AdminSession {
  /** The API key signed in with, or null for the operator. */
  keyId: string | null;
  name: string;
  expiresAt: string;
}

async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

async function checkPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt') return false;
  const expected = Buffer.from(hash, 'base64');
  const got = await derive(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(got, expected);
}

export class Operators {
  /** Failed sign-ins by client address (one process; a restart forgets them). */
  private readonly failures = new Map<string, number[]>();
  private formKey?: Promise<Buffer>;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly keys: Keys,
  ) {}

  /** Sets (or replaces) the operator password; every operator session ends. */
  async setPassword(password: string): Promise<void> {
    if (password.length < MIN_PASSWORD || password.length > 1024) {
      throw new ValidationError(`The operator password needs ${MIN_PASSWORD} to 1024 characters.`, [
        { field: 'password', message: `must be ${MIN_PASSWORD} to 1024 characters`, code: 'length' },
      ]);
    }
    const value = await hashPassword(password);
    await this.db
      .insertInto('settings')
      .values({ key: PASSWORD_KEY, value })
      .onConflict((c) => c.column('key').doUpdateSet({ value }))
      .execute();
    await this.db.deleteFrom('admin_sessions').where('key_id', 'is', null).execute();
  }

  async hasPassword(): Promise<boolean> {
    return Boolean(
      await this.db.selectFrom('settings').select('key').where('key', '=', PASSWORD_KEY).executeTakeFirst(),
    );
  }

  /**
   * Signs in with an API key (`plk_…`) or the operator password and returns the session token
   * for the cookie. Wrong secrets are counted per client address; after MAX_FAILURES in 15 minutes
   * the answer is a RateLimitError until the oldest failure is 15 minutes old.
   */
  async signIn(secret: string, client: string): Promise<{ token: string; session: AdminSession }> {
    const now = this.clock.now().getTime();
    const recent = (this.failures.get(client) ?? []).filter((t) => now - t < FAILURE_WINDOW_MS);
    if (recent.length >= MAX_FAILURES) {
      throw new RateLimitError(
        'Too many failed sign-ins from this address. Wait a few minutes, then try again.',
        Math.ceil((recent[0] + FAILURE_WINDOW_MS - now) / 1000),
      );
    }
    let who: { keyId: string | null; name: string } | undefined;
    if (secret.startsWith('plk_')) {
      const key = await this.keys.authenticate('api', secret);
      // the web app does what admin does (keys, settings, webhooks): a narrower key may not sign in
      if (key && !key.scopes.includes('admin'))
        throw new ForbiddenError(
          'This API key lacks the scope admin, which signing in here needs. Sign in with a key that has it, or the operator password.',
          'insufficient_scope',
        );
      if (key) who = { keyId: key.id, name: key.name };
    } else {
      const stored = await this.db
        .selectFrom('settings')
        .select('value')
        .where('key', '=', PASSWORD_KEY)
        .executeTakeFirst();
      if (stored && secret && (await checkPassword(secret, stored.value))) who = { keyId: null, name: 'Operator' };
    }
    if (!who) {
      recent.push(now);
      if (this.failures.size > 10_000) this.failures.clear();
      this.failures.set(client, recent);
      throw new AuthenticationError('That is not a live API key or the operator password.', 'invalid_credentials');
    }
    this.failures.delete(client);
    const token = randomToken(32);
    const session: AdminSession = { ...who, expiresAt: iso(new Date(now + SESSION_MS)) };
    await this.db
      .deleteFrom('admin_sessions')
      .where('expires_at', '<=', iso(new Date(now)))
      .execute();
    await this.db
      .insertInto('admin_sessions')
      .values({
        token_hash: sha256(token),
        key_id: who.keyId,
        name: who.name,
        created_at: iso(new Date(now)),
        expires_at: session.expiresAt,
      })
      .execute();
    return { token, session };
  }

  /** The live session of a cookie value: not expired, and its key (if any) not revoked. */
  async session(token: string | undefined): Promise<AdminSession | undefined> {
    if (!token || token.length > 100) return undefined;
    const row = await this.db
      .selectFrom('admin_sessions')
      .leftJoin('api_keys', 'api_keys.id', 'admin_sessions.key_id')
      .select(['admin_sessions.key_id', 'admin_sessions.name', 'admin_sessions.expires_at', 'api_keys.revoked_at'])
      .where('admin_sessions.token_hash', '=', sha256(token))
      .executeTakeFirst();
    if (!row) return undefined;
    if (row.expires_at <= iso(this.clock.now()) || (row.key_id && row.revoked_at !== null)) return undefined;
    return { keyId: row.key_id, name: row.name, expiresAt: row.expires_at };
  }

  /**
   * The sign-in form's token for the random value in its cookie: an HMAC under a key only the
   * server holds, so a cookie and field that merely match each other (set by a neighbouring site
   * that can write cookies for this one) are refused.
   */
  async signInToken(nonce: string): Promise<string> {
    this.formKey ??= (async () => {
      const fresh = randomBytes(32).toString('base64');
      await this.db
        .insertInto('settings')
        .values({ key: FORM_KEY, value: fresh })
        .onConflict((c) => c.column('key').doNothing())
        .execute();
      const row = await this.db
        .selectFrom('settings')
        .select('value')
        .where('key', '=', FORM_KEY)
        .executeTakeFirstOrThrow();
      return Buffer.from(row.value, 'base64');
    })().catch((err: unknown) => {
      this.formKey = undefined;
      throw err;
    });
    return createHmac('sha256', await this.formKey)
      .update(`signin\0${nonce}`)
      .digest('base64url');
  }

  async signOut(token: string | undefined): Promise<void> {
    if (token) await this.db.deleteFrom('admin_sessions').where('token_hash', '=', sha256(token)).execute();
  }
}

/** The CSRF token of a session: derived from the cookie's secret, so it is not stored and a database reader cannot forge it. */
export function csrfToken(sessionToken: string): string {
  return sha256(`csrf\0${sessionToken}`).slice(0, 40);
}

export function sameToken(a: unknown, b: string): boolean {
  if (typeof a !== 'string' || a.length !== b.length || b.length === 0) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}
