/** The Templates section: the list, upload, delete, and a preview with sample values. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../errors';
import { contentDisposition } from '../http/headers';
import { parsePageQuery } from '../pagination';
import { diffLines } from 'diff';
import { NotFoundError, PaperlinkError } from '../errors';
import { statusOf } from '../http/errors';
import { isVersion, type TemplateInfo, type TemplateVersionInfo } from './store';
import type { Service } from '../service';
import { preview } from './preview';
import { PageImages } from '../documents/images';
import { requireChromium } from './chromium';
import { GALLERY, galleryPdf, useGalleryTemplate, type GalleryFormat } from './gallery';
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
import { one, type Form } from '../web/forms';
import {
  actionButton,
  bytes,
  csrfField,
  errorNotice,
  field,
  type Html,
  html,
  idWithCopy,
  raw,
  pager,
  pdfPreview,
  printWarnings,
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
        ><a class="button secondary" href="/app/templates/${t.id}/edit">Edit</a
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
        ${
          t.postcard
            ? html`<h2>Print check (${t.postcard} postcard)</h2>
                ${
                  t.print_warnings.length
                    ? printWarnings(t.print_warnings)
                    : html`<p class="muted">Printed with its sample values: nothing to warn of.</p>`
                }`
            : ''
        }
      </div>
    </div>`;
}

/** Bytes of template thumbnails a process keeps (about a hundred). */
const THUMBNAIL_BYTES = 16 * 1024 * 1024;

/** Template versions' first pages, kept as recipients' page images are: by `id@version`, drawn from the preview's PDF. */
function templateThumbnails(service: Service): PageImages {
  return new PageImages(
    service.renderer,
    async (key) => {
      const [id, version] = key.split('@');
      const made = await preview(
        service.templates,
        service.renderer,
        { template_id: id, template_version: Number(version) },
        service.clock.now(),
      );
      return made.bytes;
    },
    THUMBNAIL_BYTES,
  );
}

