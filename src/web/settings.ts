/** The Settings section: API keys and postcard tokens, the postcard intake, the Magic Link app, webhooks. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EVENT_TYPES } from '../events';
import { ALL_SCOPES, type KeyInfo, type KeyKind } from '../keys';
import { publicUrlMismatch } from '../links/app';
import { doneNotice, failureOf, page, type Failure, type WebSection } from './context';
import { all, one, type Form } from './forms';
import {
  actionButton,
  badge,
  copyButton,
  csrfField,
  errorNotice,
  field,
  type Html,
  html,
  raw,
  secretNotice,
  select,
  table,
  when,
} from './html';

interface SettingsState {
  section?: 'credentials' | 'app' | 'providers' | 'webhooks' | 'storage';
  error?: Failure;
  form?: Form;
  secret?: { title: string; value: string; hint: string };
  status?: number;
}

const checked = (on: boolean) => on && raw(' checked');

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

/**
 * A secret made by a form (a key, a token, a webhook's signing secret) is shown once, after a
 * redirect: the POST answers 303 with it in a short-lived cookie only this page reads, and the
 * page clears the cookie as it shows it. Reloading the page then makes nothing and shows it no
 * more (a page answered to the POST would make another on every reload).
 */
const SECRET_COOKIE = 'plk_new_secret';
const SECRET_PATH = '/app/settings';

