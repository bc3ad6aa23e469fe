/** The Templates section: the list, upload, delete, and a preview with sample values. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../errors';
import { contentDisposition } from '../http/headers';
import { parsePageQuery } from '../pagination';
import type { TemplateInfo } from './store';
import { preview } from './preview';
import {
  failureOf,
  multipartForm,
  page,
  PAGE,
  doneNotice,
  refuseForgery,
  type Failure,
  type WebSection,
} from '../web/context';
import { one } from '../web/forms';
import {
  actionButton,
  bytes,
  csrfField,
  errorNotice,
  field,
  type Html,
  html,
  idWithCopy,
  pager,
  pdfPreview,
  table,
  when,
} from '../web/html';

/** What an upload's error detail is about, as the notice says it: "Line 3, column 7:" for a place in the template. */
function errorLabel(f: string): string {
  const at = /^template:(\d+):(\d+)$/.exec(f);
  return at ? `Line ${at[1]}, column ${at[2]}:` : f === 'template' ? 'Template:' : `${f}:`;
}

/** The form to upload a template with its images, fonts and CSS. */
function uploadCard(csrf: string): Html {
  return html`<div class="card">
    <h2>Upload a template</h2>
    <form method="post" action="/app/templates" enctype="multipart/form-data">
      ${csrfField(csrf)}
      <div class="row">
        <div class="field">
          <label for="f-file">Template file</label
          ><input
            id="f-file"
            name="file"
            type="file"
            accept=".xml,.html,.htm,.docx,.pdf,application/xml,text/xml,text/html,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document"
            required
          />
          <div class="hint">
            An XML layout template, an HTML document with Liquid merge fields, a Word document (.docx) with {fields}, or
            a fillable PDF form.
          </div>
        </div>
        <div class="field">
          <label for="f-assets">Images, fonts and CSS (optional)</label
          ><input id="f-assets" name="assets" type="file" multiple />
          <div class="hint">The files the template names, e.g. logo.png or style.css.</div>
        </div>
        ${field({ name: 'name', label: 'Name (optional)', hint: 'Defaults to the name in the template or the file name.' })}
      </div>
      <button type="submit">Upload template</button>
    </form>
  </div>`;
}

/** A template's preview page: the PDF beside its details (id, format, size, variables). */
function previewBody(t: TemplateInfo, preview: Html): Html {
  return html`<div class="head">
      <div>
        <h1>${t.name}</h1>
        <p class="sub">Preview with its sample values; a variable without one shows its name, as «name».</p>
      </div>
      <div class="actions">
        <a class="button" href="/app/generate?template_id=${t.id}">Generate from this template</a
        ><a class="button secondary" href="/app/templates">All templates</a>
      </div>
    </div>
    <div class="grid2">
      <div class="card">${preview}</div>
      <div class="card">
        <h2>Details</h2>
        <dl class="facts">
          <dt>ID</dt>
          <dd>${idWithCopy(t.id)}</dd>
          <dt>Format</dt>
          <dd>${t.format.toUpperCase()}</dd>
          <dt>Size</dt>
          <dd>${bytes(t.size)}</dd>
          <dt>Created</dt>
          <dd>${when(t.created_at)}</dd>
          <dt>Variables</dt>
          <dd>
            ${t.variables.length ? t.variables.map((v) => html`<span class="chip">${v}</span>`) : html`<span class="muted">none</span>`}
          </dd>
        </dl>
      </div>
    </div>`;
}

