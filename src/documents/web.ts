/** The Documents section: the list and search, a document's page with its Magic Links, sharing, the PDF. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { contentDisposition } from '../http/headers';
import type { LinkInfo } from '../links';
import { parsePageQuery } from '../pagination';
import {
  doneNotice,
  failureOf,
  page,
  PAGE,
  redirectShowingLink,
  takeShownOnce,
  type Failure,
  type ShownOnce,
  type WebSection,
} from '../web/context';
import { fieldErrors, formLabel, linkFieldset, linkSettingsFrom, type Form } from '../web/forms';
import {
  actionButton,
  badge,
  bytes,
  csrfField,
  errorNotice,
  type Html,
  html,
  idWithCopy,
  pager,
  pdfPreview,
  secretNotice,
  table,
  when,
} from '../web/html';
import { ACCESS_COLUMNS, accessRows, spanInWords, endedInWords, isLive, ruleInWords } from '../links/web';
import { KEPT_AFTER_LINKS, spanJson } from './retention';
import type { Viewer } from '../links/model';
import { secureCookies } from '../config';

/** Seconds as people read them: "45 s", "3 min 20 s". */
function duration(seconds: number): string {
  const s = Math.round(seconds);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
}

/**
 * Time per page, everyone's together, as a small bar chart (an inline SVG: no script); each bar's
 * tooltip and the chart's label say the figures.
 */
function pageChart(viewers: Viewer[]): Html | false {
  const totals = new Map<number, number>();
  for (const v of viewers) for (const p of v.pages) totals.set(p.page, (totals.get(p.page) ?? 0) + p.seconds);
  if (!totals.size) return false;
  const last = Math.max(...totals.keys());
  const most = Math.max(...totals.values());
  const bar = 14;
  const height = 48;
  const pages = Array.from({ length: last }, (_, i) => ({ page: i + 1, seconds: totals.get(i + 1) ?? 0 }));
  const label = `Time per page: ${pages.map((p) => `page ${p.page} ${duration(p.seconds)}`).join(', ')}`;
  return html`<svg
    class="page-chart"
    role="img"
    aria-label="${label}"
    width="${String(last * (bar + 4))}"
    height="${String(height + 14)}"
    viewBox="0 0 ${String(last * (bar + 4))} ${String(height + 14)}"
  >
    ${pages.map((p, i) => {
      const h = most ? Math.max(p.seconds ? 2 : 0, Math.round((p.seconds / most) * height)) : 0;
      return html`<g data-page="${String(p.page)}" data-seconds="${String(p.seconds)}">
        <title>Page ${String(p.page)}: ${duration(p.seconds)}</title>
        <rect
          x="${String(i * (bar + 4))}"
          y="${String(height - h)}"
          width="${String(bar)}"
          height="${String(h)}"
          fill="currentColor"
        />
        <text x="${String(i * (bar + 4) + bar / 2)}" y="${String(height + 12)}" font-size="10" text-anchor="middle"
          >${String(p.page)}</text
        >
      </g>`;
    })}
  </svg>`;
}

