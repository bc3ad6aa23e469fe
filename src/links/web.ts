/**
 * The Magic Links section (every link sent, filtered, ended in bulk), and how the web app shows a
 * link: the rule that ends it in words, a readable browser in the access log.
 */
import Bowser from 'bowser';
import { ACTIVE, LINK_STATUSES, type AccessEntry, type LinkInfo } from '.';
import { parsePageQuery } from '../pagination';
import type { ExpiryReason } from '../events';
import { doneNotice, page, PAGE, type WebSection } from '../web/context';
import { all, type Form } from '../web/forms';
import { badge, csrfField, type Html, html, pager, statusTabs, table, when } from '../web/html';

const UNIT_WORDS: Record<string, [string, string]> = {
  minutes: ['min', 'min'],
  hours: ['hour', 'hours'],
  days: ['day', 'days'],
};

/** {"days": 30} in words: "30 days". */
export function spanInWords(r: Record<string, number>): string {
  const [unit, n] = Object.entries(r)[0];
  const [one, many] = UNIT_WORDS[unit] ?? [unit, unit];
  return `${n} ${n === 1 ? one : many}`;
}

/** Whether the link can still be opened (its status; its time is checked when it is opened). */
export function isLive(l: LinkInfo): boolean {
  return ACTIVE.includes(l.status);
}

const ENDED_BECAUSE: Record<ExpiryReason, string> = {
  views: 'its views were used',
  time: 'its time ran out',
  ten_day_cap: 'it reached the 10-day limit',
  not_opened: 'it was not opened in time',
  revoked: 'it was revoked',
  document_deleted: 'its document was deleted',
  document_expired: "its document's retention ran out",
};

/** Why and when an ended link ended, in words: "ended 2 Dec: its views were used". HTML (the date is a <time>). */
export function endedInWords(l: LinkInfo): Html {
  return html`<span class="muted" data-ended-reason="${l.ended_reason ?? ''}"
    >ended${l.ended_at ? html` ${when(l.ended_at)}` : ''}${l.ended_reason && ENDED_BECAUSE[l.ended_reason] ? `: ${ENDED_BECAUSE[l.ended_reason]}` : ''}</span
  >`;
}

/**
 * The rule that ends a link, in words, with its date where one is known: "3 views, until 3 Dec",
 * "45 min after opening", "until 2 Dec". HTML (the date is a <time>). An ended link says nothing
 * of a future date.
 */
