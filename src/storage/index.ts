/**
 * Document bytes. On disk in the data dir by default; in the database (STORAGE=database) or in an
 * S3-compatible bucket (STORAGE=s3) so several machines can share them. A write returns only once
 * the bytes are durable.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { markStorageError } from '../outage';
import { ConfigError, type Config, type S3Settings } from '../config';
import type { Db } from '../db';
import { Setting } from '../db/setting';

export interface Storage {
  readonly kind: 'filesystem' | 'database' | 's3';
  /** Where the bytes are, as the greeting and errors name it. */
  readonly location: string;
  /** Writes the bytes durably. With the database kind, `db` may be the caller's transaction. */
  put(key: string, bytes: Uint8Array, db?: Db): Promise<void>;
  get(key: string): Promise<Uint8Array | undefined>;
  delete(key: string): Promise<void>;
  /** Throws, saying what to fix, when the storage cannot be used (checked once at start). */
  check?(): Promise<void>;
  close?(): void;
}

const SAFE_KEY = /^[A-Za-z0-9_.-]+$/;

/** A key every kind stores as it is: no folder, no path step, no space (a document id is one). */
function safe(key: string): string {
  if (!SAFE_KEY.test(key) || key === '.' || key === '..') throw new Error(`unsafe storage key ${JSON.stringify(key)}`);
  return key;
}

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

/**
 * Makes a folder and the folders above it. Node's recursive mkdir says ENOENT where the disk is
 * read-only (EROFS): the folder itself is tried once more alone, so the failure says what it is.
 */
async function makeFolder(folder: string): Promise<void> {
  await fs.mkdir(folder, { recursive: true }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT')
      await fs.mkdir(folder).catch((plain: NodeJS.ErrnoException) => {
        throw plain.code === 'ENOENT' ? err : plain;
      });
    throw err;
  });
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

  get location(): string {
    return `files in ${this.dir}`;
  }

  private file(key: string): string {
    return path.join(this.dir, safe(key).slice(-2), key);
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
      await makeFolder(folder);
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
  readonly location = 'the database';
  constructor(private readonly db: Db) {}

  async put(key: string, bytes: Uint8Array, db: Db = this.db): Promise<void> {
    await db
      .insertInto('blobs')
      .values({ key: safe(key), bytes: Buffer.from(bytes) })
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

export type { S3Settings } from '../config';

/**
 * Objects in an S3-compatible bucket, through the AWS SDK's own client; credentials come from
 * where the SDK looks (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance
 * role). A PUT answered 200 is durable; its Content-MD5 makes the server refuse bytes that
 * changed on the way.
 */
export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  /** The SDK is loaded only where STORAGE=s3 (every other process starts without it). */
  private readonly s3: Promise<{ sdk: typeof import('@aws-sdk/client-s3'); client: S3Client }>;

  constructor(
    private readonly settings: S3Settings,
    client?: S3ClientConfig,
  ) {
    this.s3 = import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        region: settings.region,
        endpoint: settings.endpoint,
        forcePathStyle: settings.forcePathStyle,
        // Content-MD5 checks every upload; the newer checksum headers are not understood by every
        // S3-compatible server, so they are sent only where an operation requires them
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        ...client,
      }),
    }));
  }

  get location(): string {
    const { bucket, prefix, endpoint, region } = this.settings;
    return `S3 bucket ${bucket}${prefix ? ` under ${prefix}` : ''} at ${endpoint ?? `AWS ${region}`}`;
  }

  private key(key: string): string {
    return this.settings.prefix + safe(key);
  }

  /** Every call's failure is marked as the storage's (src/outage.ts: 503 storage_unavailable, not 500). */
  private async send<T>(call: (client: S3Client, sdk: typeof import('@aws-sdk/client-s3')) => Promise<T>): Promise<T> {
    const { sdk, client } = await this.s3;
    try {
      return await call(client, sdk);
    } catch (err) {
      // a key that is not there is an answer (get() says undefined), not a failure of the storage
      if ((err as Error).name === 'NoSuchKey') throw err;
      throw markStorageError(err);
    }
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.send((client, sdk) =>
      client.send(
        new sdk.PutObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.key(key),
          Body: bytes,
          ContentType: 'application/pdf',
          ContentMD5: createHash('md5').update(bytes).digest('base64'),
        }),
      ),
    );
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await this.send(async (client, sdk) => {
        const answer = await client.send(
          new sdk.GetObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) }),
        );
        return answer.Body!.transformToByteArray();
      });
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 for a key that is not there too: a repeated delete is harmless
    await this.send((client, sdk) =>
      client.send(new sdk.DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) })),
    );
  }

  async check(): Promise<void> {
    const { sdk, client } = await this.s3;
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: this.settings.bucket }));
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const why =
        status === 404
          ? 'it does not exist: create it first'
          : status === 403 || status === 401
            ? 'these credentials may not use it: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the role)'
            : `${(err as Error).name}: ${(err as Error).message || 'no answer'}: check S3_ENDPOINT, S3_REGION and S3_FORCE_PATH_STYLE`;
      throw new ConfigError(`STORAGE=s3 cannot use the ${this.location}: ${why}.`);
    }
  }

  close(): void {
    void this.s3.then(({ client }) => client.destroy());
  }
}

/** The storage a configuration names (STORAGE): files in the data dir, the database `db`, or an S3 bucket. */
export function openStorage(config: Pick<Config, 'storage' | 's3' | 'dataDir'>, db: Db): Storage {
  if (config.storage === 'database') return new DatabaseStorage(db);
  if (config.storage === 's3') return new S3Storage(config.s3!);
  return new FileStorage(path.join(config.dataDir, 'documents'));
}

/**
 * Whether writes work where the service writes: a row of the settings table, and a small file
 * where documents go, read back and deleted again (each probe its own key, so probes at once and
 * a probe a crash left behind do not meet). For /readyz (outage.ts WriteHealth) and paperlink doctor.
 */
export async function probeWrites(db: Db, storage: Storage): Promise<void> {
  await new Setting<string>(db, 'write_probe').write(randomUUID());
  const key = `paperlink-write-probe-${randomUUID()}`;
  const bytes = new Uint8Array(64 * 1024).fill(7);
  await storage.put(key, bytes);
  try {
    const back = await storage.get(key);
    if (!back || !Buffer.from(back).equals(Buffer.from(bytes)))
      throw new Error(`${storage.location} gave back other bytes than were written`);
  } finally {
    await storage.delete(key);
  }
}
