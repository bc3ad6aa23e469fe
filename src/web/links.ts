/**
 * How the web app shows Magic Links: the rule that ends each one in words, a readable browser in
 * the access log, and the cards and rows of the Documents and Magic Links pages.
 */
import Bowser from 'bowser';
import { ACTIVE, type LinkInfo } from '../links';
import { esc, when } from './html';

const UNIT_WORDS: Record<string, [string, string]> = {
  minutes: ['min', 'min'],
  hours: ['hour', 'hours'],
  days: ['day', 'days'],
};

function duration(r: Record<string, number>): string {
  const [unit, n] = Object.entries(r)[0];
  const [one, many] = UNIT_WORDS[unit] ?? [unit, unit];
  return `${n} ${n === 1 ? one : many}`;
}

/** Whether the link can still be opened (its status; its time is checked when it is opened). */
export function isLive(l: LinkInfo): boolean {
  return ACTIVE.includes(l.status);
}

/**
 * The rule that ends a link, in words, with its date where one is known: "3 views, until 3 Dec",
 * "45 min after opening", "until 2 Dec". HTML (the date is a <time>). An ended link says nothing
 * of a future date.
 */
export function ruleInWords(l: LinkInfo): string {
  const views =
    l.expire_after_n_views === null ? '' : `${l.expire_after_n_views} view${l.expire_after_n_views === 1 ? '' : 's'}`;
  const live = isLive(l);
  const until = live && l.expires_at ? when(l.expires_at) : '';
  const parts: string[] = [];
  if (views) parts.push(esc(views));
  if (l.retain_from_opened) {
    parts.push(esc(`${duration(l.retain_from_opened)} after opening`));
    // before the opening, the date is the bound on opening (or the 10-day cap of a view limit)
    if (until) parts.push(`${l.opened_at ? 'until' : views ? 'at the latest' : 'open by'} ${until}`);
  } else if (until) parts.push(`until ${until}`);
  else if (l.retain_from_created) parts.push(esc(`${duration(l.retain_from_created)} after sending`));
  return parts.join(', ') || '<span class="muted">no limit</span>';
}

/** "Chrome 131 on macOS 10.15.7", from a user agent; the raw string when it says nothing known. */
export function browserOf(userAgent: string | null): string {
  if (!userAgent) return '';
  const ua = Bowser.parse(userAgent);
  const browser = [ua.browser.name, ua.browser.version?.split('.')[0]].filter(Boolean).join(' ');
  const system = [ua.os.name, ua.os.versionName ?? ua.os.version].filter(Boolean).join(' ');
  if (!browser && !system) return userAgent.slice(0, 60);
  return [browser || 'A browser', system && `on ${system}`].filter(Boolean).join(' ');
}
