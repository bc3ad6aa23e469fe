/**
 * What a failure of the machinery under a request means for its client. Two kinds are nobody's
 * bug and pass on their own, so they are answered as such on every route rather than as a `500`:
 * - the disk cannot be written (full, read-only, failing), whether the data dir's files, SQLite's or
 *   PostgreSQL's: `507 insufficient_storage`;
 * - the database is away for a moment (restarting, unreachable, out of connections, locked past
 *   its busy timeout): `503 database_unavailable`.
 * Both carry Retry-After. On a full disk nothing of the request was kept (a write fails whole: a
 * transaction, or a file written before any record names it); a database cut off in the middle of
 * a commit may have kept it, so that answer says to retry with the same Idempotency-Key.
 */
import { InsufficientStorageError, UnavailableError } from './errors';

/** Node's codes for a file system that cannot take a write. */
const DISK_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);
/** PostgreSQL's disk_full. */
const PG_DISK = new Set(['53100']);
/**
 * PostgreSQL's codes for "not now": the connection failed (class 08), the server is shutting down
 * or starting (57P01–57P03), too many connections (53300), a read-only standby after a failover
 * (25006).
 */
const PG_AWAY = /^(08\d\d\d|57P0[1-3]|53300|25006)$/;
/**
 * Node's codes for a connection that could not be made or was cut: the database away only when
 * the database's driver raised them (markDatabaseError), not a mail server, a bucket or a client.
 */
const NET_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const FROM_DATABASE = Symbol('raised by the database driver');

/** Told of each failure marked here: src/metrics.ts counts them (set when it loads; render threads never load it). */
export const dependencyFailures = { count: (_dependency: 'database' | 'storage'): void => undefined };

/** Marks an error as raised by the database's driver (src/db does, for PostgreSQL's pool and connections). */
export function markDatabaseError(err: unknown): unknown {
  // a broken rule (a unique key taken by a concurrent write, class 23) is the data's answer, not a fault
  const code = (err as { code?: unknown } | null)?.code;
  if (!(typeof code === 'string' && code.startsWith('23'))) dependencyFailures.count('database');
  if (err && typeof err === 'object') (err as Record<symbol, boolean>)[FROM_DATABASE] = true;
  return err;
}
const FROM_STORAGE = Symbol('raised by the object storage');

/** Marks an error as the object storage's answer (src/storage does, for every S3 call). */
export function markStorageError(err: unknown): unknown {
  dependencyFailures.count('storage');
  if (err && typeof err === 'object') (err as Record<symbol, boolean>)[FROM_STORAGE] = true;
  return err;
}

/** node-postgres says these in words only. */
const PG_CUT =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/** What a client waits before trying again. */
const FULL_RETRY_SECONDS = 60;
const AWAY_RETRY_SECONDS = 5;

/** The error and the errors it was caused by, outermost first. */
function* chain(err: unknown): Generator<{ code?: unknown; message?: unknown }> {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 10; depth++) {
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}

/** Whether a failure is the disk refusing a write (full, read-only, failing): SQLite's, PostgreSQL's or the files'. */
export function isDiskFailure(err: unknown): boolean {
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (DISK_ERRNO.has(code) || PG_DISK.has(code)) return true;
    if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_IOERR')) return true;
  }
  return false;
}

/** Whether a failure is the database being away for a moment. */
function isDatabaseAway(err: unknown): boolean {
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (PG_AWAY.test(code) || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_')) return true;
    if ((e as Record<symbol, unknown>)[FROM_DATABASE] && (NET_ERRNO.has(code) || PG_CUT.test(String(e.message))))
      return true;
  }
  return false;
}

/** The answer for a failure of the disk or the database underneath; undefined for anything else (a bug: 500). */
export function outageOf(err: unknown): UnavailableError | undefined {
  if (isDiskFailure(err))
    return new InsufficientStorageError(
      'The server cannot write to its disk now (full or read-only), so nothing of this request was kept. Send it again later (with the same Idempotency-Key where you gave one). Operators: free space where DATA_DIR or the database keeps its files; /readyz answers 200 again once writes work.',
      FULL_RETRY_SECONDS,
      { cause: err },
    );
  if (isDatabaseAway(err))
    return new UnavailableError(
      'database_unavailable',
      'The database does not answer now (restarting or unreachable). Send the request again in a few seconds, with the same Idempotency-Key where you gave one: that finishes what it may have begun, once.',
      AWAY_RETRY_SECONDS,
      { cause: err },
    );
  const storage = [...chain(err)].find((e) => (e as Record<symbol, unknown>)[FROM_STORAGE]);
  if (storage)
    return new UnavailableError(
      'storage_unavailable',
      `The document storage does not take the document now (${String((storage as { name?: string }).name ?? 'no answer')}). Send the request again in a few seconds, with the same Idempotency-Key where you gave one: the render made is stored then, not made again. Operators: \`npx paperlink doctor\` says what the storage answers.`,
      AWAY_RETRY_SECONDS,
      { cause: err },
    );
  return undefined;
}

/**
 * Whether this process can write, for /readyz: it hears of every write the disk refused (the
 * requests' and the background work's), and from then on /readyz tries a small write of its own
 * (probeWrites: a row, and a file where the documents go) each time it is asked, until one goes
 * through: ready again once space is back, without a restart. While nothing was refused it costs
 * nothing.
 */
export class WriteHealth {
  /** Writes refused so far; a probe clears them only if none was refused while it ran. */
  private refused = 0;
  private cleared = 0;

  constructor(private readonly probe: () => Promise<void>) {}

  /** Tells it of a failure; only a refused write counts. */
  noticed(err: unknown): void {
    if (err instanceof InsufficientStorageError || isDiskFailure(err)) this.refused++;
  }

  /** Undefined when writes work; the answer to give while they do not. */
  async check(): Promise<UnavailableError | undefined> {
    const seen = this.refused;
    if (seen === this.cleared) return undefined;
    try {
      await this.probe();
      this.cleared = seen;
      return undefined;
    } catch (err) {
      // a probe that fails for another reason (a bucket refusing this server) says so, as itself
      return (
        outageOf(err) ??
        new UnavailableError(
          'write_failed',
          'A write of this server was refused for a full or read-only disk, and a small write of its own fails now for another reason: see the server log.',
          FULL_RETRY_SECONDS,
          { cause: err },
        )
      );
    }
  }
}
