/** Document retention: how long a document is kept when its request does not say. */
import type { StorageApp } from '../../documents/retention';
import { failureOf } from '../context';
import { one, type Form } from '../forms';
import { csrfField, field, type Html, html, raw, select } from '../html';
import { notices, type SettingsRoutes, type SettingsState } from './state';

/** The Documents part of the page: the default retention, as an amount and a unit. */
export function retentionCard(storageApp: StorageApp, csrf: string, s: SettingsState): Html {
  // the default retention as the form shows it: an amount and a unit, or nothing (kept until deleted)
  const storageForm = s.section === 'storage' ? (s.form ?? {}) : undefined;
  const [keptUnit, keptAmount] = Object.entries(storageApp.retain_for ?? {})[0] ?? ['days', undefined];
  const retentionErrors = new Map(
    s.section === 'storage' ? (s.error?.details ?? []).map((d) => ['retain_amount', d.message]) : [],
  );
  return html`<section class="card" id="documents" aria-labelledby="h-documents">
    <h2 id="h-documents">Documents</h2>
    ${notices(s, 'storage')}
    <form method="post" action="/app/settings/storage">
      ${csrfField(csrf)}
      <div class="row">
        ${field({ name: 'retain_amount', label: 'Keep documents for', value: storageForm ? one(storageForm, 'retain_amount') : keptAmount === undefined ? '' : String(keptAmount), errors: retentionErrors, attrs: raw('inputmode="numeric" placeholder="e.g. 90"'), hint: 'Then a document is deleted with its PDF, and its Magic Links end. Empty: until it is deleted (one made only to share by Magic Link: 30 days after its last link ends). A generate request may say otherwise (retain_for).' })}
        ${select({
          name: 'retain_unit',
          label: 'Unit',
          options: [
            ['minutes', 'Minutes'],
            ['hours', 'Hours'],
            ['days', 'Days'],
          ],
          value: storageForm ? one(storageForm, 'retain_unit') : keptUnit,
        })}
      </div>
      <button type="submit">Save document retention</button>
    </form>
  </section>`;
}

/** Saving the default retention (empty: until deleted). */
export function retentionRoutes({ web, service, page }: SettingsRoutes): void {
  web.post('/settings/storage', async (req, reply) => {
    const form = req.body as Form;
    const amount = one(form, 'retain_amount').trim();
    const unit = one(form, 'retain_unit') || 'days';
    try {
      await service.apps.storage.put({
        retain_for: amount ? { [unit]: /^\d{1,12}$/.test(amount) ? Number(amount) : amount } : null,
      });
    } catch (err) {
      return page(req, reply, { section: 'storage', form, error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=retention_saved#documents', 303);
  });
}
