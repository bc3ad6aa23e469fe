/**
 * Persistence: one Kysely query layer over SQLite (the embedded default: a file in the data dir,
 * WAL, fsync on commit) and PostgreSQL (DATABASE_URL). Migrations run when the database opens.
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider } from 'kysely';
import { Pool } from 'pg';
import { migrationsFor } from './migrations';
import type { Schema } from './schema';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Schema>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /** Where it is, for people: a file path or the PostgreSQL URL without its password. */
  location: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** postgres://… ; otherwise SQLite at `sqlitePath`. */
  databaseUrl?: string;
  sqlitePath?: string;
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  let db: Db;
  let dialect: Dialect;
  let location: string;
  if (options.databaseUrl) {
    dialect = 'postgres';
    location = redactUrl(options.databaseUrl);
    const pool = new Pool({ connectionString: options.databaseUrl, max: 10 });
    db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  } else {
    dialect = 'sqlite';
    const file = options.sqlitePath ?? ':memory:';
    location = file;
    if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before it returns, so an answer we sent survives a power cut too.
    sqlite.pragma('synchronous = FULL');
    sqlite.pragma('busy_timeout = 10000');
    sqlite.pragma('foreign_keys = ON');
    db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
  }
  const provider: MigrationProvider = { getMigrations: async () => migrationsFor(dialect) };
  const { error } = await new Migrator({ db, provider, migrationTableName: 'paperlink_migrations', migrationLockTableName: 'paperlink_migrations_lock' }).migrateToLatest();
  if (error) {
    await db.destroy();
    throw new Error(`The database at ${location} could not be migrated: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { db, dialect, location, close: () => db.destroy() };
}

/** Whether an error is a unique-constraint violation, in either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export type { Schema };
