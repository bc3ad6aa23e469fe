/**
 * Storing a document is idempotent by its id (issue 44, case 1): a postcard's document id is fixed,
 * and a retried render must not take the bytes of the document the first render stored.
 */
import { createHash } from 'node:crypto';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('Documents.store with a given id on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService({ backend });
  });
  afterAll(() => t?.stop());

  it('keeps the first bytes and record when the same document is stored again', async () => {
    const caller = { keyId: null, name: 'test' };
    const first = new TextEncoder().encode('%PDF-1.7 first render');
    const again = new TextEncoder().encode('%PDF-1.7 the retried render, other bytes');
    const store = (pdf: Uint8Array) =>
      t.service.documents.store({
        id: 'doc_retried_postcard',
        templateId: 'tmpl_example_postcard',
        name: 'Postcard',
        description: null,
        pdf,
        caller,
      });
    expect(await store(first)).toBe('doc_retried_postcard');
    expect(await store(again)).toBe('doc_retried_postcard');
    const record = await t.service.documents.get('doc_retried_postcard');
    const { bytes } = await t.service.documents.pdf('doc_retried_postcard');
    expect(Buffer.from(bytes).toString()).toBe('%PDF-1.7 first render');
    expect(record).toMatchObject({ size: first.length, sha256: createHash('sha256').update(first).digest('hex') });
  });
});