export const templatesSection: WebSection = (service) => async (web) => {
  const thumbnails = templateThumbnails(service);
  async function templatesPage(req: FastifyRequest, reply: FastifyReply, o: { error?: Failure; status?: number } = {}) {
    const query = req.query as Record<string, unknown>;
    const list = await service.templates.list(parsePageQuery({ limit: PAGE, starting_after: query.starting_after }));
    const fresh = (query as { id?: string }).id;
    const rows = list.data.map(
      (
        t,
      ) => html`<tr${t.id === fresh ? html` class="fresh"` : ''}><td><div class="named"><a href="/app/templates/${t.id}/preview" aria-label="Preview of ${t.name}"><img class="thumb" src="/app/templates/${t.id}/versions/${String(t.version)}/thumbnail.png" alt="" width="56" height="72" loading="lazy" /></a><div><strong>${t.name}</strong><div class="muted small">${t.format.toUpperCase()} · version ${String(t.version)} · added ${when(t.created_at)}</div></div></div></td><td>${idWithCopy(t.id)}</td>
<td>${
        t.variables.length
          ? [
              t.variables.slice(0, 6).map((v) => html`<span class="chip">${v}</span>`),
              t.variables.length > 6 && html`<span class="muted small">+${t.variables.length - 6} more</span>`,
            ]
          : html`<span class="muted">none</span>`
      }</td>
<td><div class="actions"><a class="button secondary" href="/app/templates/${t.id}/edit">Edit</a><a class="button secondary" href="/app/generate?template_id=${t.id}">Generate</a>${actionButton({ action: `/app/templates/${t.id}/delete`, label: 'Delete', csrf: req.admin!.csrf, style: 'danger', confirm: `Delete the template "${t.name}"? Documents made from it stay.` })}</div></td></tr>`,
    );
    const body = html`<div class="head">
        <div>
          <h1>Templates</h1>
          <p class="sub">Copy a template's id into your requests, or generate a document from it here.</p>
        </div>
        <div class="actions"><a class="button" href="/app/templates/gallery">Start from the gallery</a></div>
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
  // the first page of a version with its sample values: a version never changes, so the browser
  // keeps it, and so does this process (drawn once however many lists ask, a few at a time)
  web.get('/templates/:id/versions/:version/thumbnail.png', async (req, reply) => {
    const { id, version } = req.params as { id: string; version: string };
    await service.templates.get(id); // a deleted template's are not shown again
    const png = await thumbnails.image(`${id}@${versionOf(version)}`, 1);
    return reply
      .type('image/png')
      .header('Cache-Control', 'private, max-age=31536000, immutable')
      .send(Buffer.from(png));
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

/** The most line edits the Changes page works out; past it, it says so instead. */
const MAX_DIFF_EDITS = 5_000;

/** A version number in a path (`/versions/3/…`): anything else names no version. */
function versionOf(text: string): number {
  if (!/^[1-9]\d{0,8}$/.test(text)) throw new NotFoundError('template version', text);
  return Number(text);
}

/** The sample fields: one per variable, with the saved sample value (the editor adds and drops them as the source changes). */
function sampleFields(variables: string[], sample: Record<string, string> | null): Html {
  return html`<div id="samples">
    <p class="muted small none" ${variables.length ? raw(' hidden') : ''}>It has no variables.</p>
    ${variables.map(
      // ids by place: names such as "a b" and "a_b" would share one made from the name
      (v, i) =>
        html`<div class="field" data-variable="${v}">
          <label for="f-sample-${String(i)}">${v}</label
          ><input
            id="f-sample-${String(i)}"
            name="sample.${v}"
            type="text"
            data-variable="${v}"
            value="${sample?.[v] ?? ''}"
          />
        </div>`,
    )}
  </div>`;
}

/** A template's versions, newest first: each can be compared with the one before it, or made current. */
function versionsCard(t: TemplateInfo, versions: TemplateVersionInfo[], csrf: string): Html {
  const rows = versions.map(
    (v) =>
      html`<tr>
        <td><strong>Version ${v.version}</strong>${v.current ? html` <span class="chip">current</span>` : ''}</td>
        <td>${when(v.created_at)}</td>
        <td>${bytes(v.size)}</td>
        <td>
          <div class="actions">
            ${v.version > 1 && (t.format === 'xml' || t.format === 'html') ? html`<a class="button secondary" href="/app/templates/${t.id}/versions/${v.version}/changes">Changes</a>` : ''}
            ${v.current ? '' : actionButton({ action: `/app/templates/${t.id}/versions/${v.version}/make_current`, label: 'Make current', csrf, style: 'secondary' })}
          </div>
        </td>
      </tr>`,
  );
  // a region of its own that scrolls on a phone: reachable by keyboard even when it holds no button
  return html`<div class="card scroll" tabindex="0" role="region" aria-labelledby="versions-title">
    <h2 id="versions-title">Versions</h2>
    <p class="muted small">
      Renders that name no version use the current one; a request, a workflow or a postcard already under way keeps the
      version it started with.
    </p>
    ${table(['Version', 'Saved', 'Size', html`<th><span class="skip">Actions</span></th>`], rows, 'No versions.')}
  </div>`;
}

/** The editor: the source (XML or HTML) or a new file (Word, PDF), the sample values, the preview, and the versions. */
function editorBody(t: TemplateInfo, source: string | undefined, versions: TemplateVersionInfo[], csrf: string): Html {
  const text = source !== undefined;
  return html`<div class="head">
      <div>
        <h1>Edit ${t.name}</h1>
        <p class="sub">Version ${t.version} is current. Saving makes version ${versions[0].version + 1}.</p>
      </div>
      <div class="actions">
        <a class="button secondary" href="/app/generate?template_id=${t.id}">Generate</a
        ><a class="button secondary" href="/app/templates">All templates</a>
      </div>
    </div>
    <form
      id="editor"
      class="grid2"
      method="post"
      action="/app/templates/${t.id}/versions"
      enctype="multipart/form-data"
      data-format="${t.format}"
      data-preview="/app/templates/${t.id}/draft"
    >
      ${csrfField(csrf)}<input type="hidden" name="base_version" value="${String(t.version)}" />
      <div class="card">
        ${
          text
            ? html`<label for="f-source">Source</label
                ><textarea id="f-source" name="source" rows="24" spellcheck="false">${source}</textarea>`
            : html`<div class="field">
                <label for="f-file">Replace the ${t.format === 'docx' ? 'Word document' : 'PDF form'}</label
                ><input id="f-file" name="file" type="file" accept=".${t.format}" />
                <div class="hint">Leave it empty to save only new sample values.</div>
              </div>`
        }
        <ul id="problems" class="err" aria-live="polite" hidden></ul>
        <h2>Sample values</h2>
        <p class="muted small">What the preview, and the next person who opens this template, fill it with.</p>
        ${sampleFields(t.variables, t.sample_values)}
        <div class="field">
          <label for="f-assets">Add images, fonts or CSS (optional)</label
          ><input id="f-assets" name="assets" type="file" multiple />
          <div class="hint">Files the template names, e.g. logo.png. Files of the current version are kept.</div>
        </div>
        <button type="submit">Save as a new version</button>
      </div>
      <div class="card">
        <h2>Preview</h2>
        <p class="muted small"><span id="status" aria-live="polite">Loading the preview…</span></p>
        <div id="pages"></div>
        <noscript><a href="/app/templates/${t.id}/preview">Open the preview of the saved version</a></noscript>
      </div>
    </form>
    ${versionsCard(t, versions, csrf)}`;
}

/** The sample values a form sent, as `sample.<variable>` fields. */
function samplesOf(form: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  // an empty field is no sample: the preview then shows the variable's default, or its name
  for (const [k, v] of Object.entries(form))
    if (k.startsWith('sample.') && typeof v === 'string' && v !== '') out[k.slice(7)] = v;
  return out;
}

/** The editor's routes: the page, its live preview, saving a version, comparing, making one current. */
export const templateEditor: WebSection = (service) => async (web) => {
  const editorPage = async (
    req: FastifyRequest,
    reply: FastifyReply,
    o: { error?: Failure; status?: number; typed?: { source: string; sample: Record<string, string> } } = {},
  ) => {
    const id = (req.params as { id: string }).id;
    const saved = await service.templates.get(id);
    // a refused save shows what was typed, not the saved version, so nothing typed is lost
    const t = o.typed ? { ...saved, sample_values: o.typed.sample } : saved;
    const current = await service.templates.version(id);
    const versions = (await service.templates.versions(id, { limit: PAGE })).data;
    const text = t.format === 'xml' || t.format === 'html';
    const source = text ? (o.typed?.source ?? Buffer.from(current.source).toString('utf8')) : undefined;
    const body = html`${doneNotice(req)}${errorNotice(o.error, errorLabel)}${editorBody(t, source, versions, req.admin!.csrf)}`;
    return page(req, reply, {
      section: 'templates',
      title: `Edit ${t.name}`,
      body,
      status: o.status,
      scripts: html`<script type="module" src="/assets/editor.js"></script>`,
    });
  };
  web.get('/templates/:id/edit', async (req, reply) => editorPage(req, reply));

  // the editor's preview: what is typed, with the saved version's files; JSON (the PDF in base64) or the error
  web.post('/templates/:id/draft', async (req, reply) => {
    const id = (req.params as { id: string }).id;
    const body = req.body as { source?: unknown; sample_values?: unknown };
    try {
      const made = await preview(
        service.templates,
        service.renderer,
        {
          template_id: id,
          ...(typeof body.source === 'string' ? { source: body.source } : {}),
          merge_parameters: body.sample_values ?? {},
        },
        service.clock.now(),
      );
      return reply.send({
        pdf: Buffer.from(made.bytes).toString('base64'),
        variables: made.variables,
        warnings: made.warnings,
      });
    } catch (err) {
      if (!(err instanceof PaperlinkError)) throw err;
      return reply
        .status(statusOf(err))
        .send({ error: { code: err.code, message: err.message, details: err.details } });
    }
  });

  web.post('/templates/:id/versions', { config: { multipart: true } }, async (req, reply) => {
    if (!req.isMultipart()) return refuseForgery(reply);
    const parsed = await multipartForm(req);
    if (!parsed) return refuseForgery(reply);
    const id = (req.params as { id: string }).id;
    const file = parsed.files.get('file')?.[0];
    const assets = new Map((parsed.files.get('assets') ?? []).map((f) => [f.filename, f.bytes] as const));
    try {
      // a browser sends a textarea's lines ending CRLF: kept as they were typed, LF, so versions compare by line
      const source = file ? new Uint8Array(file.bytes) : one(parsed.form, 'source').replace(/\r\n/g, '\n');
      // a Word or PDF template saved with new sample values only: its current file again
      const saved = source === '' ? (await service.templates.version(id)).source : source;
      // the version the page showed: another saved since then is a conflict, not silently replaced
      const base = Number(one(parsed.form, 'base_version'));
      const made = await service.templates.addVersion(
        id,
        {
          source: saved,
          sample: samplesOf(parsed.form),
          assets: async (p) => assets.get(p) ?? assets.get(p.split('/').pop()!),
        },
        isVersion(base) ? base : undefined,
      );
      return reply.redirect(`/app/templates/${id}/edit?done=version_saved&version=${made.version}`, 303);
    } catch (err) {
      const typed = { source: one(parsed.form, 'source').replace(/\r\n/g, '\n'), sample: samplesOf(parsed.form) };
      const status = err instanceof PaperlinkError ? statusOf(err) : 422;
      return editorPage(req, reply, { error: failureOf(err), status, typed: file ? undefined : typed });
    }
  });

  web.post('/templates/:id/versions/:version/make_current', async (req, reply) => {
    const { id, version } = req.params as { id: string; version: string };
    await service.templates.makeCurrent(id, versionOf(version));
    return reply.redirect(`/app/templates/${id}/edit?done=version_made_current`, 303);
  });

  web.get('/templates/:id/versions/:version/changes', async (req, reply) => {
    const { id, version } = req.params as { id: string; version: string };
    const n = versionOf(version);
    const [after, before] = await Promise.all([service.templates.version(id, n), service.templates.version(id, n - 1)]);
    const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
    // bounded: two long sources that differ everywhere would hold this thread for long
    const parts = diffLines(text(before.source), text(after.source), { maxEditLength: MAX_DIFF_EDITS }) ?? [
      {
        value: 'Too many changes to show line by line: compare the two sources (GET …/versions/:version/source).\n',
        added: false,
        removed: false,
        count: 1,
      },
    ];
    const lines = parts.flatMap((part) =>
      part.value
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => {
          const [mark, label] = part.added ? ['+', 'added'] : part.removed ? ['−', 'removed'] : [' ', 'same'];
          return html`<tr class="diff-${label}">
            <td class="mono" aria-label="${label}">${mark}</td>
            <td class="mono">${line}</td>
          </tr>`;
        }),
    );
    const body = html`<div class="head">
        <div>
          <h1>Changes in version ${n}</h1>
          <p class="sub">Against version ${n - 1}. Lines added are marked +, lines removed −.</p>
        </div>
        <div class="actions"><a class="button secondary" href="/app/templates/${id}/edit">Back to the editor</a></div>
      </div>
      <div class="card scroll">
        <table class="diff">
          <tbody>
            ${lines}
          </tbody>
        </table>
      </div>`;
    return page(req, reply, { section: 'templates', title: `Changes in version ${n}`, body });
  });
};

/** The starter gallery (gallery.ts): its page with each template's first page, and a copy into the templates. */
export const templateGallery: WebSection = (service) => async (web) => {
  // each drawn once, as the templates' thumbnails are (the gallery's five are ~1 MB in all)
  const thumbnails = new PageImages(service.renderer, (key) => galleryPdf(service.renderer, key), THUMBNAIL_BYTES);
  web.get('/templates/gallery', async (req, reply) => {
    const csrf = req.admin!.csrf;
    // an HTML copy is refused where nothing could print it: not offered there
    const htmlWorks = await requireChromium().then(
      () => true,
      () => false,
    );
    const cards = GALLERY.map(
      (e) =>
        html`<li>
          <img
            src="/app/templates/gallery/${e.key}/thumbnail.png"
            alt="The first page of the ${e.name} with its sample values"
            width="220"
            height="293"
            loading="lazy"
          />
          <strong>${e.name}</strong>
          <span class="muted small">${e.description}</span>
          <div class="actions">
            ${actionButton({ action: `/app/templates/gallery/${e.key}/use`, label: 'Use (XML)', csrf, style: 'secondary', hidden: { format: 'xml' } })}
            ${htmlWorks ? actionButton({ action: `/app/templates/gallery/${e.key}/use`, label: 'Use (HTML)', csrf, style: 'secondary', hidden: { format: 'html' } }) : html`<span class="muted small">HTML needs Chromium here</span>`}
          </div>
        </li>`,
    );
    const body = html`<div class="head">
        <div>
          <h1>Template gallery</h1>
          <p class="sub">
            Each is in the XML layout language and in HTML, with its fonts and sample values. Using one copies it into
            your templates and opens it in the editor; the gallery stays as it is.
          </p>
        </div>
        <div class="actions"><a class="button secondary" href="/app/templates">All templates</a></div>
      </div>
      <div class="card">
        <ul class="gallery">
          ${cards}
        </ul>
      </div>`;
    return page(req, reply, { section: 'templates', title: 'Template gallery', body });
  });
  web.get('/templates/gallery/:key/thumbnail.png', async (req, reply) => {
    const png = await thumbnails.image((req.params as { key: string }).key, 1);
    return reply.type('image/png').header('Cache-Control', 'private, max-age=3600').send(Buffer.from(png));
  });
  web.post('/templates/gallery/:key/use', async (req, reply) => {
    const format = one(req.body as Form, 'format') as GalleryFormat;
    const made = await useGalleryTemplate(service.templates, (req.params as { key: string }).key, format);
    return reply.redirect(`/app/templates/${made.id}/edit?done=template_copied`, 303);
  });
};
