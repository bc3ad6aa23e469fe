/**
 * Every list answers a page from an index, in id order, whatever the filter: no query sorts what
 * matches before it can answer (SQLite's `USE TEMP B-TREE FOR ORDER BY`) and none reads the whole
 * table. SQLite plans without statistics, so its plans here are the plans of a million rows too.
 */
import { CompiledQuery } from 'kysely';
import { parsePageQuery } from '../../src/pagination';
import { testService, type TestService } from '../support/service';

describe('the query plans of the lists on SQLite', () => {
  let t: TestService;
  const statements: string[] = [];
  beforeAll(async () => {
    t = await testService({ service: { beforeStatement: (sql) => void statements.push(sql) } });
    await t.service.database.db
      .insertInto('webhooks')
      .values({
        id: 'wh_x',
        url: 'https://example.com/h',
        events: '["*"]',
        description: null,
        secret: 'whsec_x',
        created_at: '2026-11-26T00:00:00.000Z',
        resting_until: null,
      })
      .execute();
  });
  afterAll(() => t?.stop());

  /** The plan of each SELECT `list()` ran. */
  const plans = async (list: () => Promise<unknown>): Promise<string[]> => {
    statements.length = 0;
    await list();
    const selects = statements.filter((s) => /^select/i.test(s));
    expect(selects.length).toBeGreaterThan(0);
    const out: string[] = [];
    for (const s of selects) {
      const params = Array.from(s.matchAll(/\?/g), () => null);
      const rows = await t.service.database.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${s}`, params),
      );
      out.push(rows.rows.map((r) => r.detail).join('; '));
    }
    return out;
  };
  // the first page: a cursor would make any plan a SEARCH of the id index
  const page = parsePageQuery({ limit: '20' });

  // [name, the list, whether it filters: a filtered list must find its rows by an index (SEARCH),
  // not read the id index until enough match (a full read when few do)]
  it.each<[string, () => Promise<unknown>, boolean]>([
    ['links', () => t.service.links.list(page), false],
    ['links by status', () => t.service.links.list(page, { status: 'active' }), true],
    ['links of a document', () => t.service.links.list(page, { document_id: 'doc_x' }), true],
    ['links to a recipient', () => t.service.links.list(page, { recipient_email: 'a@example.com' }), true],
    [
      'links made in a period',
      () => t.service.links.list(page, { created_after: '2026-01-01', created_before: '2026-02-01' }),
      true,
    ],
    ['documents', () => t.service.documents.list(page), false],
    ['postcards', () => t.service.postcards.list(page), false],
    ['postcards by status', () => t.service.postcards.list(page, 'received'), true],
    ['templates', () => t.service.templates.list(page), false],
    ['webhooks', () => t.service.webhooks.list(page), false],
    ['a webhook’s deliveries', () => t.service.webhooks.deliveries('wh_x', page), true],
  ])('%s: a page from an index, in its order', async (_name, list, filtered) => {
    const [first, ...rest] = await plans(list);
    if (filtered) expect(first).toMatch(/^SEARCH \w+ USING/);
    for (const plan of [first, ...rest]) {
      expect(plan).not.toMatch(/TEMP B-TREE/);
      // a table read whole (SCAN without an index) is a full read at any size
      expect(plan).not.toMatch(/SCAN \w+(?!\w| USING)/);
    }
  });
});
