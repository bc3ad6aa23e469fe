/** The mail partner: who prints and mails live postcards (src/postcards/partners.ts), its key and webhook secret. */
import type { MailPartnerView } from '../../postcards/partners';
import { failureOf } from '../context';
import { one, type Form } from '../forms';
import { csrfField, field, type Html, html, raw, select } from '../html';
import { formOf, notices, type SettingsRoutes, type SettingsState } from './state';

/** The return address's fields as the form shows them. */
const RETURN_FIELDS = [
  ['company', 'Company'],
  ['first_name', 'First name'],
  ['last_name', 'Last name'],
  ['address_line_1', 'Address line 1'],
  ['address_line_2', 'Address line 2'],
  ['address_city', 'City'],
  ['address_state', 'State (two letters)'],
  ['address_zip', 'ZIP or postal code'],
  ['address_country', 'Country (two letters)'],
] as const;

/** The Mail partner part of the page; the secrets are never shown, only whether they are set. */
export function partnerCard(app: MailPartnerView, origin: string, csrf: string, s: SettingsState): Html {
  const form = formOf(s, 'partner');
  const sent = s.section === 'partner';
  const errors = new Map((sent ? (s.error?.details ?? []) : []).map((d) => [d.field, d.message]));
  const keep = (set: boolean) => (set ? 'Set. Leave empty to keep it.' : 'Not set.');
  return html`<section class="card" id="partner" aria-labelledby="h-partner">
    <h2 id="h-partner">Mail partner</h2>
    <p>
      Live postcards of a template made for a size are handed to the partner, who prints and mails them. Test tokens'
      postcards never are. Add a webhook in the partner's dashboard to
      <code>${origin}/partners/${app.partner ?? '<partner>'}/events</code> with the secret below (PostGrid: payload
      format JSON).
    </p>
    ${notices(s, 'partner')}
    <form method="post" action="/app/settings/partner">
      ${csrfField(csrf)}
      ${select({
        name: 'partner',
        label: 'Partner',
        options: [
          ['', 'None: postcards stay rendered'],
          ['lob', 'Lob'],
          ['postgrid', 'PostGrid'],
        ],
        value: sent ? one(form, 'partner') : (app.partner ?? ''),
        errors,
      })}
      ${field({ name: 'api_key', label: 'API key', type: 'password', errors, hint: keep(app.api_key_set), attrs: raw('autocomplete="off"') })}
      ${field({ name: 'webhook_secret', label: 'Webhook secret', type: 'password', errors, hint: keep(app.webhook_secret_set), attrs: raw('autocomplete="off"') })}
      ${select({
        name: 'use_type',
        label: 'What the mail is (Lob)',
        options: [
          ['marketing', 'Marketing'],
          ['operational', 'Operational'],
        ],
        value: sent ? one(form, 'use_type') : app.use_type,
        errors,
      })}
      <fieldset>
        <legend>Return address (printed on every postcard; Lob needs one in the US for mail abroad)</legend>
        ${RETURN_FIELDS.map(([name, label]) =>
          field({
            name: `return_address.${name}`,
            label,
            value: sent ? one(form, `return_address.${name}`) : (app.return_address?.[name] ?? ''),
            errors,
          }),
        )}
      </fieldset>
      <button type="submit">Save mail partner</button>
    </form>
  </section>`;
}

/** Saving the mail partner: an empty secret keeps the stored one. */
export function partnerRoutes({ web, service, page }: SettingsRoutes): void {
  web.post('/settings/partner', async (req, reply) => {
    const form = req.body as Form;
    const given = (name: string) => one(form, name).trim() || undefined;
    try {
      await service.apps.mailPartner.put({
        partner: given('partner') ?? null,
        api_key: given('api_key'),
        webhook_secret: given('webhook_secret'),
        use_type: given('use_type'),
        // no address line: no return address
        return_address: given('return_address.address_line_1')
          ? Object.fromEntries(RETURN_FIELDS.map(([name]) => [name, given(`return_address.${name}`)]))
          : null,
      });
    } catch (err) {
      return page(req, reply, { section: 'partner', form, error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=partner_saved#partner', 303);
  });
}
