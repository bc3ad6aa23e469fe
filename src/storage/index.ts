/**
 * Document bytes. On disk in the data dir by default; in the database with STORAGE=database so
 * several machines can share them. A write returns only once the bytes are durable.
 */
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

export class FileStorage implements Storage {
  readonly kind = 'filesystem' as const;
  constructor(private readonly dir: string) {}

  private file(key: string): string {
    if (!SAFE_KEY.test(key)) throw new Error(`unsafe storage key ${JSON.stringify(key)}`);
    return path.join(this.dir, key.slice(-2), key);
  }

  /** Write to a temporary file, fsync it, rename it into place, fsync the folder. */
  async put(key: string, bytes: Uint8Array): Promise<void> {
    const target = this.file(key);
    const folder = path.dirname(target);
    await fs.mkdir(folder, { recursive: true });
    const tmp = `${target}.${process.pid}.${Date.now()}.tmp`;
    const handle = await fs.open(tmp, 'w');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, target);
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
