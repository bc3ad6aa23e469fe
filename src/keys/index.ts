/**
 * API keys and postcard tokens: made once and shown once, stored as SHA-256 hashes, found by a
 * short public prefix and compared in constant time.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import type { ApiKeyRow } from '../db/schema';
import { NotFoundError, ValidationError } from '../errors';
import { newId } from '../ids';
import { randomToken, sameHash, sha256 } from '../secrets';

export type KeyKind = 'api' | 'postcard';

const MARK: Record<KeyKind, string> = { api: 'plk_', postcard: 'plp_' };
/** A test postcard token's mark, as Stripe's `sk_test_`: its postcards are rendered and proofed, never handed on. */
const TEST_MARK = 'plp_test_';
const PREFIX_LENGTH = 12;
/** The public start of a key: its mark and 8 random characters (a test token's longer mark counts apart). */
function prefixOf(secret: string): string {
  return secret.slice(0, secret.startsWith(TEST_MARK) ? TEST_MARK.length + 8 : PREFIX_LENGTH);
}
/** How stale `last_used_at` may get before a request writes it again. */
const TOUCH_EVERY_MS = 60_000;
/**
 * How long a key that worked is trusted without asking the database again. Revoking in this
 * process takes effect at once; revoking from another process (the CLI, another server) within this.
 */
export const LIVE_CACHE_MS = 2_000;

/**
 * What an API key may do, as Stripe's restricted keys: each route of the API needs one scope
 * (src/http/scopes.ts). A key made without scopes has them all, as every key made before scopes.
 */
export const SCOPES = {
  generate: 'render documents (POST /v1/generate), with the destinations the request names',
  'documents:read': 'list, read and download documents',
  'documents:write': 'delete documents',
  'links:read': 'list and read Magic Links',
  'links:write': 'share documents by Magic Link, expire and resend links',
  'templates:read': 'list and read templates',
  'templates:write': 'add, change (new versions) and delete templates',
  'postcards:read': 'list and read postcard requests',
  admin: 'the Magic Link app settings and webhooks',
} as const;
export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** Checks scopes given by a person: known names, none twice; empty or absent means all. */
export function parseScopes(given: readonly string[] | undefined, field = 'scopes'): Scope[] {
  const list = [...new Set((given ?? []).map((s) => s.trim()).filter(Boolean))];
  const unknown = list.filter((s) => !(s in SCOPES));
  if (unknown.length)
    throw new ValidationError(
      `Unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}. The scopes are: ${ALL_SCOPES.join(', ')}.`,
      unknown.map((s) => ({ field, message: `${s} is not a scope`, code: 'invalid' })),
    );
  // a list given but blank is a mistake (an unset variable in a script), never "every scope"
  if (given !== undefined && !list.length)
    throw new ValidationError(
      `No scope given. Name at least one (${ALL_SCOPES.join(', ')}), or leave the scopes out for a key that may do everything.`,
      [{ field, message: 'is empty', code: 'required' }],
    );
  return list.length ? (list as Scope[]) : [...ALL_SCOPES];
}

