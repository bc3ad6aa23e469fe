/**
 * What every kind of document storage promises the documents that use it (src/storage): the bytes
 * put are the bytes got, a key never stored reads as missing, a delete forgets it (twice is
 * harmless), a key that could reach outside the storage is refused. On files, in the database and
 * in a real S3-compatible server (s3proxy).
 */
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { openDatabase, type Database } from '../../src/db';
import { DatabaseStorage, FileStorage, S3Storage, type S3Settings, type Storage } from '../../src/storage';
import { freshBucket, S3_MISSING } from '../support/s3';
import { tempDir } from '../support/tmp';

const KINDS = ['filesystem', 'database', 's3'] as const;

describe.each(KINDS)('document storage: %s', (kind) => {
  const skip = kind === 's3' && S3_MISSING;
  let storage: Storage;
  let database: Database | undefined;
  let bucket: S3Settings | undefined;
  const root = tempDir('paperlink-storage-');
  beforeAll(async () => {
    if (skip) return;
    if (kind === 'filesystem') storage = new FileStorage(path.join(root, 'documents'));
    if (kind === 'database') {
      database = await openDatabase({ sqlitePath: path.join(root, 'paperlink.db') });
      storage = new DatabaseStorage(database.db);
    }
    if (kind === 's3') {
      bucket = await freshBucket();
      storage = new S3Storage(bucket);
      await storage.check!();
    }
  });
  afterAll(async () => {
    storage?.close?.();
    await database?.close();
  });
  const test = skip ? it.skip : it;
  if (skip) it.skip(`(skipped: ${S3_MISSING})`, () => undefined);

  test('gives back exactly the bytes it was given, small and large', async () => {
    const small = Buffer.from('%PDF-1.7 small');
    // large enough that any stream or chunking on the way is exercised
    const large = Buffer.alloc(6 * 1024 * 1024);
    for (let i = 0; i < large.length; i += 4) large.writeUInt32LE((i * 2654435761) >>> 0, i);
    await storage.put('doc_small01', small);
    await storage.put('doc_large01', large);
    expect(Buffer.from((await storage.get('doc_small01'))!)).toEqual(small);
    expect(Buffer.from((await storage.get('doc_large01'))!).equals(large)).toBe(true);
  });

  test('reads a key it never stored as missing', async () => {
    expect(await storage.get('doc_never02')).toBeUndefined();
  });

  test('forgets a key on delete, and a second delete is harmless', async () => {
    await storage.put('doc_gone03', Buffer.from('%PDF-1.7'));
    await storage.delete('doc_gone03');
    expect(await storage.get('doc_gone03')).toBeUndefined();
    await expect(storage.delete('doc_gone03')).resolves.toBeUndefined();
  });

  test('refuses a key that could reach outside its place', async () => {
    for (const key of ['../escape', 'a/b', '', 'doc x', '..'])
      await expect(storage.put(key, Buffer.from('x'))).rejects.toThrow(/unsafe storage key/);
  });

  if (kind === 's3')
    test('keeps every object under the prefix, and fails its start check on a bucket it cannot use', async () => {
      const client = new S3Client({ region: bucket!.region, endpoint: bucket!.endpoint, forcePathStyle: true });
      try {
        const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket!.bucket }));
        const keys = (listed.Contents ?? []).map((o) => o.Key!);
        expect(keys.sort()).toEqual(['docs/doc_large01', 'docs/doc_small01']);
      } finally {
        client.destroy();
      }
      const missing = new S3Storage({ ...bucket!, bucket: 'paperlink-no-such-bucket' });
      await expect(missing.check()).rejects.toMatchObject({ code: 'invalid_configuration' });
      missing.close();
      const stranger = new S3Storage(bucket!, {
        credentials: { accessKeyId: 'someone-else', secretAccessKey: 'not-the-secret' },
      });
      await expect(stranger.check()).rejects.toMatchObject({ code: 'invalid_configuration' });
      stranger.close();
    });
});
