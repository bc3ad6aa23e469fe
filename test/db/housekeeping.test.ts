/**
 * Housekeeping at scale: what expired is deleted a batch at a time (PURGE_BATCH rows a statement,
 * found by an index), so it never holds the write lock for long however much there is, and what
 * has not expired stays.
 */
import { FakeClock } from '../../src/clock';
import { PURGE_BATCH } from '../../src/db';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('housekeeping on %s', (backend) => {
  let t: TestService;
  const clock = new FakeClock('2026-11-26T10:00:00Z');
  const statements: string[] = [];

  beforeAll(async () => {
    t = await testService({ backend, clock, service: { beforeStatement: (sql) => void statements.push(sql) } });
  });
  afterAll(() => t?.stop());

  it('deletes expired idempotency keys in batches of PURGE_BATCH, keeping the live ones', async () => {
    const expired = 2 * PURGE_BATCH + 500;
    const rows = (n: number, prefix: string, expires: string) =>
      Array.from({ length: n }, (_, i) => ({
        scope: 'key_test:POST /v1/generate',
        key: `${prefix}-${i}`,
        request_hash: 'h',
        state: 'done',
        status: 201,
        body: '{}',
        created_at: '2026-11-25T10:00:00.000Z',
        expires_at: expires,
      }));
    const db = t.service.database.db;
    // the housekeeping the service ran at its start is over (a call waits for the one under way):
    // on a busy machine it was still deleting when the rows below went in, and took a batch of them
    await t.service.housekeeping();
    for (let i = 0; i < expired; i += 500)
      await db
        .insertInto('idempotency')
        .values(rows(Math.min(500, expired - i), `old${i}`, '2026-11-26T09:00:00.000Z'))
        .execute();
    await db
      .insertInto('idempotency')
      .values(rows(10, 'live', '2026-11-27T10:00:00.000Z'))
      .execute();
    statements.length = 0;
    const purged = await t.service.housekeeping();
    expect(purged.idempotency).toBe(expired);
    // three batches: two full, one with the rest (it deletes fewer, so it is the last)
    expect(statements.filter((s) => /^\s*delete from "idempotency"/i.test(s))).toHaveLength(3);
    const left = await db.selectFrom('idempotency').select('key').execute();
    expect(left.map((r) => r.key).sort()).toEqual(
      rows(10, 'live', '')
        .map((r) => r.key)
        .sort(),
    );
  });
});
