/**
 * Persistence: one Kysely query layer over SQLite (the embedded default: a file in the data dir,
 * WAL, fsync on commit) and PostgreSQL (DATABASE_URL). Migrations run when the database opens.
 */
import { inspect } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import type SQLiteTypes from 'better-sqlite3';
import SQLite from './sqlite-module';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type Compilable,
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type MigrationProvider,
  type QueryResult,
} from 'kysely';
import { Pool, type PoolClient } from 'pg';
import { migrationsFor } from './migrations';
import { isDiskFailure, markDatabaseError } from '../outage';
import type { Dialect, Schema } from './schema';
import type { Log } from '../log';

export type { Dialect } from './schema';
export type Db = Kysely<Schema>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /**
   * Runs a small write in a transaction. On SQLite, the writes of all requests that arrive in the
   * same turn of the event loop are committed together (group commit): one fsync for many, each
   * still exact and in order, each caller answered only once its group is durable. If the shared
   * transaction fails, each write of the group runs again in a transaction of its own, so a write
   * fails only for its own fault. A write must therefore be safe to run again after a rollback (it
   * only reads and writes through `trx`). On PostgreSQL each runs in its own transaction.
   */
  inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>;
  /** Where it is, for people: a file path or the PostgreSQL URL without its password. */
  location: string;
  /** Migrations this build has that the database has not run (0 once opened to migrate). */
  pending: number;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** postgres://… ; otherwise SQLite at `sqlitePath`. */
  databaseUrl?: string;
  sqlitePath?: string;
  /** false: run no migration, only count the ones this build would run (Database.pending). Default true. */
  migrate?: boolean;
  /** Called with each statement before it runs, on either database; a throw fails the statement (fault tests). */
  beforeStatement?: (sql: string) => void;
  /** Where a pooled connection that failed while idle is reported (PostgreSQL restarted): the pool drops it and opens another. */
  log?: Log;
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

/** The SQLite database of a data dir. */
export function sqliteFile(dataDir: string): string {
  return path.join(dataDir, 'paperlink.db');
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  let db: Db;
  let dialect: Dialect;
  let location: string;
  if (options.databaseUrl) {
    dialect = 'postgres';
    location = redactUrl(options.databaseUrl);
    const pool = new Pool({ connectionString: options.databaseUrl, max: 10 });
    // what the pool and its connections fail with is the database's (outage.ts tells the database
    // away from a mail server or a bucket away by it)
    const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<PoolClient> | undefined;
    (pool as { connect: unknown }).connect = (...args: unknown[]) =>
      args.length ? connect(...args) : connect()!.catch((err: unknown) => Promise.reject(markDatabaseError(err)));
    // an idle connection cut by the server (a restart, a failover) is an 'error' of the pool's: without
    // a listener it would end the process; the pool has dropped it already and connects anew
    pool.on('error', (err) =>
      options.log?.(`database: an idle connection failed (${err.message}); reconnecting`, { err }),
    );
    const before = options.beforeStatement;
    pool.on('connect', (client) => {
      // a connection cut while it is checked out fails its query, and also emits 'error' on its client,
      // which the pool does not listen to then: without a listener that would end the process
      client.on('error', () => undefined);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
        before?.(typeof text === 'string' ? text : String((text as { text?: string }).text));
        const result = query(text, ...rest);
        return result instanceof Promise
          ? result.catch((err: unknown) => Promise.reject(markDatabaseError(err)))
          : result;
      };
    });
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
    const statements = cachingStatements(sqlite);
    const before = options.beforeStatement;
    const direct: Direct = {
      prepare: statements.prepare,
      inTransaction: false,
      before,
      open: () => sqlite.inTransaction,
    };
    // Kysely's path prepares (from the cache) each time it runs a statement
    const database = before
      ? { ...statements, prepare: (q: string) => (before(q), statements.prepare(q)) }
      : statements;
    db = new Kysely<Schema>({ dialect: new TrackedSqliteDialect({ database }, direct) });
    directs.set(db, direct);
  }
  trackCommits(db);
  const provider: MigrationProvider = { getMigrations: async () => migrationsFor(dialect) };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'paperlink_migrations',
    migrationLockTableName: 'paperlink_migrations_lock',
  });
  const inTransaction =
    dialect === 'sqlite'
      ? groupCommit(db, directs.get(db)!)
      : <T>(work: (trx: Db) => Promise<T>) => db.transaction().execute(work);
  const database = { db, dialect, location, inTransaction, close: () => db.destroy() };
  // looking, not changing (paperlink doctor): how many migrations this build would run
  if (options.migrate === false) {
    const pending = (
      await migrator.getMigrations().catch(async (err: unknown) => {
        await db.destroy();
        throw err;
      })
    ).filter((m) => !m.executedAt).length;
    return { ...database, pending };
  }
  const { error } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    throw new Error(
      `The database at ${location} could not be migrated: ${error instanceof Error ? error.message : inspect(error)}`,
      { cause: error },
    );
  }
  return { ...database, pending: 0 };
}

