/**
 * Persistence: one Kysely query layer over SQLite (the embedded default: a file in the data dir,
 * WAL, fsync on commit) and PostgreSQL (DATABASE_URL). Migrations run when the database opens.
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Compilable, type CompiledQuery, type MigrationProvider, type QueryResult } from 'kysely';
import { Pool } from 'pg';
import { migrationsFor } from './migrations';
import type { Schema } from './schema';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Schema>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /**
   * Runs a small write in a transaction. On SQLite, the writes of all requests that arrive in the
   * same turn of the event loop are committed together (group commit): one fsync for many, each
   * still exact and in order, each caller answered only once its group is durable. If the shared
   * transaction fails, every write in it fails. On PostgreSQL each runs in its own transaction.
   */
  inTransaction<T>(work: (trx: Db) => Promise<T>): Promise<T>;
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
    db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }) });
  }
  const provider: MigrationProvider = { getMigrations: async () => migrationsFor(dialect) };
  const { error } = await new Migrator({ db, provider, migrationTableName: 'paperlink_migrations', migrationLockTableName: 'paperlink_migrations_lock' }).migrateToLatest();
  if (error) {
    await db.destroy();
    throw new Error(`The database at ${location} could not be migrated: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const inTransaction = dialect === 'sqlite' ? groupCommit(db) : <T>(work: (trx: Db) => Promise<T>) => db.transaction().execute(work);
  return { db, dialect, location, inTransaction, close: () => db.destroy() };
}

const MAX_STATEMENTS = 500;

/** Kysely prepares every query anew; a prepared statement per SQL text is reused instead. */
function cachingStatements(sqlite: SQLite.Database): { close(): void; prepare(sql: string): SQLite.Statement } {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql) => {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = sqlite.prepare(sql);
        if (cache.size >= MAX_STATEMENTS) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

const MAX_GROUP = 500;

function groupCommit(db: Db): <T>(work: (trx: Db) => Promise<T>) => Promise<T> {
  type Item = { work: (trx: Db) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  let queue: Item[] = [];
  let scheduled = false;
  const flush = async () => {
    while (queue.length) {
      const group = queue.slice(0, MAX_GROUP);
      queue = queue.slice(MAX_GROUP);
      try {
        const results = await db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const item of group) out.push(await item.work(trx));
          return out;
        });
        group.forEach((item, i) => item.resolve(results[i]));
      } catch (err) {
        for (const item of group) item.reject(err);
      }
    }
    scheduled = false;
  };
  return <T>(work: (trx: Db) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!scheduled) {
        scheduled = true;
        // wait for the rest of this turn: the requests already read from the sockets join the group
        setImmediate(() => void flush());
      }
    });
}

/**
 * A query built and compiled once, then run with new values: Kysely builds and compiles a query on
 * every call, which costs more than SQLite takes to run a small one. For the hottest paths (a
 * Magic Link view, a postcard intake). `build` gets `arg(name)`, a placeholder for a value given
 * at each run; every other value in the query is fixed. Compiled with the database it is made
 * for; runs on it or on any transaction of it.
 */
export class PreparedQuery<A extends Record<string, unknown>, O> {
  private readonly compiled: CompiledQuery<O>;
  private readonly slots: (keyof A | undefined)[];

  constructor(db: Db, build: (db: Db, arg: <K extends keyof A>(name: K) => A[K]) => Compilable<O>) {
    const marks = new Map<unknown, keyof A>();
    const arg = <K extends keyof A>(name: K): A[K] => {
      const mark = `\u0000arg:${String(name)}`;
      marks.set(mark, name);
      return mark as unknown as A[K];
    };
    this.compiled = build(db, arg).compile();
    this.slots = this.compiled.parameters.map((p) => marks.get(p));
  }

  execute(db: Db, args: A): Promise<QueryResult<O>> {
    const parameters = this.compiled.parameters.map((p, i) => {
      const slot = this.slots[i];
      return slot === undefined ? p : args[slot];
    });
    return db.executeQuery<O>({ ...this.compiled, parameters });
  }

  async first(db: Db, args: A): Promise<O | undefined> {
    return (await this.execute(db, args)).rows[0];
  }
}

/** Whether an error is a unique-constraint violation, in either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export type { Schema };
