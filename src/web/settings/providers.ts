/** The Magic Link app's social sign-in providers (OpenID Connect): the list, adding one, removing one. */
import type { MagicLinkApp } from '../../links/app';
import { failureOf } from '../context';
import { one, type Form } from '../forms';
import { actionButton, csrfField, field, type Html, html, raw, table } from '../html';
import { formOf, notices, type SettingsRoutes, type SettingsState } from './state';

/** The providers as a table, and a form to add one (the secret is never shown again). */
export function providersPart(app: MagicLinkApp | undefined, csrf: string, s: SettingsState): Html {
  const providers = (app?.oidc_providers ?? []).map(
    (p) =>
      html`<tr>
        <td><strong>${p.name}</strong> <code>${p.id}</code></td>
        <td class="small">${p.issuer}</td>
        <td class="hide-sm"><code>${p.client_id}</code></td>
        <td>
          ${actionButton({ action: `/app/settings/providers/${p.id}/delete`, label: 'Remove', csrf, style: 'danger', confirm: `Remove the sign-in provider ${p.name}?` })}
        </td>
      </tr>`,
  );
  const form = formOf(s, 'providers');
  return html`<h3>Social sign-in providers (OpenID Connect)</h3>
    ${notices(s, 'providers')}
    <div class="scroll">
      ${table(['Provider', 'Issuer', html`<th class="hide-sm">Client id</th>`, html`<th><span class="skip">Actions</span></th>`], providers, 'None. Add one to offer social sign-in.', 'muted')}
    </div>
    <form method="post" action="/app/settings/providers" class="gap-above">
      ${csrfField(csrf)}
      <div class="row">
        ${field({ name: 'id', label: 'Id', value: one(form, 'id'), hint: 'Lowercase, e.g. google' })}
        ${field({ name: 'name', id: 'f-provider-name', label: 'Button name', value: one(form, 'name'), hint: 'e.g. Google' })}
        ${field({ name: 'issuer', label: 'Issuer URL', type: 'url', value: one(form, 'issuer') })}
        ${field({ name: 'client_id', label: 'Client id', value: one(form, 'client_id') })}
        ${field({ name: 'client_secret', label: 'Client secret', type: 'password', attrs: raw('autocomplete="off"') })}
      </div>
      <button type="submit" class="secondary">Add provider</button>
    </form>`;
}

/** Adding a provider at the end of the list, and removing one; a refusal names the new provider's fields plainly. */
export function providerRoutes({ web, service, page }: SettingsRoutes): void {
  web.post('/settings/providers', async (req, reply) => {
    const form = req.body as Form;
    const current = (await service.apps.magicLink.get())?.oidc_providers ?? [];
    const added = {
      id: one(form, 'id').trim(),
      name: one(form, 'name').trim(),
      issuer: one(form, 'issuer').trim(),
      client_id: one(form, 'client_id').trim(),
      client_secret: one(form, 'client_secret') || undefined,
    };
    try {
      await service.apps.magicLink.put({ oidc_providers: [...current, added] });
    } catch (err) {
      const f = failureOf(err);
      // the new provider is the last of the list: name its fields plainly
      const last = `oidc_providers[${current.length}].`;
      return page(req, reply, {
        section: 'providers',
        form,
        error: { ...f, details: f.details.map((d) => ({ ...d, field: d.field.replace(last, '') })) },
        status: 422,
      });
    }
    return reply.redirect('/app/settings?done=app_saved#magic-link-app', 303);
  });
  web.post('/settings/providers/:id/delete', async (req, reply) => {
    const { id } = req.params as { id: string };
    const current = (await service.apps.magicLink.get())?.oidc_providers ?? [];
    try {
      await service.apps.magicLink.put({ oidc_providers: current.filter((p) => p.id !== id) });
    } catch (err) {
      return page(req, reply, { section: 'providers', error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=provider_removed#magic-link-app', 303);
  });
}
