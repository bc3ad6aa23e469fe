/**
 * Upgrading a database: links and postcards made before wake-up times (migration 0015), links
 * that ended before they kept why (0027), and templates stored before versions (0029). Before 0015:
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
import { linkInfo } from '../../src/links/model';
import { FakeClock } from '../../src/clock';
import { inProcessRenderer } from '../../src/templates/pool';
import { TemplateStore } from '../../src/templates/store';
import { png } from '../support/fixtures';
import { readPdf } from '../support/pdf';

/** A SQLite database at `file` with the migrations up to `version` applied, as an older release left it. */
async function migratedTo(file: string, version: string): Promise<Kysely<unknown>> {
  const old = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
  const migrations = migrationsFor('sqlite');
  const { error } = await new Migrator({
    db: old,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'paperlink_migrations',
    migrationLockTableName: 'paperlink_migrations_lock',
  }).migrateTo(version);
  expect(error).toBeUndefined();
  return old;
}

describe('migration 0015 on links and postcards made before it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-migrate-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives each what it waits for', async () => {
    const file = path.join(dir, 'paperlink.db');
    const old = await migratedTo(file, '0014_purge_indexes');
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

describe('migration 0027 on links that ended before it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-migrate-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps why each ended where its row can tell: revoked, or ended with its document', async () => {
    const file = path.join(dir, 'paperlink.db');
    const old = await migratedTo(file, '0026_leases');
    const at = '2026-11-01T10:00:00.000Z';
    await sql`insert into documents (id, render_id, name, status, template_id, size, sha256, storage, created_at)
      values ('doc_kept', 'rnd_1', 'd', 'generated', 'tmpl_1', 1, 'x', 'files', ${at})`.execute(old);
    const link = (id: string, documentId: string, status: string, maxViews: number | null, used: number) =>
      sql`insert into magic_links (id, document_id, token_hash, recipient_email, auth_email, auth_type, settings,
          max_views, views_used, status, send_attempts, created_at, sent_at, expires_at, token_generation)
        values (${id}, ${documentId}, ${`h-${id}`}, 'a@example.com', 'a@example.com', 'email', '{}', ${maxViews},
          ${used}, ${status}, 1, ${at}, ${at}, null, 0)`.execute(old);
    await link('ml_revoked', 'doc_kept', 'revoked', 3, 0);
    await link('ml_with_document', 'doc_gone', 'expired', 3, 0);
    await link('ml_views', 'doc_kept', 'expired', 3, 3);
    await link('ml_active', 'doc_kept', 'active', 3, 1);
    await old.destroy();

    const database = await openDatabase({ sqlitePath: file });
    try {
      const rows = await database.db.selectFrom('magic_links').selectAll().orderBy('id').execute();
      expect(Object.fromEntries(rows.map((r) => [r.id, r.ended_reason]))).toEqual({
        ml_active: null,
        ml_revoked: 'revoked',
        ml_views: null,
        ml_with_document: 'document_deleted',
      });
      // what the API says: the rest read from the row
      expect(Object.fromEntries(rows.map((r) => [r.id, linkInfo(r).ended_reason]))).toEqual({
        ml_active: null,
        ml_revoked: 'revoked',
        ml_views: 'views',
        ml_with_document: 'document_deleted',
      });
    } finally {
      await database.close();
    }
  });
});

describe('migration 0029 on templates stored before versions', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-migrate-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps each template, with its files, as its version 1, current, and renders it', async () => {
    const file = path.join(dir, 'paperlink.db');
    const old = await migratedTo(file, '0028_document_follows_links');
    const at = '2026-11-01T10:00:00.000Z';
    const source = '<document><body><image src="mark.png" width="1in" alt="m"/><p>Hi {{name}}</p></body></document>';
    await sql`insert into templates (id, name, format, source, variables, defaults, size, created_at, updated_at)
      values ('tmpl_old', 'Old', 'xml', ${Buffer.from(source)}, '["name"]', '{}', ${source.length}, ${at}, ${at})`.execute(
      old,
    );
    await sql`insert into template_assets (template_id, path, bytes) values ('tmpl_old', 'mark.png', ${png})`.execute(
      old,
    );
    await sql`insert into documents (id, render_id, name, status, template_id, size, sha256, storage, created_at)
      values ('doc_old', 'rnd_old', 'd', 'generated', 'tmpl_old', 1, 'x', 'files', ${at})`.execute(old);
    await old.destroy();

    const database = await openDatabase({ sqlitePath: file });
    try {
      const store = new TemplateStore(database.db, new FakeClock(), inProcessRenderer);
      expect(await store.get('tmpl_old')).toMatchObject({
        version: 1,
        format: 'xml',
        variables: ['name'],
        size: source.length,
      });
      expect((await store.versions('tmpl_old', { limit: 10 })).data.map((v) => [v.version, v.current])).toEqual([
        [1, true],
      ]);
      const { template, version } = await store.resolve('tmpl_old');
      expect(version).toBe(1);
      const pdf = await inProcessRenderer.render(template, { name: 'Ann' });
      expect((await readPdf(pdf)).text).toContain('Hi Ann');
      const doc = await database.db
        .selectFrom('documents')
        .selectAll()
        .where('id', '=', 'doc_old')
        .executeTakeFirstOrThrow();
      expect(doc.template_version).toBeNull();
    } finally {
      await database.close();
    }
  });

  it('runs in one transaction: a migration that fails halfway leaves the database as it was, and runs again', async () => {
    const file = path.join(dir, 'halfway.db');
    const old = await migratedTo(file, '0028_document_follows_links');
    const at = '2026-11-01T10:00:00.000Z';
    await sql`insert into templates (id, name, format, source, variables, defaults, size, created_at, updated_at)
      values ('tmpl_kept', 'Kept', 'xml', ${Buffer.from('<document><body><p>Hi</p></body></document>')}, '[]', '{}', 1, ${at}, ${at})`.execute(
      old,
    );
    // something of the operator's own that 0029's dropping of templates.source cannot get past: it
    // fails after it has made the version tables, moved the rows and dropped template_assets
    await sql`create view operator_report as select id, source from templates`.execute(old);
    await old.destroy();

    await expect(openDatabase({ sqlitePath: file })).rejects.toThrow(/could not be migrated/);
    const after = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
    try {
      const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(after);
      const names = tables.rows.map((r) => r.name);
      expect(names).toContain('template_assets');
      expect(names).not.toContain('template_versions');
      const last = await sql<{
        name: string;
      }>`select name from paperlink_migrations order by name desc limit 1`.execute(after);
      expect(last.rows[0].name).toBe('0028_document_follows_links');
      await sql`drop view operator_report`.execute(after);
    } finally {
      await after.destroy();
    }
    const database = await openDatabase({ sqlitePath: file });
    try {
      expect(await new TemplateStore(database.db, new FakeClock(), inProcessRenderer).get('tmpl_kept')).toMatchObject({
        version: 1,
      });
    } finally {
      await database.close();
    }
  });
});
