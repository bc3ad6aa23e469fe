/** Lists page newest first, Stripe style: `?limit=20&starting_after=<id of the last item you have>`. */
import { ValidationError, type ErrorDetail } from './errors';

export interface PageQuery {
  limit: number;
  startingAfter?: string;
}

export interface Page<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  /** Pass as `starting_after` to get the next page; null on the last page. */
  next_cursor: string | null;
}

export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;
/** The longest `starting_after` (an id) a page query takes. */
export const MAX_CURSOR = 64;

export function parsePageQuery(query: Record<string, unknown>): PageQuery {
  const details: ErrorDetail[] = [];
  let limit = DEFAULT_PAGE;
  if (query.limit !== undefined) {
    limit = Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
      details.push({ field: 'limit', message: `must be a whole number from 1 to ${MAX_PAGE}`, code: 'range' });
  }
  const after = query.starting_after;
  if (after !== undefined && (typeof after !== 'string' || after.length === 0 || after.length > MAX_CURSOR)) {
    details.push({
      field: 'starting_after',
      message: 'must be the id of an item from the previous page',
      code: 'invalid',
    });
  }
  if (details.length) throw new ValidationError('The paging parameters are not valid.', details);
  return { limit, startingAfter: after as string | undefined };
}

/** Builds a page from rows fetched with `limit + 1` (the extra row only says whether there is more). */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (r: R) => T): Page<T> {
  const has_more = rows.length > limit;
  const kept = has_more ? rows.slice(0, limit) : rows;
  return { object: 'list', data: kept.map(map), has_more, next_cursor: has_more ? kept[kept.length - 1].id : null };
}
