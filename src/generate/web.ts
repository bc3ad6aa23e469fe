/** The Generate section: a template's merge fields, then store the PDF, share it, or both. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { caller, failureOf, page, redirectShowingLink, type Failure, type WebSection } from '../web/context';
import {
  fieldErrors,
  formLabel,
  linkFieldset,
  linkSettingsFrom,
  one,
  readableLabel,
  wordsOf,
  type Form,
} from '../web/forms';
import { csrfField, errorNotice, field, html, raw, select, type Html } from '../web/html';
import { PDF_STANDARDS, unavailableReason } from '../templates/standards';
import { secureCookies } from '../config';

/**
 * Last words of a name that say its value is several lines (`client_address`, `notes`), but an
 * address of one line (`email_address`, `ip_address`); and that say it is a list for <each>
 * (`line_items`). The last word is the one that names the thing: `address_line_1` is one line.
 */
const LONG_WORDS = new Set(['address', 'notes', 'note', 'body', 'message', 'description', 'comments', 'comment']);
const ONE_LINE_ADDRESS = new Set(['email', 'mail', 'ip', 'web', 'url', 'website']);
const LIST_WORDS = new Set(['items', 'list', 'rows', 'entries']);

/**
 * What a variable's value is likely to be, guessed from its name, since a template's summary says
 * only which variables it reads: a list for <each> (JSON, several lines), text of several lines,
 * or one line. A wrong guess costs little: a box too large, or for text of several lines typed
 * into one line, its line breaks (the general hint under the fields says how lists are written).
 */
export function valueShape(name: string): 'list' | 'text' | 'line' {
  const words = wordsOf(name).map((w) => w.toLowerCase());
  const last = words[words.length - 1] ?? '';
  if (LIST_WORDS.has(last)) return 'list';
  if (LONG_WORDS.has(last) && !(last === 'address' && ONE_LINE_ADDRESS.has(words[words.length - 2] ?? '')))
    return 'text';
  return 'line';
}

