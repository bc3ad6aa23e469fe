/**
 * What grows with use and is kept only so long: a link's access log, and the events with their
 * webhook deliveries and attempts. Housekeeping deletes what is older than its setting
 * (ACCESS_LOG_RETENTION_DAYS, EVENT_RETENTION_DAYS; 90 days each by default), a batch at a time.
 * Ids sort by creation time, so "older than" is a range of the primary key. An event is deleted
 * with its deliveries and their attempts, and only once none of its deliveries is pending: what is
 * still being delivered stays, however old.
 */
import type { HistoryRetention } from './config';
import type { Db } from './db';
import { deleteInBatches } from './db';
import { firstIdAt } from './ids';

const DAY = 86_400_000;

export async function purgeHistory(
  db: Db,
  inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>,
  now: Date,
  keep: HistoryRetention,
): Promise<{ access_log: number; events: number }> {
  const before = (prefix: string, days: number) => firstIdAt(prefix, new Date(now.getTime() - days * DAY));
  const oldEntry = before('ev', keep.accessLogDays);
  const access_log = await deleteInBatches(
    async (limit) =>
      (
        await db
          .deleteFrom('link_events')
          .where('id', 'in', (eb) => eb.selectFrom('link_events').select('id').where('id', '<', oldEntry).limit(limit))
          .executeTakeFirst()
      ).numDeletedRows,
  );
  const oldEvent = before('evt', keep.eventDays);
  const events = await deleteInBatches((limit) =>
    inTransaction(async (trx) => {
      const ids = (
        await trx
          .selectFrom('events')
          .select('id')
          .where('id', '<', oldEvent)
          // written out to its subscribers, none of which still waits for it
          .where('fanned_out', '=', 1)
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('deliveries')
                  .select('deliveries.id')
                  .whereRef('deliveries.event_id', '=', 'events.id')
                  .where('deliveries.status', '=', 'pending'),
              ),
            ),
          )
          .orderBy('id')
          .limit(limit)
          .execute()
      ).map((r) => r.id);
      if (!ids.length) return 0;
      await trx
        .deleteFrom('delivery_attempts')
        .where('delivery_id', 'in', (eb) => eb.selectFrom('deliveries').select('id').where('event_id', 'in', ids))
        .execute();
      await trx.deleteFrom('deliveries').where('event_id', 'in', ids).execute();
      return (await trx.deleteFrom('events').where('id', 'in', ids).executeTakeFirst()).numDeletedRows;
    }),
  );
  return { access_log, events };
}
