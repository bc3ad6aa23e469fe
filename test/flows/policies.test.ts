/**
 * The retry policies are declared once (src/flows/policies.ts); what the docs tell users about
 * retries is that declaration, not a copy that drifts from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { POLICIES, givesUp, policyTable, waitMs } from '../../src/flows/policies';
import { root } from '../support/fixtures';

describe('retry policies', () => {
  it('are what docs/guarantees.md says, table and all', () => {
    const doc = fs.readFileSync(path.join(root, 'docs/guarantees.md'), 'utf8');
    // on a failure: paste the table this prints into docs/guarantees.md's "Retries"
    expect([doc.includes(policyTable()), policyTable()]).toEqual([true, policyTable()]);
  });

  it('wait the listed waits in turn, then the last, and give up by count or by time as declared', () => {
    const email = POLICIES.link_email;
    expect([1, 2, 5, 6, 9].map((n) => waitMs(email, n))).toEqual([
      email.waits[0],
      email.waits[1],
      email.waits[4],
      email.waits[4],
      email.waits[4],
    ]);
    expect([email.attempts - 1, email.attempts].map((n) => givesUp(email, n))).toEqual([false, true]);
    const hooks = POLICIES.webhook_delivery;
    expect([givesUp(hooks, 1000, hooks.forMs - 1), givesUp(hooks, 1, hooks.forMs)]).toEqual([false, true]);
    // 10 s doubling, at most an hour
    expect([1, 2, 3, 10, 20].map((n) => waitMs(hooks, n))).toEqual([10_000, 20_000, 40_000, 3_600_000, 3_600_000]);
  });
});
