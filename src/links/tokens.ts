/**
 * A link's URL token: derived from a key of the keyring (keyring.ts, outside the database) and the
 * link's id and generation, so a retried send e-mails the same URL and a resend (a new generation)
 * stops the old one. The links' table holds each token's hash and the id of the key it came from.
 */
import { ConfigError } from '../config';
import type { Db } from '../db';
import { derivedToken, sha256 } from '../secrets';
import { LEGACY_KEY, type LinkKeyring } from './keyring';

/** Where versions before the keyring kept the one link key. */
const SETTINGS_KEY = 'link_token_key';

export class LinkTokens {
  constructor(private readonly keyring: LinkKeyring) {}

  /** The id of the key new tokens are derived with. */
  currentKey(): string {
    return this.keyring.current().id;
  }

  /** The URL token of a link's generation, under the key it was made with (null: an older version's link). */
  token(id: string, generation: number, keyId: string | null): string {
    return derivedToken(this.keyring.get(keyId ?? LEGACY_KEY).key, `${id}.${generation}`);
  }
}

/**
 * Checks that this process has the same keys as every process before it on this database: the
 * database keeps a fingerprint of each key (a SHA-256 of it, which gives nothing of the key away),
 * written by the first process that used it. A key that differs (each machine made its own file)
 * stops the start, saying how to give every process the same keys.
 */
export async function checkKeys(db: Db, keyring: LinkKeyring): Promise<void> {
  for (const key of keyring.all()) {
    const name = `link_token_key_sha256:${key.id}`;
    const fingerprint = sha256(key.key);
    await db
      .insertInto('settings')
      .values({ key: name, value: fingerprint })
      .onConflict((c) => c.column('key').doNothing())
      .execute();
    const known = await db.selectFrom('settings').select('value').where('key', '=', name).executeTakeFirstOrThrow();
    if (known.value !== fingerprint)
      throw new ConfigError(
        `The Magic Link key ${key.id} in ${keyring.where} is not the one the other processes on this database use (each machine made its own?). Give every process the same keys: the same LINK_TOKEN_KEYS, or a copy of the first machine's DATA_DIR/secrets/link-token-keys.`,
      );
  }
}

/**
 * Moves the link key that older versions kept in the database into the keyring, once, so that
 * the links they made keep their URLs; then deletes it from the database. With LINK_TOKEN_KEYS
 * the key cannot be written there: the start stops and says what to do.
 */
export async function moveLegacyKey(db: Db, keyring: LinkKeyring): Promise<void> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', SETTINGS_KEY).executeTakeFirst();
  if (!row) return;
  if (!keyring.has(LEGACY_KEY)) {
    if (keyring.where === 'LINK_TOKEN_KEYS')
      throw new ConfigError(
        "The database still holds the Magic Link key of an older version, and LINK_TOKEN_KEYS is set, so it cannot be moved out. Start once without LINK_TOKEN_KEYS (it moves to DATA_DIR/secrets/link-token-keys), then put that file's lines into LINK_TOKEN_KEYS.",
      );
    keyring.adopt(Buffer.from(row.value, 'base64'));
  }
  await db.deleteFrom('settings').where('key', '=', SETTINGS_KEY).execute();
}
