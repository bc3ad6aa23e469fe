/**
 * Versioned migrations, run at start in order; each runs once per database. Add new ones at the
 * end with the next number; never edit one that has shipped.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './index';

type Step = (db: Kysely<unknown>, dialect: Dialect) => Promise<void>;

const blob = (d: Dialect) => (d === 'postgres' ? 'bytea' : 'blob');

export const MIGRATIONS: [string, Step][] = [
  [
    '0001_service',
    async (db, d) => {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('api_keys_prefix').on('api_keys').column('prefix').execute();

      await db.schema
        .createTable('templates')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('source', sql.raw(blob(d)), (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('template_assets')
        .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .addPrimaryKeyConstraint('template_assets_pk', ['template_id', 'path'])
        .execute();

      await db.schema
        .createTable('documents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('render_id', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('created_by_key_id', 'text')
        .addColumn('created_by_name', 'text')
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('storage', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('blobs')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('idempotency')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('body', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_pk', ['scope', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_expires').on('idempotency').column('expires_at').execute();

      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  ],
];

export function migrationsFor(dialect: Dialect): Record<string, Migration> {
  return Object.fromEntries(MIGRATIONS.map(([name, up]) => [name, { up: (db: Kysely<unknown>) => up(db, dialect) }]));
}