export interface KeyInfo {
  id: string;
  kind: KeyKind;
  name: string;
  /** What an API key may do (every scope unless it was made with fewer); postcard tokens have none. */
  scopes: Scope[];
  /** The start of the key, e.g. `plk_7fK2aQ9x`, to tell keys apart. */
  prefix: string;
  /** A postcard token in test mode: its postcards are never handed on to a mail partner. */
  test: boolean;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function info(row: ApiKeyRow): KeyInfo {
  return {
    id: row.id,
    kind: row.kind as KeyKind,
    name: row.name,
    scopes: row.kind !== 'api' ? [] : row.scopes === null ? [...ALL_SCOPES] : (JSON.parse(row.scopes) as Scope[]),
    prefix: row.prefix,
    test: Boolean(row.test),
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

export class Keys {
  /** Live keys seen in the last LIVE_CACHE_MS, by hash: the hottest paths skip a query. */
  private readonly live = new Map<string, { row: ApiKeyRow; at: number }>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * Makes a key. The returned `secret` is the only time the whole key exists outside the caller.
   * An API key gets `scopes` (parseScopes: all when they are left out; a blank list is refused).
   */
  async create(
    kind: KeyKind,
    name: string,
    scopes?: readonly string[],
    options: { test?: boolean } = {},
  ): Promise<{ secret: string; key: KeyInfo }> {
    const granted = parseScopes(scopes);
    if (options.test && kind !== 'postcard')
      throw new ValidationError('Only postcard tokens have a test mode; an API key is live.', [
        { field: 'test', message: 'is for postcard tokens only', code: 'invalid' },
      ]);
    if (kind !== 'api' && scopes?.length)
      throw new ValidationError('Only API keys have scopes; a postcard token only sends postcard requests.', [
        { field: 'scopes', message: 'is for API keys only', code: 'invalid' },
      ]);
    const clean = name.trim();
    if (!clean || clean.length > 100) {
      throw new ValidationError('A key needs a name of 1 to 100 characters, saying who or what uses it.', [
        { field: 'name', message: 'must be 1 to 100 characters', code: 'length' },
      ]);
    }
    const secret = (options.test ? TEST_MARK : MARK[kind]) + randomToken(32);
    const now = this.clock.now();
    const row: ApiKeyRow = {
      id: newId(kind === 'api' ? 'key' : 'tok', now),
      kind,
      name: clean,
      prefix: prefixOf(secret),
      hash: sha256(secret),
      created_at: iso(now),
      last_used_at: null,
      revoked_at: null,
      scopes: kind === 'api' && granted.length < ALL_SCOPES.length ? JSON.stringify(granted) : null,
      test: options.test ? 1 : 0,
    };
    await this.db.insertInto('api_keys').values(row).execute();
    return { secret, key: info(row) };
  }

  async list(kind?: KeyKind): Promise<KeyInfo[]> {
    let q = this.db.selectFrom('api_keys').selectAll().orderBy('id', 'desc');
    if (kind) q = q.where('kind', '=', kind);
    return (await q.execute()).map(info);
  }

  /** Revokes by id or by prefix. Revoking twice is harmless. */
  async revoke(idOrPrefix: string, kind?: KeyKind): Promise<KeyInfo> {
    let q = this.db
      .selectFrom('api_keys')
      .selectAll()
      .where((w) => w.or([w('id', '=', idOrPrefix), w('prefix', '=', idOrPrefix)]));
    if (kind) q = q.where('kind', '=', kind);
    const rows = await q.execute();
    if (rows.length !== 1) throw new NotFoundError(kind === 'postcard' ? 'postcard token' : 'key', idOrPrefix);
    const row = rows[0];
    for (const [hash, entry] of this.live) if (entry.row.id === row.id) this.live.delete(hash);
    if (!row.revoked_at) {
      row.revoked_at = iso(this.clock.now());
      await this.db.updateTable('api_keys').set({ revoked_at: row.revoked_at }).where('id', '=', row.id).execute();
    }
    return info(row);
  }

  async count(kind: KeyKind): Promise<number> {
    const r = await this.db
      .selectFrom('api_keys')
      .select((e) => e.fn.countAll<string | number>().as('n'))
      .where('kind', '=', kind)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /**
   * The key `presented` stands for, if it is a live key of this kind. Candidates are found by
   * the public prefix; the hash is compared in constant time. Never says why a key failed.
   */
  async authenticate(kind: KeyKind, presented: unknown): Promise<KeyInfo | undefined> {
    if (
      typeof presented !== 'string' ||
      presented.length < PREFIX_LENGTH ||
      presented.length > 200 ||
      !presented.startsWith(MARK[kind])
    )
      return undefined;
    const hash = sha256(presented);
    let match: ApiKeyRow | undefined;
    const cached = this.live.get(hash);
    if (cached && performance.now() - cached.at < LIVE_CACHE_MS && sameHash(cached.row.hash, hash)) {
      match = cached.row;
    } else {
      const candidates = await this.db
        .selectFrom('api_keys')
        .selectAll()
        .where('prefix', '=', prefixOf(presented))
        .where('kind', '=', kind)
        .execute();
      for (const c of candidates) if (sameHash(c.hash, hash) && !c.revoked_at) match = c;
      if (!match) return undefined;
      if (this.live.size >= 10_000) this.live.clear();
      this.live.set(hash, { row: match, at: performance.now() });
    }
    const now = this.clock.now();
    if (!match.last_used_at || now.getTime() - Date.parse(match.last_used_at) > TOUCH_EVERY_MS) {
      match.last_used_at = iso(now);
      await this.db
        .updateTable('api_keys')
        .set({ last_used_at: match.last_used_at })
        .where('id', '=', match.id)
        .execute();
    }
    return info(match);
  }
}