/** What runs once each transaction of a database opened here has committed (afterCommit), by transaction. */
const commitHooks = new WeakMap<Db, (() => void)[]>();

/** Makes every transaction of `db` run its afterCommit hooks once it has committed (never when it rolls back). */
function trackCommits(db: Db): void {
  const begin = db.transaction.bind(db);
  db.transaction = () => {
    const builder = begin();
    const execute = builder.execute.bind(builder);
    builder.execute = (async (work: (trx: Db) => Promise<unknown>) => {
      const hooks: (() => void)[] = [];
      const result = await execute((trx) => {
        commitHooks.set(trx, hooks);
        return work(trx);
      });
      // committed: a hook that throws must not make it look failed (a group commit would write again)
      for (const hook of hooks)
        try {
          hook();
        } catch (err) {
          process.emitWarning(`an after-commit hook failed: ${String(err)}`);
        }
      return result;
    }) as typeof builder.execute;
    return builder;
  };
}

/**
 * Runs `fn` once what `db` wrote is visible to every connection: when `db` is a transaction, after
 * it commits (not at all if it rolls back, e.g. a group commit's shared transaction that failed:
 * each write runs again in its own, which calls this again); otherwise on the next turn. For
 * telling another part of the process to look for what was written (a poke read before the
 * commit finds nothing, and nothing pokes again).
 */
export function afterCommit(db: Db, fn: () => void): void {
  const hooks = commitHooks.get(db);
  if (hooks) hooks.push(fn);
  else setImmediate(fn);
}

const MAX_STATEMENTS = 500;

/** Rows one housekeeping statement deletes at most: a short hold of SQLite's write lock. */
export const PURGE_BATCH = 1000;

/**
 * Runs `deleteBatch(limit)` (a DELETE of at most `limit` rows, answering how many it deleted)
 * until one deletes fewer, letting requests in between: housekeeping never holds the write lock
 * for long, however much there is to delete. How many rows in all.
 */
export async function deleteInBatches(
  deleteBatch: (limit: number) => Promise<bigint | number>,
  batch = PURGE_BATCH,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = Number(await deleteBatch(batch));
    total += n;
    if (n < batch) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Kysely prepares every query anew; a prepared statement per SQL text is reused instead. */
function cachingStatements(sqlite: SQLiteTypes.Database): {
  close: () => void;
  prepare: (sql: string) => SQLiteTypes.Statement;
} {
  const cache = new Map<string, SQLiteTypes.Statement>();
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

/**
 * SQLite runs a statement synchronously on its one connection, and Kysely's own path to it (a
 * connection mutex, a provider, several promises per query) costs more than SQLite takes to run a
 * small prepared statement. A PreparedQuery runs its statement directly instead, where that is
 * exactly what Kysely would do: inside a grouped write's transaction (which holds the connection),
 * or on the database itself while no transaction is open on the connection (one statement,
 * autocommit). While one is open, a query outside it takes Kysely's path and waits for it, as
 * every other query does, so no one reads what a transaction has not committed.
 */
interface Direct {
  prepare: (sql: string) => SQLiteTypes.Statement;
  /** Whether a transaction is open on the connection (from BEGIN until COMMIT or ROLLBACK). */
  inTransaction: boolean;
  /** OpenOptions.beforeStatement: a statement run directly is prepared once, so it is told here each time. */
  before?: (sql: string) => void;
  /** Whether SQLite itself still has a transaction open on the connection. */
  open?: () => boolean;
}
const directs = new WeakMap<Db, Direct>();

class TrackedSqliteDriver extends SqliteDriver {
  constructor(
    config: ConstructorParameters<typeof SqliteDriver>[0],
    private readonly direct: Direct,
  ) {
    super(config);
  }
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    this.direct.inTransaction = true;
    try {
      // IMMEDIATE: the write lock is taken (waiting up to busy_timeout) at BEGIN, not at the first
      // write, where a second process's transaction would make one of them fail at once
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    } catch (err) {
      this.direct.inTransaction = false;
      throw err;
    }
  }
  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    // a failed COMMIT leaves the transaction open until Kysely rolls it back
    await super.commitTransaction(connection);
    this.direct.inTransaction = false;
  }
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      // SQLite rolls a transaction back itself on some errors (a full disk, an I/O error): a ROLLBACK
      // then would fail ("no transaction is active") and hide the error that ended it
      if (this.direct.open?.() === false) return;
      await super.rollbackTransaction(connection);
    } finally {
      this.direct.inTransaction = false;
    }
  }
}

