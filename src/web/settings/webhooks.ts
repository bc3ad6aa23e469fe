/** Webhooks: the list, adding one (its signing secret shown once), deleting one. */
import { EVENT_TYPES } from '../../events';
import type { WebhookInfo } from '../../webhooks';
import { failureOf } from '../context';
import { all, one, type Form } from '../forms';
import { actionButton, csrfField, field, type Html, html, table, when } from '../html';
import { checked, formOf, notices, type SettingsRoutes, type SettingsState } from './state';

/** The event types to choose from, all of them (`*`) first, as checkboxes. */
function eventsField(chosen: string[]): Html {
  return html`<div class="field" role="group" aria-labelledby="h-events">
    <strong class="small" id="h-events">Events</strong>
    <div class="choices">
      <label><input type="checkbox" name="events" value="*" ${checked(chosen.includes('*'))} /> All events</label>
      ${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="events" value="${t}" ${checked(chosen.includes(t))} /> <code>${t}</code></label>`)}
    </div>
  </div>`;
}

/** The webhooks part of the page: a table, and a form to add one. */
export function webhooksCard(hooks: WebhookInfo[], csrf: string, s: SettingsState): Html {
  const rows = hooks.map(
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
  const form = formOf(s, 'webhooks');
  return html`<section class="card" id="webhooks" aria-labelledby="h-hooks">
    <h2 id="h-hooks">Webhooks</h2>
    <p class="muted small">Signed POSTs to your URL when documents, links and postcards change.</p>
    ${notices(s, 'webhooks')}
    <div class="scroll">
      ${table(['URL', 'Events', html`<th class="hide-sm">Created</th>`, html`<th><span class="skip">Actions</span></th>`], rows, 'None.', 'muted')}
    </div>
    <form method="post" action="/app/settings/webhooks" class="gap-above">
      ${csrfField(csrf)}
      <div class="row">
        ${field({ name: 'url', label: 'Endpoint URL', type: 'url', value: one(form, 'url') })}
        ${field({ name: 'description', label: 'Description (optional)', value: one(form, 'description') })}
      </div>
      ${eventsField(all(form, 'events'))}
      <button type="submit" class="secondary">Add webhook</button>
    </form>
  </section>`;
}

/** Adding a webhook (its signing secret shown once, after a redirect) and deleting one. */
export function webhookRoutes({ web, service, page, redirectWithSecret }: SettingsRoutes): void {
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
      return page(req, reply, { section: 'webhooks', form, error: failureOf(err), status: 422 });
    }
  });
  web.post('/settings/webhooks/:id/delete', async (req, reply) => {
    await service.webhooks.remove((req.params as { id: string }).id);
    return reply.redirect('/app/settings?done=webhook_deleted#webhooks', 303);
  });
}
