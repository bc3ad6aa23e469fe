/**
 * Page analytics: how long each person looked at each page of a link. The viewer reports the page
 * it shows and for how long, in batches, over the viewing session's cookie; a report is bounded
 * (MAX_REPORT_PAGES pages, each a page the document has) and a sign-in can never report more time
 * than has passed since it began (plus REPORT_SLACK_MS), so a client cannot flood the figures.
 * Rows are one per link, address and page: what is held grows with the people and the pages, not
 * with the reports.
 */
import type { Clock } from '../clock';
import type { Db } from '../db';
import { ValidationError } from '../errors';
import { isObject } from '../guards';
import type { Viewer } from './model';
import type { Grant } from './sessions';

/** Pages one report may name. */
export const MAX_REPORT_PAGES = 50;
/** The highest page number taken. */
export const MAX_PAGE = 10_000;
/** What a sign-in may report beyond the time since it began (clocks differ, a report arrives late). */
export const REPORT_SLACK_MS = 60_000;

/** One person's time on a link's pages. */
export interface PageTime {
  email: string;
  /** Seconds on each page they looked at, by page number (from 1), one decimal. */
  pages: { page: number; seconds: number }[];
  seconds: number;
}

/**
 * Reads a report's pages: {"1": 5300, "2": 1200} (page number to milliseconds), each a page of the
 * document (1 to `pageCount`, at most MAX_PAGE); anything else is a 422.
 */
export function parseReport(body: unknown, pageCount: number): Map<number, number> {
  const pages = isObject(body) ? body.pages : undefined;
  const last = Math.min(pageCount, MAX_PAGE);
  const bad = () =>
    new ValidationError('Send {"pages": {"<page>": <milliseconds>, …}}.', [
      {
        field: 'pages',
        message: `must map up to ${MAX_REPORT_PAGES} page numbers of the document (1 to ${last}) to whole milliseconds`,
        code: 'invalid',
      },
    ]);
  if (!isObject(pages)) throw bad();
  const entries = Object.entries(pages);
  if (entries.length > MAX_REPORT_PAGES) throw bad();
  const out = new Map<number, number>();
  for (const [k, v] of entries) {
    const page = /^[1-9]\d{0,4}$/.test(k) ? Number(k) : 0;
    if (!page || page > last || typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 86_400_000) throw bad();
    if (v > 0) out.set(page, v);
  }
  return out;
}

export class LinkPageTimes {
  constructor(
    private readonly clock: Clock,
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T>,
  ) {}

  /**
   * Adds a report to the person's page times, within the time their sign-in has had: a report
   * claiming more is scaled down to what is left. Returns the milliseconds taken.
   */
  async report(grant: Grant, pages: Map<number, number>): Promise<number> {
    const claimed = [...pages.values()].reduce((a, b) => a + b, 0);
    if (!claimed) return 0;
    return this.inTransaction(async (trx) => {
      const now = this.clock.now().getTime();
      // the sign-in's row, held until commit (a row lock on PostgreSQL, the write lock on SQLite):
      // two reports of one sign-in at once take their turn, so the bound holds for both
      const session = await trx
        .updateTable('link_sessions')
        .set((e) => ({ reported_ms: e.ref('reported_ms') }))
        .where('token_hash', '=', grant.sessionHash)
        .returning('reported_ms')
        .executeTakeFirst();
      if (!session) return 0;
      const allowed = now - grant.signedInAt.getTime() + REPORT_SLACK_MS - Number(session.reported_ms);
      const taken = Math.max(0, Math.min(claimed, allowed));
      if (!taken) return 0;
      const scale = taken / claimed;
      await trx
        .updateTable('link_sessions')
        .set((e) => ({ reported_ms: e('reported_ms', '+', taken) }))
        .where('token_hash', '=', grant.sessionHash)
        .execute();
      for (const [page, ms] of pages) {
        const add = Math.round(ms * scale);
        if (!add) continue;
        await trx
          .insertInto('link_page_times')
          .values({ link_id: grant.linkId, email: grant.email, page, ms: add })
          .onConflict((c) =>
            c
              .columns(['link_id', 'email', 'page'])
              .doUpdateSet((e) => ({ ms: e('link_page_times.ms', '+', e.ref('excluded.ms')) })),
          )
          .execute();
      }
      return taken;
    });
  }
}

/**
 * Each person who viewed a link: their views, when the last one began, and their time on each
 * page; most views first. Read in `db`, which may be the transaction of a view.
 */
export async function viewersOf(db: Db, linkId: string): Promise<Viewer[]> {
  const views = await db
    .selectFrom('link_events')
    .select((e) => ['email', e.fn.countAll<string | number>().as('views'), e.fn.max('at').as('last')])
    .where('link_id', '=', linkId)
    .where('kind', '=', 'viewed')
    .where('outcome', '=', 'ok')
    .where('email', 'is not', null)
    .groupBy('email')
    .execute();
  const times = new Map((await pageTimes(db, linkId)).map((t) => [t.email, t]));
  return views
    .map((r) => ({
      email: r.email!,
      views: Number(r.views),
      last_viewed_at: String(r.last),
      seconds: times.get(r.email!)?.seconds ?? 0,
      pages: times.get(r.email!)?.pages ?? [],
    }))
    .sort((a, b) => b.views - a.views || a.email.localeCompare(b.email));
}

/** Each person's time on a link's pages. */
async function pageTimes(db: Db, linkId: string): Promise<PageTime[]> {
  const rows = await db
    .selectFrom('link_page_times')
    .select(['email', 'page', 'ms'])
    .where('link_id', '=', linkId)
    .orderBy('email')
    .orderBy('page')
    .execute();
  const people = new Map<string, PageTime>();
  for (const r of rows) {
    const p = people.get(r.email) ?? { email: r.email, pages: [], seconds: 0 };
    const seconds = Math.round(Number(r.ms) / 100) / 10;
    p.pages.push({ page: r.page, seconds });
    p.seconds = Math.round((p.seconds + seconds) * 10) / 10;
    people.set(r.email, p);
  }
  return [...people.values()];
}
