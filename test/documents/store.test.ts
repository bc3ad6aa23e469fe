/**
 * A document's bytes and its record (src/documents): bytes first, then the record, so an
 * acknowledged document always has its bytes; a retried render stores nothing twice; what a crash
 * or a failed delete leaves is bytes no record names, and housekeeping deletes them an hour later.
 * On each database with each kind of storage (S3: a real s3proxy).
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../src/config';
import { FakeClock } from '../../src/clock';
import { UNREFERENCED_AFTER_MS } from '../../src/documents';
import { BACKENDS, testService, type TestService } from '../support/service';
import { freshBucket, S3_MISSING } from '../support/s3';

const CASES = BACKENDS.flatMap((backend) =>
  (['filesystem', 'database', 's3'] as const).map((storage) => [backend, storage] as const),
);

describe.each(CASES)('documents on %s with %s storage', (backend, storage) => {
  const skip = storage === 's3' && S3_MISSING;
  const test = skip ? it.skip : it;
  if (skip) it.skip(`(skipped: ${S3_MISSING})`, () => undefined);
  const clock = new FakeClock(new Date('2026-11-26T09:00:00Z'));
  const caller = { keyId: null, name: 'test' };
  let t: TestService;
  beforeAll(async () => {
    if (skip) return;
    const config: Partial<Config> = { storage, s3: storage === 's3' ? await freshBucket() : undefined };
    t = await testService({ backend, clock, config });
  });
  afterAll(() => t?.stop());
  const db = () => t.service.database.db;
  const bytesOf = (id: string) => t.service.storage.get(id);
  const pending = async () => (await db().selectFrom('storage_pending').select('key').execute()).map((r) => r.key);
  const store = (renderId: string, text: string) =>
    t.service.documents.store({
      renderId,
      templateId: 'tmpl_example_postcard',
      templateVersion: 1,
      name: 'Postcard',
      description: null,
      pdf: new TextEncoder().encode(text),
      caller,
    });

  test('keeps the first bytes and record when the same render is stored again, one after the other or at once', async () => {
    const first = await store('rnd_retried_postcard', '%PDF-1.7 first render');
    expect(await store('rnd_retried_postcard', '%PDF-1.7 the retried render, other bytes')).toBe(first);
    const { bytes } = await t.service.documents.pdf(first);
    expect(Buffer.from(bytes).toString()).toBe('%PDF-1.7 first render');
    expect(await t.service.documents.get(first)).toMatchObject({
      size: 21,
      sha256: createHash('sha256').update('%PDF-1.7 first render').digest('hex'),
    });
    // two runs of one render at once: one document, whichever committed first
    const both = await Promise.all([
      store('rnd_twice_at_once', '%PDF-1.7 a'),
      store('rnd_twice_at_once', '%PDF-1.7 b'),
    ]);
    expect(both[0]).toBe(both[1]);
    const rows = await db().selectFrom('documents').select('id').where('render_id', '=', 'rnd_twice_at_once').execute();
    expect(rows).toEqual([{ id: both[0] }]);
    // the loser's bytes were tidied at once; nothing is left pending
    expect(await pending()).toEqual([]);
  });

  test('a deleted document leaves neither its bytes nor a note', async () => {
    const id = await store('rnd_to_delete', '%PDF-1.7 to delete');
    expect(await bytesOf(id)).toBeDefined();
    await t.service.documents.remove(id);
    expect(await bytesOf(id)).toBeUndefined();
    expect(await pending()).toEqual([]);
  });

  test('housekeeping deletes the bytes a crash left without a record, an hour on, and nothing else', async () => {
    if (storage === 'database') {
      // bytes and record commit in one transaction: there is never anything to tidy
      expect(await t.service.housekeeping()).toMatchObject({ unreferenced: 0 });
      return;
    }
    const kept = await store('rnd_kept', '%PDF-1.7 kept');
    // as a save that crashed after its bytes and before its record leaves them, and a delete that
    // crashed after its record
    const now = () => clock.now().toISOString();
    await db().insertInto('storage_pending').values({ key: 'doc_crashed_save', since: now() }).execute();
    await t.service.storage.put('doc_crashed_save', Buffer.from('%PDF-1.7 orphan'));
    const deleted = await store('rnd_crashed_delete', '%PDF-1.7 deleted');
    await db().deleteFrom('documents').where('id', '=', deleted).execute();
    await db().insertInto('storage_pending').values({ key: deleted, since: now() }).execute();
    // not yet: a save may still be under way
    expect(await t.service.housekeeping()).toMatchObject({ unreferenced: 0 });
    expect(await bytesOf('doc_crashed_save')).toBeDefined();
    clock.advance(UNREFERENCED_AFTER_MS - 60_000);
    // a save under way now, its note younger
    await db().insertInto('storage_pending').values({ key: 'doc_under_way', since: now() }).execute();
    await t.service.storage.put('doc_under_way', Buffer.from('%PDF-1.7 under way'));
    clock.advance(2 * 60_000);
    expect(await t.service.housekeeping()).toMatchObject({ unreferenced: 2 });
    expect(await bytesOf('doc_crashed_save')).toBeUndefined();
    expect(await bytesOf(deleted)).toBeUndefined();
    expect(await bytesOf('doc_under_way')).toBeDefined();
    expect(await bytesOf(kept)).toBeDefined();
    expect(await pending()).toEqual(['doc_under_way']);
  });
});