/** A link on its document's page: what ends it, its views, its access log, and a button to end it now. */
function linkCard(l: LinkInfo, csrf: string): Html {
  const limit = l.expire_after_n_views;
  const meter =
    limit &&
    html`<progress
      class="meter"
      aria-hidden="true"
      max="${limit}"
      value="${Math.min(limit, l.views_used)}"
    ></progress>`;
  const log = accessRows(l.access_log ?? []);
  const live = isLive(l);
  return html`<div class="link-card" data-link="${l.id}">
    <div class="actions spread">
      <div>${badge(l.status)} <strong>${l.recipient_email}</strong></div>
      ${live && actionButton({ action: `/app/links/${l.id}/expire`, label: 'Expire link now', csrf, style: 'danger', confirm: 'Expire this link now? The recipient can no longer open it.' })}
    </div>
    <dl class="facts gap-above">
      <dt>Views</dt>
      <dd>
        <span data-views-used>${l.views_used}</span>
        used${limit ? html` · <span data-views-left>${l.views_left}</span> left of ${limit}` : ' · no view limit'}${meter}
      </dd>
      <dt>Ends</dt>
      <dd data-rule>${live ? ruleInWords(l) : endedInWords(l)}</dd>
      <dt>Sign-in</dt>
      <dd>${l.auth_type === 'social' ? 'Social sign-in' : 'E-mailed code'} as ${l.auth_email}</dd>
      ${
        l.allowed_viewers.length > 0 &&
        html`<dt>Also allowed</dt>
          <dd data-allowed>${l.allowed_viewers.join(', ')}</dd>`
      }
      ${
        (l.viewers?.length ?? 0) > 0 &&
        html`<dt>Viewed by</dt>
          <dd>
            <ul data-viewers>
              ${l.viewers!.map((v) => html`<li>${v.email}: ${v.views} view${v.views === 1 ? '' : 's'}, last ${when(v.last_viewed_at)}${v.seconds ? `, ${duration(v.seconds)} reading` : ''}</li>`)}
            </ul>
            ${pageChart(l.viewers!)}
          </dd>`
      }
      ${
        (l.notify_sender || l.remind_before) &&
        html`<dt>E-mails</dt>
          <dd data-notices>
            ${[
              l.notify_sender?.on_first_view &&
                `first view to ${l.notify_sender.email ?? 'the sender'}${l.notices_sent.first_view ? ' (sent)' : ''}`,
              l.notify_sender?.on_end &&
                `end to ${l.notify_sender.email ?? 'the sender'}${l.notices_sent.ended ? ' (sent)' : ''}`,
              l.remind_before &&
                `reminder ${Object.entries(l.remind_before).map(([u, n]) => `${n} ${u}`)[0]} before the end${l.notices_sent.reminder ? ' (sent)' : ''}`,
            ]
              .filter(Boolean)
              .join(' · ')}
          </dd>`
      }
      <dt>Shown</dt>
      <dd data-shown>
        ${l.allow_download ? 'In the browser, with a download button' : 'As page images only: no download'}${
          l.watermark ? html`, watermarked <q>${l.watermark.text}</q>` : ''
        }
      </dd>
      <dt>Sent</dt>
      <dd>${when(l.sent_at, l.status === 'send_failed' ? 'not yet: the e-mail failed and is retried' : '—')}</dd>
      <dt>Opened</dt>
      <dd>${when(l.opened_at, 'not yet')}</dd>
      <dt>ID</dt>
      <dd><code>${l.id}</code></dd>
    </dl>
    ${l.send_error && html`<p class="err">E-mail error: ${l.send_error}</p>`}
    <details>
      <summary>
        Access log (${l.access_log_has_more ? `the newest ${l.access_log?.length ?? 0}` : (l.access_log?.length ?? 0)})
      </summary>
      <div class="scroll">
        ${table(ACCESS_COLUMNS, log, 'Nobody has opened it yet.', 'muted')}
        ${l.access_log_has_more && pager(`/app/links/${l.id}/access_log`, 'The whole access log →')}
      </div>
    </details>
  </div>`;
}