export const generateSection: WebSection = (service) => async (web) => {
  const secure = secureCookies(service.config);
  async function generatePage(
    req: FastifyRequest,
    reply: FastifyReply,
    form: Form,
    o: { error?: Failure; status?: number } = {},
  ) {
    const templates = (await service.templates.list({ limit: 100 })).data;
    const chosen =
      templates.find((t) => t.id === one(form, 'template_id')) ??
      (one(form, 'template_id')
        ? await service.templates.get(one(form, 'template_id')).catch(() => undefined)
        : undefined);
    const errors = fieldErrors(o.error?.details ?? []);
    const authTypes = (await service.apps.magicLink.get())?.auth_types ?? ['email'];
    const picker = html`<form method="get" action="/app/generate" class="card">
      <div class="row bottom">
        <div class="field">
          <label for="f-template_id">Template</label
          ><select id="f-template_id" name="template_id" data-autosubmit>
            <option value="">Choose a template…</option>
            ${templates.map((t) => html`<option value="${t.id}" ${t.id === chosen?.id ? html` selected` : ''}>${t.name}</option>`)}
          </select>
        </div>
        <div class="field"><button type="submit" class="secondary">Use this template</button></div>
      </div>
    </form>`;
    let main: Html | '' = '';
    if (chosen) {
      const store = o.error ? one(form, 'store') === 'on' : true;
      const share = one(form, 'share') === 'on';
      // a required variable is marked so (the browser asks for it); an optional one says what it reads when left empty
      const defaults = new Map(chosen.optional_variables.map((o) => [o.name, o.default]));
      // the required ones first, so that what must be filled in is not found between what may be left empty
      const ordered = [
        ...chosen.variables.filter((v) => !defaults.has(v)),
        ...chosen.variables.filter((v) => defaults.has(v)),
      ];
      const vars = ordered.map((v) => {
        const fallback = defaults.get(v);
        const shape = valueShape(v);
        return field({
          name: `var:${v}`,
          label: fallback === undefined ? readableLabel(v) : `${readableLabel(v)} (optional)`,
          value: one(form, `var:${v}`),
          errors,
          textarea: shape !== 'line',
          required: fallback === undefined,
          // the name as the template and the API write it, so the field can be matched to both
          hint: [
            v,
            shape === 'list' ? 'A JSON list: see below.' : '',
            fallback === undefined ? '' : fallback ? `Left empty, it reads “${fallback}”.` : 'May be left empty.',
          ]
            .filter(Boolean)
            .join(' · '),
          attrs: shape === 'list' ? raw('spellcheck="false"') : undefined,
        });
      });
      const destinationsError = errors.get('destinations');
      // only the standards this template's format can meet (standards.ts)
      const standards = PDF_STANDARDS.filter((s) => !unavailableReason(chosen.format, s));
      main = html`<form method="post" action="/app/generate">
        ${csrfField(req.admin!.csrf)}<input type="hidden" name="template_id" value="${chosen.id}" />
        <div class="card">
          <h2>Merge fields</h2>
          ${vars.length ? vars : html`<p class="muted">This template has no variables.</p>`}
          <p class="hint">
            A list for &lt;each&gt; is a JSON array, e.g. [{"description":"Design","amount":"400.00"}].
          </p>
        </div>
        <div class="card">
          <h2>Destinations</h2>
          ${destinationsError && html`<div class="err" role="alert">${destinationsError}</div>`}
          <label class="check"
            ><input type="checkbox" name="store" data-toggles="store-settings" ${store ? html` checked` : ''} /> Store
            the document</label
          >
          <fieldset id="store-settings">
            <legend>Storage</legend>
            ${field({ name: 'store_name', label: 'Document name', value: one(form, 'store_name') || chosen.name, errors })}
          </fieldset>
          <label class="check"
            ><input type="checkbox" name="share" data-toggles="share-settings" ${share ? html` checked` : ''} /> Share
            with a Magic Link</label
          >
          <fieldset id="share-settings">
            <legend>Magic Link</legend>
            ${linkFieldset(form, errors, 'link-settings', authTypes)}
          </fieldset>
          ${
            standards.length
              ? select({
                  name: 'pdf_standard',
                  label: 'PDF standard',
                  options: [['', 'None'], ...standards.map((s): [string, string] => [s, s.replace('+', ' and ')])],
                  value: one(form, 'pdf_standard'),
                  errors,
                })
              : ''
          }
          <button type="submit">Generate document</button>
        </div>
      </form>`;
    } else if (!templates.length) {
      main = html`<div class="card empty">No templates yet. <a href="/app/templates">Upload one</a> first.</div>`;
    }
    const body = html`<div class="head">
        <div>
          <h1>Generate a document</h1>
          <p class="sub">Fill a template's merge fields, then store the PDF, share it by Magic Link, or both.</p>
        </div>
      </div>
      ${errorNotice(o.error, (f) => `${formLabel(f)}:`)}${picker}${main}`;
    return page(req, reply, { section: 'generate', title: 'Generate', body, status: o.status });
  }

  web.get('/generate', async (req, reply) => generatePage(req, reply, req.query as Form));
  web.post('/generate', async (req, reply) => {
    const form = req.body as Form;
    const merge: Record<string, string> = {};
    // a field left empty is not sent, so an optional variable takes its template's default and a
    // required one is named as missing (the API itself takes "" as a value)
    for (const [k, v] of Object.entries(form)) {
      const value = Array.isArray(v) ? v.join('') : (v ?? '');
      if (k.startsWith('var:') && value !== '') merge[k.slice(4)] = value;
    }
    const destinations: Record<string, unknown> = {};
    if (one(form, 'store') === 'on') destinations.inkit_storage = { name: one(form, 'store_name').trim() || undefined };
    if (one(form, 'share') === 'on') destinations.magic_link = linkSettingsFrom(form);
    try {
      const result = await service.engine.generate({
        body: {
          template_id: one(form, 'template_id'),
          merge_parameters: merge,
          destinations,
          pdf_standard: one(form, 'pdf_standard') || undefined,
        },
        caller: caller(req),
      });
      const link = result.destinations.magic_link;
      if (link) return redirectShowingLink(reply, secure, result.document_id, link, 'generated');
      return reply.redirect(`/app/documents/${encodeURIComponent(result.document_id)}?done=generated`, 303);
    } catch (err) {
      return generatePage(req, reply, form, { error: failureOf(err), status: 422 });
    }
  });
};
