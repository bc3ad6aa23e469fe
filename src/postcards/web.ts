/** The Postcards section: requests from the intake webhook, by status, and each one's page. */
import { parsePageQuery } from '../pagination';
import { STATUSES, type PostcardInfo } from '.';
import { page, PAGE, type WebSection } from '../web/context';
import { badge, html, pager, pdfPreview, printWarnings, statusTabs, table, when } from '../web/html';
import { PROOF_WIDTH } from '../templates/print';

/** The width of a postcard's thumbnail in the list, in pixels. */
const THUMB = 96;

export const postcardsSection: WebSection = (service) => async (web) => {
  web.get('/postcards', async (req, reply) => {
    const query = req.query as Record<string, string | undefined>;
    const status = (STATUSES as string[]).includes(query.status ?? '') ? query.status : undefined;
    const list = await service.postcards.list(
      parsePageQuery({ limit: PAGE, starting_after: query.starting_after }),
      status,
    );
    const rows = list.data.map((p) => {
      const name = [p.contact.first_name, p.contact.last_name].filter(Boolean).join(' ') || p.contact.company || '';
      // a small proof of the front, for a postcard rendered for its size
      const thumb =
        p.document_id && p.size
          ? html`<img
              class="thumb"
              src="/app/postcards/${p.id}/proof?side=front&amp;width=${THUMB}"
              width="${THUMB}"
              alt=""
              loading="lazy"
            />`
          : '';
      return html`<tr>
        <td class="hide-sm">${thumb}</td>
        <td>
          <a href="/app/postcards/${p.id}"><strong>${name}</strong></a>
          <div class="muted small mono">${p.id}</div>
        </td>
        <td>${p.address.address_city}, ${p.address.address_country}</td>
        <td>${badge(p.status)}${p.test && html` ${badge('test')}`}</td>
        <td class="hide-sm"><code>${p.template_id}</code></td>
        <td>${when(p.created_at)}</td>
      </tr>`;
    });
    const more =
      list.has_more &&
      pager(
        `/app/postcards?${new URLSearchParams({ ...(status ? { status } : {}), starting_after: list.next_cursor! }).toString()}`,
        'Older postcards →',
      );
    const body = html`<div class="head">
        <div>
          <h1>Postcards</h1>
          <p class="sub">Requests that came in on the postcard intake webhook, newest first.</p>
        </div>
        <a class="button secondary" href="/app/settings#intake">Intake URL and tokens</a>
      </div>
      ${statusTabs(STATUSES, status, (s) => `/app/postcards${s ? `?status=${s}` : ''}`)}
      <div class="card scroll">
        ${table([html`<th class="hide-sm"></th>`, 'Recipient', 'Place', 'Status', html`<th class="hide-sm">Template</th>`, 'Received'], rows, 'No postcards here yet.')}
        ${more}
      </div>`;
    return page(req, reply, { section: 'postcards', title: 'Postcards', body });
  });
  web.get('/postcards/:id', async (req, reply) => {
    const p = await service.postcards.get((req.params as { id: string }).id);
    const facts = (o: Record<string, string | undefined>) =>
      Object.entries(o)
        .filter(([, v]) => v)
        .map(
          ([k, v]) =>
            html`<dt>${k.replace(/^address_/, '').replace(/_/g, ' ')}</dt>
              <dd>${v}</dd>`,
        );
    const contact = facts(p.contact);
    const custom = Object.entries(p.custom_data);
    const { shown, preview } = proofCard(p);
    const body = html`<div class="head">
        <div>
          <h1>Postcard ${badge(p.status)}${p.test && html` ${badge('test')}`}</h1>
          <p class="sub mono">${p.id}</p>
        </div>
        ${p.document_id && html`<div class="actions"><a class="button" href="/app/documents/${p.document_id}/pdf?download=1">Download PDF</a><a class="button secondary" href="/app/documents/${p.document_id}">Open document</a></div>`}
      </div>
      ${p.status === 'failed' && html`<div class="notice error" role="alert"><strong>Rendering failed.</strong> ${p.failure_reason ?? ''}</div>`}${p.status === 'received' && html`<div class="notice ok" role="status">Received; rendering is queued.</div>`}
      <div class="grid2">
        <div class="card">${shown}</div>
        <div>
          <div class="card">
            <h2>Contact</h2>
            <dl class="facts">
              ${
                contact.length
                  ? contact
                  : html`<dt>—</dt>
                      <dd></dd>`
              }
            </dl>
          </div>
          <div class="card">
            <h2>Address</h2>
            <dl class="facts">${facts(p.address)}</dl>
            <p class="hint">As stored: trimmed, country and state in capitals.</p>
          </div>
          <div class="card">
            <h2>Custom data</h2>
            ${
              custom.length
                ? html`<dl class="facts">
                    ${custom.map(
                      ([k, v]) =>
                        html`<dt><code>${k}</code></dt>
                          <dd>${v}</dd>`,
                    )}
                  </dl>`
                : html`<p class="muted">None.</p>`
            }
          </div>
          <div class="card">
            <h2>Request</h2>
            <dl class="facts">
              <dt>Template</dt>
              <dd><code>${p.template_id}</code></dd>
              <dt>Size</dt>
              <dd>${p.size ?? '—'}</dd>
              <dt>Mode</dt>
              <dd>${p.test ? 'test: never handed on' : 'live'}</dd>
              <dt>Received</dt>
              <dd>${when(p.created_at)}</dd>
              <dt>Updated</dt>
              <dd>${when(p.updated_at)}</dd>
            </dl>
          </div>
        </div>
      </div>`;
    return page(req, reply, {
      section: 'postcards',
      title: `Postcard ${p.id}`,
      body,
      scripts: preview?.scripts,
    });
  });
  web.get('/postcards/:id/proof', async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    const side = q.side === 'front' || q.side === 'back' ? q.side : undefined;
    const width = Number(q.width ?? PROOF_WIDTH.default);
    const image = await service.postcards.proof((req.params as { id: string }).id, {
      side,
      guides: q.guides === 'true',
      width: Number.isFinite(width) ? width : undefined,
    });
    return reply
      .header('Content-Type', 'image/png')
      .header('Cache-Control', 'private, max-age=300')
      .send(Buffer.from(image));
  });
};

/** A rendered postcard's proof with its guides and print warnings; else the PDF's preview, or a note. */
function proofCard(p: PostcardInfo) {
  const proofed = p.document_id && p.size;
  const preview = p.document_id && !proofed ? pdfPreview(`/app/documents/${p.document_id}/pdf`) : undefined;
  const shown = proofed
    ? html`<img
          class="proof"
          src="/app/postcards/${p.id}/proof?guides=true&amp;width=900"
          alt="The front and the back, with the trim, the safe zone and the address area"
        />
        <p class="hint">
          Blue: where the card is cut. Dashed green: the safe zone. Red: the address area the mail partner prints into.
        </p>
        ${
          p.warnings.length
            ? html`<h2>Print warnings</h2>
                ${printWarnings(p.warnings)}`
            : ''
        }`
    : preview
      ? preview.body
      : html`<p class="muted">No rendered postcard yet.</p>`;
  return { shown, preview };
}