export function ruleInWords(l: LinkInfo): Html {
  const views =
    l.expire_after_n_views === null ? '' : `${l.expire_after_n_views} view${l.expire_after_n_views === 1 ? '' : 's'}`;
  const live = isLive(l);
  const until = live && l.expires_at ? when(l.expires_at) : undefined;
  const parts: Html[] = [];
  if (views) parts.push(html`${views}`);
  if (l.retain_from_opened) {
    parts.push(html`${spanInWords(l.retain_from_opened)} after opening`);
    // before the opening, the date is the bound on opening (or the 10-day cap of a view limit)
    if (until) parts.push(html`${l.opened_at ? 'until' : views ? 'at the latest' : 'open by'} ${until}`);
  } else if (until) parts.push(html`until ${until}`);
  else if (l.retain_from_created) parts.push(html`${spanInWords(l.retain_from_created)} after sending`);
  return parts.length
    ? html`${parts.map((p, i) => (i ? [html`, `, p] : p))}`
    : html`<span class="muted">no limit</span>`;
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

/** The access log's columns, on a link's card and on its own page. */
export const ACCESS_COLUMNS = [
  'When',
  'What',
  'Outcome',
  'E-mail',
  html`<th class="hide-sm">IP</th>`,
  html`<th class="hide-sm">Browser</th>`,
];

/** Access-log entries as table rows; one repeated (an ended link opened again and again) says how often and until when. */
export function accessRows(entries: readonly AccessEntry[]): Html[] {
  return entries.map(
    (e) =>
      html`<tr>
        <td>${when(e.at)}${e.last_at && html` <span class="muted small">to ${when(e.last_at)}</span>`}</td>
        <td>${e.kind.replace(/_/g, ' ')}</td>
        <td>${e.outcome.replace(/_/g, ' ')}${e.count > 1 && html` <span class="muted">×${e.count}</span>`}</td>
        <td>${e.email ?? ''}</td>
        <td class="hide-sm">${e.ip ?? ''}</td>
        <td class="hide-sm small" title="${e.user_agent ?? ''}">${browserOf(e.user_agent)}</td>
      </tr>`,
  );
}

export const linksSection: WebSection = (service) => async (web) => {
  web.get('/links', async (req, reply) => {
    const query = req.query as Record<string, string | undefined>;
    const status = (LINK_STATUSES as readonly string[]).includes(query.status ?? '') ? query.status : undefined;
    const recipient = (query.recipient ?? '').trim().slice(0, 254) || undefined;
    const list = await service.links.list(parsePageQuery({ limit: PAGE, starting_after: query.starting_after }), {
      status,
      recipient_email: recipient,
    });
    const { documentNames, lastViewed } = await service.links.overview(list.data);
    /** This page with these filters (and no others). */
    const linksUrl = (p: { status?: string; recipient?: string; starting_after?: string }) => {
      const params = new URLSearchParams(Object.entries(p).filter((e): e is [string, string] => Boolean(e[1])));
      return `/app/links${params.size ? `?${params.toString()}` : ''}`;
    };
    const rows = list.data.map((l) => {
      const views =
        l.expire_after_n_views === null
          ? html`${l.views_used} <span class="muted">· no limit</span>`
          : `${l.views_used} of ${l.expire_after_n_views}`;
      const pick =
        isLive(l) &&
        html`<input type="checkbox" name="ids" value="${l.id}" aria-label="Select the link to ${l.recipient_email}" />`;
      return html`<tr data-link="${l.id}">
        <td>${pick}</td>
        <td>
          <strong>${l.recipient_email}</strong
          >${l.auth_email !== l.recipient_email && html`<div class="muted small">signs in as ${l.auth_email}</div>`}
          <div class="muted small">sent ${when(l.sent_at ?? l.created_at)}</div>
        </td>
        <td data-label="Document">
          <a href="/app/documents/${l.document_id}#links">${documentNames.get(l.document_id) ?? l.document_id}</a>
        </td>
        <td data-status data-label="Status">${badge(l.status)}</td>
        <td data-rule data-label="Ends">${isLive(l) ? ruleInWords(l) : endedInWords(l)}</td>
        <td data-views data-label="Views">${views}</td>
        <td class="hide-sm">${when(lastViewed.get(l.id), 'never')}</td>
      </tr>`;
    });
    const more =
      list.has_more && pager(linksUrl({ status, recipient, starting_after: list.next_cursor! }), 'Older links →');
    const body = html`<div class="head">
        <div>
          <h1>Magic Links</h1>
          <p class="sub">Every link sent, newest first: who it went to, what ends it, how many views are used.</p>
        </div>
      </div>
      ${doneNotice(req)} ${statusTabs(LINK_STATUSES, status, (s) => linksUrl({ status: s, recipient }))}
      <form method="get" action="/app/links" class="filter gap-below">
        ${status && html`<input type="hidden" name="status" value="${status}" />`}<label
          for="f-recipient"
          class="sr-only"
          >Recipient</label
        ><input
          id="f-recipient"
          name="recipient"
          type="email"
          placeholder="Recipient e-mail"
          value="${recipient ?? ''}"
        /><button type="submit" class="secondary">Filter</button
        >${recipient && html`<a class="button secondary" href="${linksUrl({ status })}">Show all recipients</a>`}
      </form>
      <form
        method="post"
        action="/app/links/expire"
        data-confirm="Expire the selected links now? Their recipients can no longer open them."
      >
        ${csrfField(req.admin!.csrf)}
        <div class="card scroll stack">
          ${table([html`<th><span class="sr-only">Select</span></th>`, 'Recipient', 'Document', 'Status', 'Ends', 'Views', html`<th class="hide-sm">Last viewed</th>`], rows, recipient || status ? 'No link matches.' : 'No links yet: share a document from its page.')}
          ${more}
        </div>
        ${list.data.some(isLive) && html`<div class="actions gap-above"><button type="submit" class="danger">Expire selected links</button></div>`}
      </form>`;
    return page(req, reply, { section: 'links', title: 'Magic Links', body });
  });
  // a link's whole access log, newest first, a page at a time (its card shows the newest entries)
  web.get('/links/:id/access_log', async (req, reply) => {
    const id = (req.params as { id: string }).id;
    const query = req.query as Record<string, string | undefined>;
    const link = await service.links.get(id);
    const log = await service.links.accessLog(
      id,
      parsePageQuery({ limit: PAGE, starting_after: query.starting_after }),
    );
    const more =
      log.has_more &&
      pager(
        `/app/links/${encodeURIComponent(id)}/access_log?starting_after=${encodeURIComponent(log.next_cursor!)}`,
        'Older entries →',
      );
    const body = html`<div class="head">
        <div>
          <h1>Access log</h1>
          <p class="sub">
            The link to <strong>${link.recipient_email}</strong>, newest first.
            <a href="/app/documents/${link.document_id}#links">Back to the document</a>
          </p>
        </div>
      </div>
      <div class="card scroll stack">
        ${table(ACCESS_COLUMNS, accessRows(log.data), 'Nobody has opened it yet.', 'muted')} ${more}
      </div>`;
    return page(req, reply, { section: 'links', title: 'Access log', body });
  });
  web.post('/links/expire', async (req, reply) => {
    const ids = all(req.body as Form, 'ids');
    if (ids.length) await service.links.endMany({ ids });
    return reply.redirect(`/app/links?done=${ids.length ? 'links_expired' : 'none_selected'}`, 303);
  });
  web.post('/links/:id/expire', async (req, reply) => {
    const link = await service.links.end((req.params as { id: string }).id, 'revoked');
    return reply.redirect(`/app/documents/${encodeURIComponent(link.document_id)}?done=link_expired`, 303);
  });
};
