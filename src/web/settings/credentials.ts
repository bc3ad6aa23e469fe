/** API keys and postcard tokens: their tables, the forms to make one, revoking. */
import { ALL_SCOPES, type KeyInfo, type KeyKind } from '../../keys';
import { failureOf } from '../context';
import { one, type Form } from '../forms';
import { actionButton, badge, csrfField, field, type Html, html, table, when } from '../html';
import { notices, type SettingsRoutes, type SettingsState } from './state';

/** The API keys or the postcard tokens: a table, and a form to make one. */
function credentialTable(kind: KeyKind, keys: KeyInfo[], csrf: string, s: SettingsState): Html {
  const rows = keys
    .filter((k) => k.kind === kind)
    .map(
      (k) =>
        html`<tr>
          <td>
            <strong>${k.name}</strong>
            <div class="muted small mono">${k.id}</div>
          </td>
          <td><code>${k.prefix}…</code></td>
          <td class="hide-sm">${when(k.created_at)}</td>
          <td>${when(k.last_used_at, 'never')}</td>
          ${kind === 'api' && html`<td class="small">${k.scopes.length === ALL_SCOPES.length ? 'all' : k.scopes.map((x) => html`<span class="chip">${x}</span>`)}</td>`}
          <td>
            ${k.revoked_at ? badge('revoked') : actionButton({ action: `/app/settings/credentials/${k.id}/revoke`, label: 'Revoke', csrf, style: 'danger', confirm: `Revoke "${k.name}"? Everything using it stops working at once.` })}
          </td>
        </tr>`,
    );
  return html`<div class="scroll">
      ${table(['Name', 'Starts with', html`<th class="hide-sm">Created</th>`, 'Last used', ...(kind === 'api' ? ['Scopes'] : []), html`<th><span class="skip">Status</span></th>`], rows, 'None yet.', 'muted')}
    </div>
    <form method="post" action="/app/settings/credentials" class="row bottom gap-above">
      ${csrfField(csrf)}<input type="hidden" name="kind" value="${kind}" />
      ${field({
        name: 'name',
        id: `f-name-${kind}`,
        label: kind === 'api' ? 'New API key name' : 'New postcard token name',
        hint:
          kind === 'api'
            ? 'Who or what uses it, e.g. "n8n production".'
            : 'Who sends postcards with it, e.g. "website form".',
        value: s.section === 'credentials' && one(s.form ?? {}, 'kind') === kind ? one(s.form!, 'name') : '',
      })}
      <div class="field">
        <button type="submit">${kind === 'api' ? 'Create API key' : 'Create postcard token'}</button>
      </div>
    </form>`;
}

/** The credentials part of the page: API keys, then postcard tokens, each with the notices of its own form. */
export function credentialsCard(keys: KeyInfo[], hasPassword: boolean, csrf: string, s: SettingsState): Html {
  const postcardKind = s.section === 'credentials' && one(s.form ?? {}, 'kind') === 'postcard';
  return html`<section class="card" id="credentials" aria-labelledby="h-keys">
    <h2 id="h-keys">API keys</h2>
    <p class="muted small">
      Sent in the <code>X-Service-API-Token</code> header; they also sign in here. Shown once when made; only a hash is
      kept.
    </p>
    ${!postcardKind && notices(s, 'credentials')}${credentialTable('api', keys, csrf, s)}
    <h2 id="h-tokens" class="gap-above-l">Postcard tokens</h2>
    <p class="muted small">The <code>api_token</code> of postcard requests. They cannot call the API.</p>
    ${postcardKind && notices(s, 'credentials')}${credentialTable('postcard', keys, csrf, s)}
    <p class="hint gap-above">
      Operator password: ${hasPassword ? 'set' : 'not set'} (<code>paperlink admin set-password</code>).
    </p>
  </section>`;
}

/** Making a key or a token (shown once, after a redirect) and revoking one. */
export function credentialRoutes({ web, service, page, redirectWithSecret }: SettingsRoutes): void {
  web.post('/settings/credentials', async (req, reply) => {
    const form = req.body as Form;
    const kind: KeyKind = one(form, 'kind') === 'postcard' ? 'postcard' : 'api';
    try {
      const { secret, key } = await service.keys.create(kind, one(form, 'name'));
      const what = kind === 'api' ? 'API key' : 'postcard token';
      return redirectWithSecret(reply, 'credentials', {
        title: `New ${what} "${key.name}"`,
        value: secret,
        hint: `Copy it now: it is shown only this once. Only its hash is kept.`,
      });
    } catch (err) {
      return page(req, reply, { section: 'credentials', form, error: failureOf(err), status: 422 });
    }
  });
  web.post('/settings/credentials/:id/revoke', async (req, reply) => {
    await service.keys.revoke((req.params as { id: string }).id);
    return reply.redirect('/app/settings?done=revoked#credentials', 303);
  });
}