export const settingsSection: WebSection = (service) => async (web) => {
  const secure = service.config.publicUrl.startsWith('https://');
  const redirectWithSecret = (
    reply: FastifyReply,
    section: NonNullable<SettingsState['section']>,
    secret: NonNullable<SettingsState['secret']>,
  ) => {
    void reply.setCookie(SECRET_COOKIE, Buffer.from(JSON.stringify({ section, ...secret })).toString('base64url'), {
      path: SECRET_PATH,
      httpOnly: true,
      sameSite: 'strict',
      secure,
      maxAge: 300,
    });
    // the section's id on the page is its name
    return reply.redirect(`${SECRET_PATH}#${section}`, 303);
  };
  const takeSecret = (req: FastifyRequest, reply: FastifyReply): SettingsState => {
    const cookie = req.cookies[SECRET_COOKIE];
    if (!cookie) return {};
    void reply.clearCookie(SECRET_COOKIE, { path: SECRET_PATH });
    try {
      const { section, title, value, hint } = JSON.parse(Buffer.from(cookie, 'base64url').toString('utf8')) as Record<
        string,
        string
      >;
      if (![section, title, value, hint].every((x) => typeof x === 'string')) return {};
      return { section: section as SettingsState['section'], secret: { title, value, hint } };
    } catch {
      return {};
    }
  };

  const intakeUrl = async () =>
    `${(await service.apps.magicLink.get())?.public_url ?? service.config.publicUrl}${service.config.postcardPath}`;

  async function settingsPage(req: FastifyRequest, reply: FastifyReply, s: SettingsState = {}) {
    const csrf = req.admin!.csrf;
    const [keys, app, hooks, hasPassword, storageApp] = await Promise.all([
      service.keys.list(),
      service.apps.magicLink.get(),
      service.webhooks.list({ limit: 100 }),
      service.operators.hasPassword(),
      service.apps.storage.get(),
    ]);
    // the default retention as the form shows it: an amount and a unit, or nothing (kept until deleted)
    const storageForm = s.section === 'storage' ? (s.form ?? {}) : undefined;
    const [keptUnit, keptAmount] = Object.entries(storageApp.retain_for ?? {})[0] ?? ['days', undefined];
    const retentionErrors = new Map(
      s.section === 'storage' ? (s.error?.details ?? []).map((d) => ['retain_amount', d.message]) : [],
    );
    const mismatch = app && publicUrlMismatch(app, service.apps.magicLink.serverUrl);
    const here = (section: SettingsState['section']) =>
      s.section === section && [
        errorNotice(s.error),
        s.secret && secretNotice(s.secret.title, s.secret.value, s.secret.hint),
      ];
    const intake = await intakeUrl();
    const appForm = s.section === 'app' ? (s.form ?? {}) : {};
    const appValue = (k: keyof NonNullable<typeof app>, fallback = '') =>
      one(appForm, k) || String((app?.[k] as string | null | undefined) ?? fallback);
    const authTypes = s.section === 'app' ? all(appForm, 'auth_types') : (app?.auth_types ?? ['email']);
    const appErrors = new Map(s.section === 'app' ? (s.error?.details ?? []).map((d) => [d.field, d.message]) : []);
    const appError = (name: string) => {
      const message = appErrors.get(name);
      return message && html`<div class="err">${message}</div>`;
    };
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
    const providerForm = s.section === 'providers' ? (s.form ?? {}) : {};
    const hookRows = hooks.data.map(
      (h) =>
        html`<tr>
          <td class="small">
            <strong>${h.url}</strong>${h.description && html`<div class="muted">${h.description}</div>`}
            <div class="muted mono">${h.id}</div>
          </td>
          <td>${h.events.map((e) => html`<span class="chip">${e}</span>`)}</td>
          <td class="hide-sm">${when(h.created_at)}</td>
          <td>
            ${actionButton({ action: `/app/settings/webhooks/${h.id}/delete`, label: 'Delete', csrf, style: 'danger', confirm: 'Delete this webhook? Deliveries not yet sent are dropped.' })}
          </td>
        </tr>`,
    );
    const hookForm = s.section === 'webhooks' ? (s.form ?? {}) : {};
    const chosenEvents = all(hookForm, 'events');
    const postcardKind = s.section === 'credentials' && one(s.form ?? {}, 'kind') === 'postcard';
    const body = html`<div class="head">
        <div>
          <h1>Settings</h1>
          <p class="sub">Credentials, the postcard intake, document retention, the Magic Link app and webhooks.</p>
        </div>
      </div>
      ${doneNotice(req)}
      <section class="card" id="intake" aria-labelledby="h-intake">
        <h2 id="h-intake">Postcard intake</h2>
        <p>
          Give clients this URL and a postcard token. They POST JSON with the token in the body field
          <code>api_token</code>; the service answers <code>202 Accepted</code>.
        </p>
        <p class="id"><code data-intake-url>${intake}</code>${copyButton(intake)}</p>
      </section>
      <section class="card" id="credentials" aria-labelledby="h-keys">
        <h2 id="h-keys">API keys</h2>
        <p class="muted small">
          Sent in the <code>X-Service-API-Token</code> header; they also sign in here. Shown once when made; only a hash
          is kept.
        </p>
        ${!postcardKind && here('credentials')}${credentialTable('api', keys, csrf, s)}
        <h2 id="h-tokens" class="gap-above-l">Postcard tokens</h2>
        <p class="muted small">The <code>api_token</code> of postcard requests. They cannot call the API.</p>
        ${postcardKind && here('credentials')}${credentialTable('postcard', keys, csrf, s)}
        <p class="hint gap-above">
          Operator password: ${hasPassword ? 'set' : 'not set'} (<code>paperlink admin set-password</code>).
        </p>
      </section>
      <section class="card" id="documents" aria-labelledby="h-documents">
        <h2 id="h-documents">Documents</h2>
        ${here('storage')}
        <form method="post" action="/app/settings/storage">
          ${csrfField(csrf)}
          <div class="row">
            ${field({ name: 'retain_amount', label: 'Keep documents for', value: storageForm ? one(storageForm, 'retain_amount') : keptAmount === undefined ? '' : String(keptAmount), errors: retentionErrors, attrs: raw('inputmode="numeric" placeholder="e.g. 90"'), hint: 'Then a document is deleted with its PDF, and its Magic Links end. Empty: until it is deleted. A generate request may say otherwise (retain_for).' })}
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
      </section>
      <section class="card" id="magic-link-app" aria-labelledby="h-app">
        <h2 id="h-app">Magic Link app</h2>
        ${!app && html`<p class="notice error">Not set up yet: Magic Links cannot be made until it is saved.</p>`}${mismatch && html`<p class="notice warn" role="status" data-code="public_url_mismatch">${mismatch}</p>`}${here('app')}
        <form method="post" action="/app/settings/magic-link">
          ${csrfField(csrf)}
          <div class="row">
            ${field({ name: 'public_url', label: 'Public URL of this service', type: 'url', value: s.section === 'app' ? one(appForm, 'public_url') : app && !app.public_url_follows_server ? app.public_url : '', errors: appErrors, attrs: html`placeholder="${service.apps.magicLink.serverUrl}"`, hint: `Links point here: <public URL>/l/<token>. Empty: this server's address (PUBLIC_URL), now ${service.apps.magicLink.serverUrl}.` })}
            ${field({ name: 'organization_name', label: 'Organisation name', value: appValue('organization_name'), errors: appErrors })}
            ${field({ name: 'sender_name', label: 'Sender name', value: appValue('sender_name'), errors: appErrors })}
            ${field({ name: 'sender_email', label: 'Sender e-mail', type: 'email', value: appValue('sender_email'), errors: appErrors })}
            ${field({ name: 'logo_url', label: 'Logo URL (optional)', value: appValue('logo_url'), errors: appErrors, hint: 'https URL or a data: URI; shown on the pages and e-mails.' })}
            <div class="field">
              <label for="f-accent_color">Accent colour</label
              ><input
                id="f-accent_color"
                name="accent_color"
                type="color"
                value="${appValue('accent_color', '#1F6FEB')}"
              />${appError('accent_color')}
            </div>
          </div>
          <div class="field" role="group" aria-labelledby="h-auth">
            <strong class="small" id="h-auth">Allowed authentication types</strong>
            <div class="choices">
              <label
                ><input type="checkbox" name="auth_types" value="email" ${checked(authTypes.includes('email'))} /> Email
                code</label
              >
              <label
                ><input type="checkbox" name="auth_types" value="social" ${checked(authTypes.includes('social'))} />
                Social sign-in</label
              >
            </div>
            ${appError('auth_types')}
          </div>
          <button type="submit">Save Magic Link settings</button>
        </form>
        <h3>Social sign-in providers (OpenID Connect)</h3>
        ${here('providers')}
        <div class="scroll">
          ${table(['Provider', 'Issuer', html`<th class="hide-sm">Client id</th>`, html`<th><span class="skip">Actions</span></th>`], providers, 'None. Add one to offer social sign-in.', 'muted')}
        </div>
        <form method="post" action="/app/settings/providers" class="gap-above">
          ${csrfField(csrf)}
          <div class="row">
            ${field({ name: 'id', label: 'Id', value: one(providerForm, 'id'), hint: 'Lowercase, e.g. google' })}
            ${field({ name: 'name', id: 'f-provider-name', label: 'Button name', value: one(providerForm, 'name'), hint: 'e.g. Google' })}
            ${field({ name: 'issuer', label: 'Issuer URL', type: 'url', value: one(providerForm, 'issuer') })}
            ${field({ name: 'client_id', label: 'Client id', value: one(providerForm, 'client_id') })}
            ${field({ name: 'client_secret', label: 'Client secret', type: 'password', attrs: raw('autocomplete="off"') })}
          </div>
          <button type="submit" class="secondary">Add provider</button>
        </form>
      </section>
      <section class="card" id="webhooks" aria-labelledby="h-hooks">
        <h2 id="h-hooks">Webhooks</h2>
        <p class="muted small">Signed POSTs to your URL when documents, links and postcards change.</p>
        ${here('webhooks')}
        <div class="scroll">
          ${table(['URL', 'Events', html`<th class="hide-sm">Created</th>`, html`<th><span class="skip">Actions</span></th>`], hookRows, 'None.', 'muted')}
        </div>
        <form method="post" action="/app/settings/webhooks" class="gap-above">
          ${csrfField(csrf)}
          <div class="row">
            ${field({ name: 'url', label: 'Endpoint URL', type: 'url', value: one(hookForm, 'url') })}
            ${field({ name: 'description', label: 'Description (optional)', value: one(hookForm, 'description') })}
          </div>
          <div class="field" role="group" aria-labelledby="h-events">
            <strong class="small" id="h-events">Events</strong>
            <div class="choices">
              <label
                ><input type="checkbox" name="events" value="*" ${checked(chosenEvents.includes('*'))} /> All
                events</label
              >
              ${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="events" value="${t}" ${checked(chosenEvents.includes(t))} /> <code>${t}</code></label>`)}
            </div>
          </div>
          <button type="submit" class="secondary">Add webhook</button>
        </form>
      </section>`;
    return page(req, reply, { section: 'settings', title: 'Settings', body, status: s.status });
  }

  web.get('/settings', async (req, reply) => settingsPage(req, reply, takeSecret(req, reply)));
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
      return settingsPage(req, reply, { section: 'credentials', form, error: failureOf(err), status: 422 });
    }
  });
  web.post('/settings/credentials/:id/revoke', async (req, reply) => {
    await service.keys.revoke((req.params as { id: string }).id);
    return reply.redirect('/app/settings?done=revoked#credentials', 303);
  });
  web.post('/settings/storage', async (req, reply) => {
    const form = req.body as Form;
    const amount = one(form, 'retain_amount').trim();
    const unit = one(form, 'retain_unit') || 'days';
    try {
      await service.apps.storage.put({
        retain_for: amount ? { [unit]: /^\d{1,12}$/.test(amount) ? Number(amount) : amount } : null,
      });
    } catch (err) {
      return settingsPage(req, reply, { section: 'storage', form, error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=retention_saved#documents', 303);
  });
  web.post('/settings/magic-link', async (req, reply) => {
    const form = req.body as Form;
    const body: Record<string, unknown> = { auth_types: all(form, 'auth_types') };
    for (const k of ['sender_name', 'sender_email', 'organization_name', 'accent_color']) body[k] = one(form, k).trim();
    // empty: follow this server's address
    body.public_url = one(form, 'public_url').trim() || null;
    body.logo_url = one(form, 'logo_url').trim() || null;
    try {
      await service.apps.magicLink.put(body);
    } catch (err) {
      return settingsPage(req, reply, { section: 'app', form, error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=app_saved#magic-link-app', 303);
  });
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
      return settingsPage(req, reply, {
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
      return settingsPage(req, reply, { section: 'providers', error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=provider_removed#magic-link-app', 303);
  });
  web.post('/settings/webhooks', async (req, reply) => {
    const form = req.body as Form;
    const events = all(form, 'events');
    try {
      const hook = await service.webhooks.create({
        url: one(form, 'url').trim(),
        events: events.includes('*') ? '*' : events,
        description: one(form, 'description').trim() || undefined,
      });
      return redirectWithSecret(reply, 'webhooks', {
        title: `Webhook ${hook.id} created. Its signing secret:`,
        value: hook.secret!,
        hint: 'Copy it now: verify the Paperlink-Signature header of each delivery with it. It is not shown again.',
      });
    } catch (err) {
      return settingsPage(req, reply, { section: 'webhooks', form, error: failureOf(err), status: 422 });
    }
  });
  web.post('/settings/webhooks/:id/delete', async (req, reply) => {
    await service.webhooks.remove((req.params as { id: string }).id);
    return reply.redirect('/app/settings?done=webhook_deleted#webhooks', 303);
  });
};