export const templatesSection: WebSection = (service) => async (web) => {
  async function templatesPage(req: FastifyRequest, reply: FastifyReply, o: { error?: Failure; status?: number } = {}) {
    const query = req.query as Record<string, unknown>;
    const list = await service.templates.list(parsePageQuery({ limit: PAGE, starting_after: query.starting_after }));
    const fresh = (query as { id?: string }).id;
    const rows = list.data.map(
      (
        t,
      ) => html`<tr${t.id === fresh ? html` class="fresh"` : ''}><td><strong>${t.name}</strong><div class="muted small">${t.format.toUpperCase()} · added ${when(t.created_at)}</div></td><td>${idWithCopy(t.id)}</td>
<td>${
        t.variables.length
          ? [
              t.variables.slice(0, 6).map((v) => html`<span class="chip">${v}</span>`),
              t.variables.length > 6 && html`<span class="muted small">+${t.variables.length - 6} more</span>`,
            ]
          : html`<span class="muted">none</span>`
      }</td>
<td><div class="actions"><a class="button secondary" href="/app/templates/${t.id}/preview">Preview</a><a class="button secondary" href="/app/generate?template_id=${t.id}">Generate</a>${actionButton({ action: `/app/templates/${t.id}/delete`, label: 'Delete', csrf: req.admin!.csrf, style: 'danger', confirm: `Delete the template "${t.name}"? Documents made from it stay.` })}</div></td></tr>`,
    );
    const body = html`<div class="head">
        <div>
          <h1>Templates</h1>
          <p class="sub">Copy a template's id into your requests, or generate a document from it here.</p>
        </div>
      </div>
      ${doneNotice(req)}${errorNotice(o.error, errorLabel)}
      <div class="card scroll">
        ${table(['Name', 'ID', 'Variables', html`<th><span class="skip">Actions</span></th>`], rows, 'No templates yet. Upload one below.')}
        ${list.has_more && pager(`/app/templates?starting_after=${list.next_cursor!}`, 'Older templates →')}
      </div>
      ${uploadCard(req.admin!.csrf)}`;
    return page(req, reply, { section: 'templates', title: 'Templates', body, status: o.status });
  }

  web.get('/templates', async (req, reply) => templatesPage(req, reply));
  web.post('/templates', { config: { multipart: true } }, async (req, reply) => {
    if (!req.isMultipart()) return refuseForgery(reply);
    const parsed = await multipartForm(req);
    if (!parsed) return refuseForgery(reply);
    const source = parsed.files.get('file')?.[0];
    try {
      if (!source)
        throw new ValidationError('Choose a template file (an XML or HTML file, a Word .docx, or a fillable PDF).', [
          { field: 'file', message: 'is required', code: 'required' },
        ]);
      const assets = new Map((parsed.files.get('assets') ?? []).map((f) => [f.filename, f.bytes] as const));
      const name = one(parsed.form, 'name').trim();
      const created = await service.templates.create({
        source: new Uint8Array(source.bytes),
        name:
          name || (/\.xml$/i.test(source.filename) ? undefined : source.filename.replace(/\.[^.]+$/, '') || undefined),
        assets: async (p) => assets.get(p) ?? assets.get(p.split('/').pop()!),
      });
      return reply.redirect(`/app/templates?done=template_uploaded&id=${encodeURIComponent(created.id)}`, 303);
    } catch (err) {
      return templatesPage(req, reply, { error: failureOf(err), status: 422 });
    }
  });
  web.post('/templates/:id/delete', async (req, reply) => {
    await service.templates.remove((req.params as { id: string }).id);
    return reply.redirect('/app/templates?done=template_deleted', 303);
  });
  web.get('/templates/:id/preview', async (req, reply) => {
    const t = await service.templates.get((req.params as { id: string }).id);
    const preview = pdfPreview(`/app/templates/${t.id}/preview.pdf`);
    const body = previewBody(t, preview.body);
    return page(req, reply, {
      section: 'templates',
      title: `Preview of ${t.name}`,
      body,
      scripts: preview.scripts,
    });
  });
  web.get('/templates/:id/preview.pdf', async (req, reply) => {
    const t = await service.templates.get((req.params as { id: string }).id);
    const made = await preview(service.templates, service.renderer, { template_id: t.id }, service.clock.now());
    return reply
      .type('application/pdf')
      .header('Content-Disposition', contentDisposition(`${t.name} (preview)`, 'inline'))
      .send(Buffer.from(made.bytes));
  });
};