export const documentsSection: WebSection = (service) => async (web) => {
  const secure = secureCookies(service.config);
  web.get('/documents', async (req, reply) => {
    const query = req.query as Record<string, string | undefined>;
    const search = (query.search ?? '').trim().slice(0, 200);
    const list = await service.documents.list(
      parsePageQuery({ limit: PAGE, starting_after: query.starting_after }),
      search || undefined,
    );
    const rows = list.data.map(
      (d) =>
        html`<tr>
          <td>
            <a href="/app/documents/${d.id}"><strong>${d.name}</strong></a>
            <div class="muted small mono">${d.id}</div>
          </td>
          <td class="hide-sm"><code>${d.template_id}</code></td>
          <td>${bytes(d.size)}</td>
          <td>${when(d.created_at)}</td>
        </tr>`,
    );
    const more =
      list.has_more &&
      pager(
        `/app/documents?${new URLSearchParams({ ...(search ? { search } : {}), starting_after: list.next_cursor! }).toString()}`,
        'Older documents →',
      );
    const body = html`<div class="head">
        <div>
          <h1>Documents</h1>
          <p class="sub">Newest first. Open one to preview it, download it, or share it with a Magic Link.</p>
        </div>
        <a class="button" href="/app/generate">Generate a document</a>
      </div>
      <form method="get" action="/app/documents" class="card" role="search">
        <div class="row bottom">
          <div class="field">
            <label for="f-search">Search by name</label
            ><input id="f-search" type="search" name="search" value="${search}" />
          </div>
          <div class="field">
            <button type="submit" class="secondary">Search</button
            >${search && html` <a href="/app/documents">Clear</a>`}
          </div>
        </div>
      </form>
      <div class="card scroll">
        ${table(['Name', html`<th class="hide-sm">Template</th>`, 'Size', 'Created'], rows, search ? 'No document name contains that.' : 'No documents yet.')}
        ${more}
      </div>`;
    return page(req, reply, { section: 'documents', title: 'Documents', body });
  });

  async function documentPage(
    req: FastifyRequest,
    reply: FastifyReply,
    id: string,
    o: { form?: Form; error?: Failure; status?: number; shown?: ShownOnce } = {},
  ) {
    const d = await service.documents.get(id);
    const csrf = req.admin!.csrf;
    const links = await Promise.all((d.magic_links ?? []).map((l) => service.links.get(l.id, true)));
    const errors = fieldErrors(o.error?.details ?? []);
    const preview = pdfPreview(`/app/documents/${d.id}/pdf`);
    const authTypes = (await service.apps.magicLink.get())?.auth_types ?? ['email'];
    // a document made only for a link goes when its links have ended (Documents.expireDue)
    const deletedInWords = d.expires_at
      ? html`${when(d.expires_at)}${d.follows_links ? ', after its Magic Links ended' : ''}`
      : d.follows_links
        ? html`${spanInWords(spanJson(KEPT_AFTER_LINKS)!)} after its last Magic Link ends (made only to share)`
        : html`when you delete it`;
    const body = html`<div class="head">
        <div>
          <h1>${d.name}</h1>
          <p class="sub">Generated ${when(d.created_at)}${d.created_by.name && html` by ${d.created_by.name}`}</p>
        </div>
        <div class="actions">
          <a class="button" href="/app/documents/${d.id}/pdf?download=1">Download PDF</a
          ><a class="button secondary" href="#share">Share with Magic Link</a>
        </div>
      </div>
      ${o.shown ? secretNotice(o.shown.title, o.shown.value, o.shown.hint) : doneNotice(req)}
      <div class="card" id="links">
        <h2>Magic Links</h2>
        ${links.length ? links.map((l) => linkCard(l, csrf)) : html`<p class="muted">Not shared yet.</p>`}
      </div>
      <div class="grid2">
        <div class="card">${preview.body}</div>
        <div>
          <div class="card">
            <h2>Details</h2>
            <dl class="facts">
              <dt>ID</dt>
              <dd>${idWithCopy(d.id)}</dd>
              <dt>Template</dt>
              <dd>
                <a href="/app/templates/${d.template_id}/preview"><code>${d.template_id}</code></a>
              </dd>
              <dt>Size</dt>
              <dd>${bytes(d.size)}</dd>
              <dt>SHA-256</dt>
              <dd class="mono small">${d.sha256}</dd>
              <dt>Deleted</dt>
              <dd data-expires>${deletedInWords}</dd>
            </dl>
          </div>
          <div class="card" id="share">
            <h2>Share with Magic Link</h2>
            ${errorNotice(o.error, (f) => `${formLabel(f)}:`)}
            <form method="post" action="/app/documents/${d.id}/share">
              ${csrfField(csrf)}${linkFieldset(o.form ?? {}, errors, 'share-fields', authTypes)}<button type="submit">
                Share
              </button>
            </form>
          </div>
        </div>
      </div>`;
    return page(req, reply, {
      section: 'documents',
      title: d.name,
      body,
      status: o.status,
      scripts: preview.scripts,
    });
  }

  web.get('/documents/:id', async (req, reply) => {
    const { id } = req.params as { id: string };
    // a Magic Link just made here: its URL, once (redirectShowingLink)
    const shown = takeShownOnce(req, reply, `/app/documents/${encodeURIComponent(id)}`);
    return documentPage(req, reply, id, { shown });
  });
  web.get('/documents/:id/pdf', async (req, reply) => {
    const { document, bytes: pdf } = await service.documents.pdf((req.params as { id: string }).id);
    const download = (req.query as { download?: string }).download === '1';
    return reply
      .type('application/pdf')
      .header('Content-Disposition', contentDisposition(document.name, download ? 'attachment' : 'inline'))
      .send(Buffer.from(pdf));
  });
  web.post('/documents/:id/share', async (req, reply) => {
    const { id } = req.params as { id: string };
    const form = req.body as Form;
    let made;
    try {
      made = await service.documents.share(id, linkSettingsFrom(form), req.admin!.session.keyId);
    } catch (err) {
      return documentPage(req, reply, id, { form, error: failureOf(err), status: 422 });
    }
    return redirectShowingLink(reply, secure, id, { ...made.link, url: made.url }, 'shared');
  });
};
