/**
 * The keys that derive Magic Link URL tokens, kept out of the database: whoever reads a backup or a
 * replica of the database sees only each token's hash, and cannot compute a URL from it.
 *
 * - `LINK_TOKEN_KEYS` (`k1:<base64>,k2:<base64>`): the keys, given to every process (what several
 *   machines on one PostgreSQL need: each process derives the same URLs);
 * - otherwise the file `DATA_DIR/secrets/link-token-keys` (mode 0600, one `<id> <base64>` a line),
 *   made with one key on first use and shared by the processes of one machine.
 *
 * The last key is the current one: new links and resends use it. Each link records the id of the
 * key its URL came from, so `paperlink secrets rotate` (a new current key) leaves every live link's
 * URL as it is. A key is never removed by Paperlink; remove one by hand only when no live link
 * names it.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config';

export interface LinkKey {
  id: string;
  key: Buffer;
}

/** The id older versions' links have: their key lived in the database (settings `link_token_key`). */
export const LEGACY_KEY = 'legacy';

const LINE = /^([A-Za-z0-9_-]{1,40})[\s:]+([A-Za-z0-9+/=]{40,})$/;

/** Keys written `<id>:<base64 of at least 32 bytes>`, separated by commas or lines (LINK_TOKEN_KEYS, TEMPORAL_PAYLOAD_KEYS). */
export function parseKeys(text: string, where: string): LinkKey[] {
  const keys: LinkKey[] = [];
  for (const raw of text.split(/[\n,]/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    const key = m ? Buffer.from(m[2], 'base64') : undefined;
    if (!m || !key || key.length < 32)
      throw new ConfigError(
        `${where} holds an entry that is not "<id>:<base64 of at least 32 bytes>". Fix it (paperlink secrets rotate writes a valid one).`,
      );
    keys.push({ id: m[1], key });
  }
  return keys;
}

const write = (file: string, keys: LinkKey[]) =>
  `# Magic Link token keys (paperlink secrets rotate adds one). Keep this file out of database backups.\n${keys
    .map((k) => `${k.id} ${k.key.toString('base64')}`)
    .join('\n')}\n`;

/** The keyring a configuration names: LINK_TOKEN_KEYS, or the file in the data dir. */
export function linkKeyring(config: { linkTokenKeys?: string; dataDir: string }): LinkKeyring {
  return new LinkKeyring({
    env: config.linkTokenKeys,
    file: path.join(config.dataDir, 'secrets', 'link-token-keys'),
  });
}

export class LinkKeyring {
  private keys: LinkKey[] = [];
  private readAt = -1;

  constructor(private readonly source: { env?: string; file: string }) {}

  /** Where the keys come from, for messages. */
  get where(): string {
    return this.source.env !== undefined ? 'LINK_TOKEN_KEYS' : this.source.file;
  }

  /** The key new URLs are derived with. */
  current(): LinkKey {
    const keys = this.load();
    return keys[keys.length - 1];
  }

  /** The key with this id; an id not (yet) known is looked up again, as another process may have rotated. */
  get(id: string): LinkKey {
    let found = this.load().find((k) => k.id === id);
    if (!found) {
      this.readAt = -1;
      found = this.load().find((k) => k.id === id);
    }
    if (!found)
      throw new ConfigError(
        `The Magic Link key ${JSON.stringify(id)} is not in ${this.where}: a link's URL was made with it. Restore it there (every process needs the same keys).`,
      );
    return found;
  }

  /** Every key, oldest first. */
  all(): LinkKey[] {
    return [...this.load()];
  }

  /** Whether a key with this id is known. */
  has(id: string): boolean {
    return this.load().some((k) => k.id === id);
  }

  /** A new key to follow these: `k<n+1>` after the highest `k<n>`, 32 random bytes. */
  static next(keys: LinkKey[]): LinkKey {
    const n = Math.max(0, ...keys.map((k) => Number(/^k(\d+)$/.exec(k.id)?.[1] ?? 0))) + 1;
    return { id: `k${n}`, key: randomBytes(32) };
  }

  /** Adds a new current key (the file only) and returns it. */
  rotate(): LinkKey {
    return this.change((keys) => [...keys, LinkKeyring.next(keys)]);
  }

  /** Adds a key of an older version under LEGACY_KEY, before the current one (the file only). */
  adopt(key: Buffer): void {
    this.change((keys) => (keys.some((k) => k.id === LEGACY_KEY) ? keys : [{ id: LEGACY_KEY, key }, ...keys]));
  }

  private load(): LinkKey[] {
    if (this.source.env !== undefined) {
      if (!this.keys.length) this.keys = parseKeys(this.source.env, 'LINK_TOKEN_KEYS');
      if (!this.keys.length) throw new ConfigError('LINK_TOKEN_KEYS is set but holds no key.');
      return this.keys;
    }
    const stat = fs.statSync(this.source.file, { throwIfNoEntry: false });
    if (!stat) {
      this.create();
      return this.load();
    }
    if (stat.mtimeMs !== this.readAt) {
      this.keys = parseKeys(fs.readFileSync(this.source.file, 'utf8'), this.source.file);
      this.readAt = stat.mtimeMs;
    }
    if (!this.keys.length) throw new ConfigError(`${this.source.file} holds no key. Run npx paperlink secrets rotate.`);
    return this.keys;
  }

  /** The file with one key, unless another process made it first (a hard link does not overwrite). */
  private create(): void {
    fs.mkdirSync(path.dirname(this.source.file), { recursive: true, mode: 0o700 });
    const temp = `${this.source.file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, write(this.source.file, [{ id: 'k1', key: randomBytes(32) }]), { mode: 0o600 });
    try {
      fs.linkSync(temp, this.source.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(temp, { force: true });
    }
  }

  /** Rewrites the file with `change` applied, one process at a time (a lock file), atomically (a rename). */
  private change(change: (keys: LinkKey[]) => LinkKey[]): LinkKey {
    if (this.source.env !== undefined)
      throw new ConfigError(
        'The Magic Link keys come from LINK_TOKEN_KEYS: append a new key there on every process (paperlink secrets rotate prints one).',
      );
    this.load();
    const lock = `${this.source.file}.lock`;
    let fd: number | undefined;
    for (let tries = 0; fd === undefined; tries++) {
      try {
        fd = fs.openSync(lock, 'wx');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 200) throw err;
        // a lock left by a process that died is old: take it
        const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
        if (age > 30_000) fs.rmSync(lock, { force: true });
        else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      }
    }
    try {
      const keys = change(parseKeys(fs.readFileSync(this.source.file, 'utf8'), this.source.file));
      const temp = `${this.source.file}.${process.pid}.tmp`;
      fs.writeFileSync(temp, write(this.source.file, keys), { mode: 0o600 });
      fs.renameSync(temp, this.source.file);
      this.readAt = -1;
      return keys[keys.length - 1];
    } finally {
      fs.closeSync(fd);
      fs.rmSync(lock, { force: true });
    }
  }
}
