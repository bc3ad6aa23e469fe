/**
 * Document bytes. On disk in the data dir by default; in the database with STORAGE=database so
 * several machines can share them. A write returns only once the bytes are durable.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../db';

export interface Storage {
  readonly kind: 'filesystem' | 'database';
  /** Writes the bytes durably. With the database kind, `db` may be the caller's transaction. */
  put(key: string, bytes: Uint8Array, db?: Db): Promise<void>;
  get(key: string): Promise<Uint8Array | undefined>;
  delete(key: string): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9_.-]+$/;

const { O_WRONLY, O_CREAT, O_EXCL } = fsConstants;

/** A new file at `file` open for writing; undefined when one is there already. */
async function createNew(file: string): Promise<fs.FileHandle | undefined> {
  try {
    return await fs.open(file, O_WRONLY | O_CREAT | O_EXCL, 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
}

/** Writes the bytes and their size to disk (fdatasync), then closes the file. */
async function writeDurably(handle: fs.FileHandle, bytes: Uint8Array): Promise<void> {
  try {
    await handle.writeFile(bytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

export class FileStorage implements Storage {
  readonly kind = 'filesystem' as const;
  constructor(private readonly dir: string) {}

  private file(key: string): string {
    if (!SAFE_KEY.test(key)) throw new Error(`unsafe storage key ${JSON.stringify(key)}`);
    return path.join(this.dir, key.slice(-2), key);
  }

  /**
   * Each key is written once, by the save that made it, and no record names it until that save
   * commits: so the bytes go straight into a new file (O_EXCL), no temporary file and rename. Its
   * folder is made only when it is missing. A key that exists already (a retried save of the same
   * id, after a crash left its file) is replaced whole, through a temporary file and a rename, so
   * a reader never sees it half written. Either way: the file's data, then the folder's entry, are
   * on disk before this returns.
   */
  async put(key: string, bytes: Uint8Array): Promise<void> {
    const target = this.file(key);
    const folder = path.dirname(target);
    const fresh = await createNew(target).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      await fs.mkdir(folder, { recursive: true });
      return createNew(target);
    });
    if (fresh) {
      await writeDurably(fresh, bytes);
    } else {
      const tmp = `${target}.${process.pid}.${Date.now()}.tmp`;
      await writeDurably(await fs.open(tmp, 'w'), bytes);
      await fs.rename(tmp, target);
    }
    const dir = await fs.open(folder, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await fs.readFile(this.file(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.file(key), { force: true });
  }
}

export class DatabaseStorage implements Storage {
  readonly kind = 'database' as const;
  constructor(private readonly db: Db) {}

  async put(key: string, bytes: Uint8Array, db: Db = this.db): Promise<void> {
    await db
      .insertInto('blobs')
      .values({ key, bytes: Buffer.from(bytes) })
      .execute();
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const row = await this.db.selectFrom('blobs').select('bytes').where('key', '=', key).executeTakeFirst();
    return row?.bytes;
  }

  async delete(key: string): Promise<void> {
    await this.db.deleteFrom('blobs').where('key', '=', key).execute();
  }
}
