/** Rows and requests the tests write as the service would. */
import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../../src/db';
import type { MagicLinkRow, Schema } from '../../src/db/schema';
import { root } from './fixtures';

/** The example postcard's sample merge values (examples/postcard/sample.json). */
export const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

/** An active link, e-mailed, whose workflow has seen it (no mark). */
export function linkRow(id: string, now: Date, patch: Partial<MagicLinkRow> = {}): MagicLinkRow {
  return {
    id,
    document_id: 'doc_none',
    token_hash: `hash-${id}`,
    token_key: null,
    recipient_email: 'a@example.com',
    auth_email: 'a@example.com',
    auth_type: 'email',
    settings: '{}',
    max_views: null,
    views_used: 0,
    status: 'active',
    send_error: null,
    send_attempts: 1,
    created_by_key_id: null,
    created_at: now.toISOString(),
    sent_at: now.toISOString(),
    opened_at: null,
    expires_at: new Date(now.getTime() + 86_400_000).toISOString(),
    ended_at: null,
    ended_reason: null,
    render_id: null,
    token_generation: 0,
    sending_until: null,
    sending_by: null,
    sending_epoch: 0,
    claimed_by: null,
    claimed_until: null,
    claimed_epoch: 0,
    wake_at: null,
    notices: null,
    send_retry_at: null,
    ...patch,
  };
}

/** How many rows `table` holds now. */
export async function rowCount(db: Db, table: keyof Schema): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((e) => e.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
