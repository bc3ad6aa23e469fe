/**
 * One shape for every claim on background work. A lease is three columns on the row of the work's
 * subject, `<name>_by`, `<name>_until` and `<name>_epoch`: the process holding it (its presence id,
 * src/db/presence.ts), when it runs out (null: for as long as that process lives), and how many
 * times it was taken. Every take bumps the epoch, and every write that completes, reschedules or
 * gives back the work is made `where <name>_epoch = <the epoch it took>`: a holder whose lease was
 * taken over (it ran out, or its process was presumed dead and another took the work) changes
 * nothing. Freeing a lease (its holder died, or stopped cleanly) does not bump the epoch: a holder
 * that was only presumed dead still finishes its work when nobody took it meanwhile.
 *
 * LEASES names each one: which table, which columns, and which due time a freed one makes due, so
 * that a sweep frees them all the same way. Each kind's retry policy is in src/flows/policies.ts.
 */
import { sql, type RawBuilder } from 'kysely';
import { iso } from '../clock';
import type { Db } from '../db';

export interface LeaseKind {
  readonly table: 'magic_links' | 'postcards' | 'postcard_handoffs' | 'deliveries' | 'idempotency';
  /** The columns' prefix: `<name>_by`, `<name>_until`, `<name>_epoch`. */
  readonly name: 'claimed' | 'sending';
  /** The row's due time, which a freed lease makes due now (unless it is due earlier). */
  readonly due?: 'wake_at';
  /** Whether the lease holds only while its process lives (no `until`): a process's own lease of work it is not running is freed too. */
  readonly whileAlive: boolean;
}

/** Every lease on background work, by the kind of work (the names of src/flows/policies.ts where a kind has a policy). */
export const LEASES = {
  /** A step of a link's lifecycle (embedded engine: src/engine/embedded.ts). */
  link_step: { table: 'magic_links', name: 'claimed', due: 'wake_at', whileAlive: true },
  /** A link's e-mail to its recipient (src/links/delivery.ts), on either engine. */
  link_email: { table: 'magic_links', name: 'sending', due: 'wake_at', whileAlive: false },
  /** A received postcard's render (embedded engine). */
  postcard_render: { table: 'postcards', name: 'claimed', due: 'wake_at', whileAlive: true },
  /** One attempt to hand a live postcard to its mail partner (src/postcards/handoff.ts). */
  postcard_handoff: { table: 'postcard_handoffs', name: 'claimed', whileAlive: false },
  /** One attempt of a webhook delivery (src/webhooks). */
  webhook_delivery: { table: 'deliveries', name: 'claimed', whileAlive: false },
  /** A request with an Idempotency-Key while it runs (src/idempotency.ts): a duplicate takes it over once it is free. */
  idempotent_request: { table: 'idempotency', name: 'claimed', whileAlive: false },
} as const satisfies Record<string, LeaseKind>;

export type LeaseName = keyof typeof LEASES;

/** A lease as taken: its epoch fences every write made under it. */
export interface Held {
  readonly id: string;
  readonly epoch: number;
}

const col = (kind: LeaseKind, part: 'by' | 'until' | 'epoch') => `${kind.name}_${part}`;

/** SQL: the lease is free at `now` (nobody holds it, or its time ran out). */
export function isFree(kind: LeaseKind, now: Date): RawBuilder<boolean> {
  const by = sql.ref(col(kind, 'by'));
  const until = sql.ref(col(kind, 'until'));
  return sql<boolean>`(${by} is null or (${until} is not null and ${until} <= ${iso(now)}))`;
}

/** SQL: the lease is still the one taken at `epoch`. */
export function isHeld(kind: LeaseKind, epoch: number): RawBuilder<boolean> {
  return sql<boolean>`${sql.ref(col(kind, 'epoch'))} = ${epoch}`;
}

/** The columns a take writes: `owner` holds it until `until` (null: while it lives), at the next epoch. */
export function taking(kind: LeaseKind, owner: number, until: Date | null): object {
  return {
    [col(kind, 'by')]: owner,
    [col(kind, 'until')]: until === null ? null : iso(until),
    [col(kind, 'epoch')]: sql`${sql.ref(col(kind, 'epoch'))} + 1`,
  };
}

/** The columns a give-back writes. */
export function freeing(kind: LeaseKind): object {
  return { [col(kind, 'by')]: null, [col(kind, 'until')]: null };
}

/** SQL: a row's due time, made due at `now` unless it is due earlier. */
function dueBy(column: string, now: Date): RawBuilder<string> {
  const due = sql.ref(column);
  return sql<string>`case when ${due} is null or ${due} > ${iso(now)} then ${iso(now)} else ${due} end`;
}

/**
 * Frees the leases of processes that are no longer alive (`live`: the presence ids alive now, the
 * caller's included), and the caller's own leases held while it lives on work it is not running
 * (`running`: the ids of its work under way), each of every kind; their work is due `now`. Reads
 * only held leases (each `<name>_by` column is indexed where it is set). How many it freed.
 */
export async function sweep(
  db: Db,
  owner: number,
  live: readonly number[],
  now: Date,
  running: ReadonlySet<string>,
): Promise<number> {
  const alive = live.includes(owner) ? [...live] : [...live, owner];
  const mine = [...running];
  let freed = 0;
  for (const kind of Object.values(LEASES) as LeaseKind[]) {
    const by = sql.ref(col(kind, 'by'));
    const own = kind.whileAlive
      ? mine.length
        ? sql`or (${by} = ${owner} and id not in (${sql.join(mine)}))`
        : sql`or ${by} = ${owner}`
      : sql``;
    freed += await free(db, kind, now, sql`${by} is not null and (${by} not in (${sql.join(alive)}) ${own})`);
  }
  return freed;
}

/** Frees the leases of `kind` that `where` picks, their work due `now`; how many. */
async function free(db: Db, kind: LeaseKind, now: Date, where: RawBuilder<unknown>): Promise<number> {
  const set = kind.due ? sql`, ${sql.ref(kind.due)} = ${dueBy(kind.due, now)}` : sql``;
  const r = await sql`update ${sql.table(kind.table)} set ${sql.ref(col(kind, 'by'))} = null,
    ${sql.ref(col(kind, 'until'))} = null ${set} where ${where}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** Gives back every lease `owner` holds (a clean stop): the others take the work at once. */
export async function releaseAll(db: Db, owner: number, now: Date): Promise<void> {
  for (const kind of Object.values(LEASES) as LeaseKind[])
    await free(db, kind, now, sql`${sql.ref(col(kind, 'by'))} = ${owner}`);
}