/**
 * SQLite changes its schema inside a transaction as it changes rows, though Kysely's adapter says it
 * cannot: with this, the migrations to run are run in one transaction, so one that fails halfway,
 * or a process stopped during it, leaves the database as it was (0029 moves every template's
 * files: half-moved, the next start would fail on tables that already exist).
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class TrackedSqliteDialect extends SqliteDialect {
  constructor(
    private readonly sqliteConfig: ConstructorParameters<typeof SqliteDialect>[0],
    private readonly direct: Direct,
  ) {
    super(sqliteConfig);
  }
  override createDriver(): Driver {
    return new TrackedSqliteDriver(this.sqliteConfig, this.direct);
  }
  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/** A statement run directly, answered as Kysely answers it. */
function allRows<O>(stmt: SQLiteTypes.Statement, parameters: readonly unknown[]): QueryResult<O> {
  if (stmt.reader) return { rows: stmt.all(parameters) as O[] };
  const { changes, lastInsertRowid } = stmt.run(parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** Its first row only (a RETURNING statement makes all its changes at its first step, as SQLite documents). */
function firstRow<O>(stmt: SQLiteTypes.Statement, parameters: readonly unknown[]): O | undefined {
  if (stmt.reader) return stmt.get(parameters) as O | undefined;
  stmt.run(parameters);
  return undefined;
}

function rowsOf<O>(result: QueryResult<O>): QueryResult<O> {
  return result;
}

function firstOf<O>(result: QueryResult<O>): O | undefined {
  return result.rows[0];
}

const MAX_GROUP = 500;

function groupCommit(db: Db, direct: Direct): <T>(work: (trx: Db) => Promise<T>) => Promise<T> {
  type Item = { work: (trx: Db) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  let queue: Item[] = [];
  let scheduled = false;
  // a transaction holds the connection: the prepared statements run in it run directly
  const inside: Direct = { prepare: direct.prepare, inTransaction: false, before: direct.before, open: direct.open };
  const transaction = <T>(fn: (trx: Db) => Promise<T>) =>
    db.transaction().execute(async (trx) => {
      directs.set(trx, inside);
      try {
        return await fn(trx);
      } finally {
        directs.delete(trx);
      }
    });
  const alone = (item: Item) => transaction(item.work).then(item.resolve, item.reject);
  const flush = async () => {
    while (queue.length) {
      const group = queue.slice(0, MAX_GROUP);
      queue = queue.slice(MAX_GROUP);
      if (group.length === 1) {
        await alone(group[0]);
        continue;
      }
      let results: unknown[];
      try {
        results = await transaction(async (trx) => {
          const out: unknown[] = [];
          for (const item of group) out.push(await item.work(trx));
          return out;
        });
      } catch (err) {
        // the disk refused the group (full, read-only): it would refuse each write alone as well
        if (isDiskFailure(err)) {
          for (const item of group) item.reject(err);
          continue;
        }
        // one write failed (a unique key, a check) and took the group's transaction with it: each
        // write runs again alone, so only the one at fault fails and the others still commit
        for (const item of group) await alone(item);
        continue;
      }
      group.forEach((item, i) => item.resolve(results[i]));
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
    return this.run(db, args, allRows<O>, rowsOf<O>);
  }

  first(db: Db, args: A): Promise<O | undefined> {
    return this.run(db, args, firstRow<O>, firstOf<O>);
  }

  /** Runs the statement itself where that is what Kysely would do (see Direct), else through Kysely. */
  private run<R>(
    db: Db,
    args: A,
    direct: (stmt: SQLiteTypes.Statement, parameters: readonly unknown[]) => R,
    viaKysely: (result: QueryResult<O>) => R,
  ): Promise<R> {
    const parameters = this.values(args);
    const connection = directs.get(db);
    if (!connection || connection.inTransaction)
      return db.executeQuery<O>({ ...this.compiled, parameters }).then(viaKysely);
    try {
      connection.before?.(this.compiled.sql);
      return Promise.resolve(direct(this.statement(connection), parameters));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private values(args: A): readonly unknown[] {
    return this.compiled.parameters.map((p, i) => {
      const slot = this.slots[i];
      return slot === undefined ? p : args[slot];
    });
  }

  // the connection's statement for this query, looked up once per connection
  private prepared?: { prepare: Direct['prepare']; stmt: SQLiteTypes.Statement };
  private statement(direct: Direct): SQLiteTypes.Statement {
    if (this.prepared?.prepare !== direct.prepare)
      this.prepared = { prepare: direct.prepare, stmt: direct.prepare(this.compiled.sql) };
    return this.prepared.stmt;
  }
}

/** Whether an error is a unique-constraint violation, in either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export type { Schema };
