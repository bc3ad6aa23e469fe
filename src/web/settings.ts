/**
 * The Settings section: API keys and postcard tokens, the postcard intake, document retention, the
 * Magic Link app, webhooks. This file lays out the page and shows a new secret once; each part of
 * the page, with the forms it answers, is a file of its own in ./settings.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Service } from '../service';
import { doneNotice, page, redirectShowingOnce, takeShownOnce, type WebSection } from './context';
import { copyButton, type Html, html } from './html';
import { credentialRoutes, credentialsCard } from './settings/credentials';
import { magicLinkCard, magicLinkRoutes } from './settings/magic-link';
import { providerRoutes } from './settings/providers';
import { partnerCard, partnerRoutes } from './settings/partner';
import { retentionCard, retentionRoutes } from './settings/retention';
import type { SettingsPart, SettingsRoutes, SettingsState } from './settings/state';
import { webhookRoutes, webhooksCard } from './settings/webhooks';
import { secureCookies } from '../config';

const SECRET_PATH = '/app/settings';

/** Where clients send postcards: the Magic Link app's public URL (or this server's) and the postcard path. */
async function intakeUrl(service: Service): Promise<string> {
  return `${(await service.apps.magicLink.get())?.public_url ?? service.config.publicUrl}${service.config.postcardPath}`;
}

/** The postcard intake part of the page: its URL to copy. */
function intakeCard(intake: string): Html {
  return html`<section class="card" id="intake" aria-labelledby="h-intake">
    <h2 id="h-intake">Postcard intake</h2>
    <p>
      Give clients this URL and a postcard token. They POST JSON with the token in the body field
      <code>api_token</code>; the service answers <code>202 Accepted</code>.
    </p>
    <p class="id"><code data-intake-url>${intake}</code>${copyButton(intake)}</p>
  </section>`;
}

/** The Settings page, every part of it; `s` says which form it answers, with what was sent and why it was refused. */
async function settingsPage(service: Service, req: FastifyRequest, reply: FastifyReply, s: SettingsState = {}) {
  const csrf = req.admin!.csrf;
  const [keys, app, hooks, hasPassword, storageApp, partner] = await Promise.all([
    service.keys.list(),
    service.apps.magicLink.get(),
    service.webhooks.list({ limit: 100 }),
    service.operators.hasPassword(),
    service.apps.storage.get(),
    service.apps.mailPartner.get(),
  ]);
  const intake = await intakeUrl(service);
  const body = html`<div class="head">
      <div>
        <h1>Settings</h1>
        <p class="sub">
          Credentials, the postcard intake and mail partner, document retention, the Magic Link app and webhooks.
        </p>
      </div>
    </div>
    ${doneNotice(req)} ${intakeCard(intake)} ${credentialsCard(keys, hasPassword, csrf, s)}
    ${partnerCard(partner, new URL(intake).origin, csrf, s)} ${retentionCard(storageApp, csrf, s)}
    ${magicLinkCard(app, service.apps.magicLink.serverUrl, csrf, s)} ${webhooksCard(hooks.data, csrf, s)}`;
  return page(req, reply, { section: 'settings', title: 'Settings', body, status: s.status });
}

export const settingsSection: WebSection = (service) => async (web) => {
  const secure = secureCookies(service.config);
  const routes: SettingsRoutes = {
    web,
    service,
    page: (req, reply, s) => settingsPage(service, req, reply, s),
    // the section's id on the page is its name
    redirectWithSecret: (reply, section, secret) =>
      redirectShowingOnce(reply, secure, SECRET_PATH, `#${section}`, { section, ...secret }),
  };
  web.get('/settings', async (req, reply) => {
    const shown = takeShownOnce(req, reply, SECRET_PATH);
    const state: SettingsState = shown
      ? { section: shown.section as SettingsPart, secret: { title: shown.title, value: shown.value, hint: shown.hint } }
      : {};
    return settingsPage(service, req, reply, state);
  });
  credentialRoutes(routes);
  retentionRoutes(routes);
  partnerRoutes(routes);
  magicLinkRoutes(routes);
  providerRoutes(routes);
  webhookRoutes(routes);
};
