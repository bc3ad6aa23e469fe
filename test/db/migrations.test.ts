/**
 * Upgrading a database whose links and postcards were made before wake-up times (migration 0015):
 * a sent link with views left waits for its deadline (none: for a change), every other link not
 * ended and every postcard not rendered is due at once, and what an older process claimed is free.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import { openDatabase } from '../../src/db';
import { migrationsFor } from '../../src/db/migrations';
import SQLite from '../../src/db/sqlite-module';

describe('migration 0015 on links and postcards made before it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-migrate-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives each what it waits for', async () => {
    const file = path.join(dir, 'paperlink.db');
    const old = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
    const migrations = migrationsFor('sqlite');
    const { error } = await new Migrator({
      db: old,
      provider: { getMigrations: async () => migrations },
      migrationTableName: 'paperlink_migrations',
      migrationLockTableName: 'paperlink_migrations_lock',
    }).migrateTo('0014_purge_indexes');
    expect(error).toBeUndefined();
    const created = '2026-11-01T10:00:00.000Z';
    const expires = '2026-12-01T10:00:00.000Z';
    const link = (
      id: string,
      status: string,
      sent: boolean,
      maxViews: number | null,
      used: number,
      deadline: string | null,
    ) =>
      sql`insert into magic_links (id, document_id, token_hash, recipient_email, auth_email, auth_type, settings,
          max_views, views_used, status, send_attempts, created_at, sent_at, expires_at, token_generation, claimed_by)
        values (${id}, 'doc_1', ${`h-${id}`}, 'a@example.com', 'a@example.com', 'email', '{}', ${maxViews}, ${used},
          ${status}, ${sent ? 1 : 0}, ${created}, ${sent ? created : null}, ${deadline}, 0, 42)`.execute(old);
    await link('ml_sent_deadline', 'active', true, null, 0, expires);
    await link('ml_sent_views_only', 'active', true, 3, 1, null);
    await link('ml_views_used', 'active', true, 3, 3, expires);
    await link('ml_unsent', 'active', false, null, 0, expires);
    await link('ml_failed', 'send_failed', false, null, 0, expires);
    await link('ml_ended', 'expired', true, null, 0, expires);
    await sql`insert into templates (id, name, format, source, variables, size, created_at, updated_at)
      values ('tmpl_1', 't', 'xml', '<document/>', '[]', 11, ${created}, ${created})`.execute(old);
    const postcard = (id: string, status: string) =>
      sql`insert into postcards (id, status, template_id, contact, address, custom, token_id, warnings, created_at, updated_at, claimed_by, render_attempts)
        values (${id}, ${status}, 'tmpl_1', '{}', '{}', '{}', 'tok_1', '[]', ${created}, ${created}, 42, 0)`.execute(
        old,
      );
    await postcard('pc_received', 'received');
    await postcard('pc_rendered', 'rendered');
    await old.destroy();

    const database = await openDatabase({ sqlitePath: file });
    try {
      const links = await database.db
        .selectFrom('magic_links')
        .select(['id', 'wake_at', 'claimed_by'])
        .orderBy('id')
        .execute();
      expect(Object.fromEntries(links.map((l) => [l.id, l.wake_at]))).toEqual({
        ml_ended: null,
        ml_failed: created,
        ml_sent_deadline: expires,
        ml_sent_views_only: null,
        ml_unsent: created,
        ml_views_used: created,
      });
      expect(links.every((l) => l.claimed_by === null)).toBe(true);
      const postcards = await database.db
        .selectFrom('postcards')
        .select(['id', 'wake_at', 'claimed_by'])
        .orderBy('id')
        .execute();
      expect(postcards).toEqual([
        { id: 'pc_received', wake_at: created, claimed_by: null },
        { id: 'pc_rendered', wake_at: null, claimed_by: null },
      ]);
    } finally {
      await database.close();
    }
  });
});
