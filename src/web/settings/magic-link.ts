/** The Magic Link app: where links point, who sends them, how they look, how recipients sign in. */
import { publicUrlMismatch, type MagicLinkApp } from '../../links/app';
import { failureOf } from '../context';
import { all, one, type Form } from '../forms';
import { csrfField, field, type Html, html } from '../html';
import { providersPart } from './providers';
import { checked, formOf, notices, type SettingsRoutes, type SettingsState } from './state';

/** The sign-in types a recipient may be offered, as checkboxes. */
function authTypesField(authTypes: string[], error: Html | '' | undefined): Html {
  return html`<div class="field" role="group" aria-labelledby="h-auth">
    <strong class="small" id="h-auth">Allowed authentication types</strong>
    <div class="choices">
      <label
        ><input type="checkbox" name="auth_types" value="email" ${checked(authTypes.includes('email'))} /> Email
        code</label
      >
      <label
        ><input type="checkbox" name="auth_types" value="social" ${checked(authTypes.includes('social'))} /> Social
        sign-in</label
      >
    </div>
    ${error}
  </div>`;
}

/**
 * The Magic Link settings form: the public URL, the sender, the branding, the sign-in types; after a
 * refusal, what was sent and each field's error.
 */
function appForm(app: MagicLinkApp | undefined, serverUrl: string, csrf: string, s: SettingsState): Html {
  const form = formOf(s, 'app');
  const value = (k: keyof MagicLinkApp, fallback = '') =>
    one(form, k) || String((app?.[k] as string | null | undefined) ?? fallback);
  const authTypes = s.section === 'app' ? all(form, 'auth_types') : (app?.auth_types ?? ['email']);
  const errors = new Map(s.section === 'app' ? (s.error?.details ?? []).map((d) => [d.field, d.message]) : []);
  const error = (name: string) => {
    const message = errors.get(name);
    return message && html`<div class="err">${message}</div>`;
  };
  return html`<form method="post" action="/app/settings/magic-link">
    ${csrfField(csrf)}
    <div class="row">
      ${field({ name: 'public_url', label: 'Public URL of this service', type: 'url', value: s.section === 'app' ? one(form, 'public_url') : app && !app.public_url_follows_server ? app.public_url : '', errors, attrs: html`placeholder="${serverUrl}"`, hint: `Links point here: <public URL>/l/<token>. Empty: this server's address (PUBLIC_URL), now ${serverUrl}.` })}
      ${field({ name: 'organization_name', label: 'Organisation name', value: value('organization_name'), errors })}
      ${field({ name: 'sender_name', label: 'Sender name', value: value('sender_name'), errors })}
      ${field({ name: 'sender_email', label: 'Sender e-mail', type: 'email', value: value('sender_email'), errors })}
      ${field({ name: 'logo_url', label: 'Logo URL (optional)', value: value('logo_url'), errors, hint: 'https URL or a data: URI; shown on the pages and e-mails.' })}
      <div class="field">
        <label for="f-accent_color">Accent colour</label
        ><input
          id="f-accent_color"
          name="accent_color"
          type="color"
          value="${value('accent_color', '#1F6FEB')}"
        />${error('accent_color')}
      </div>
    </div>
    ${authTypesField(authTypes, error('auth_types'))}
    <button type="submit">Save Magic Link settings</button>
  </form>`;
}

/** The Magic Link app part of the page: whether it is set up, where links point, its form, its sign-in providers. */
export function magicLinkCard(app: MagicLinkApp | undefined, serverUrl: string, csrf: string, s: SettingsState): Html {
  const mismatch = app && publicUrlMismatch(app, serverUrl);
  return html`<section class="card" id="magic-link-app" aria-labelledby="h-app">
    <h2 id="h-app">Magic Link app</h2>
    ${!app && html`<p class="notice error">Not set up yet: Magic Links cannot be made until it is saved.</p>`}${mismatch && html`<p class="notice warn" role="status" data-code="public_url_mismatch">${mismatch}</p>`}${notices(s, 'app')}
    ${appForm(app, serverUrl, csrf, s)} ${providersPart(app, csrf, s)}
  </section>`;
}

/** Saving the Magic Link settings; an empty public URL or logo URL is none. */
export function magicLinkRoutes({ web, service, page }: SettingsRoutes): void {
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
      return page(req, reply, { section: 'app', form, error: failureOf(err), status: 422 });
    }
    return reply.redirect('/app/settings?done=app_saved#magic-link-app', 303);
  });
}
