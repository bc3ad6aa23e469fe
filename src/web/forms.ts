/**
 * From HTML forms to the API's request bodies, and from the API's error details back to the
 * form's fields. The web app checks nothing itself: the bodies go through the same code as
 * the HTTP API, so the rules and the messages are the API's.
 */
import type { ErrorDetail } from '../errors';
import { field, html, radios, raw, select, type Html } from './html';
import { MAX_MESSAGE, SETTING_KEYS } from '../links/policy';

export type Form = Record<string, string | string[] | undefined>;

/** The value of a single-valued form field ('' when absent). */
/** The first value of a field as text ('' when absent; a body sent as JSON may hold anything). */
export function one(form: Form, name: string): string {
  const v: unknown = form[name];
  const first: unknown = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : '';
}

/** Every value of a repeated field (checkboxes). */
export function all(form: Form, name: string): string[] {
  const v: unknown = form[name];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

/** A whole number as a number; anything else is passed on as typed, so the API's rule reports it. */
function amount(text: string): number | string {
  return /^\d{1,12}$/.test(text.trim()) ? Number(text.trim()) : text;
}

/**
 * The Magic Link settings of the spec's web form: Recipient Email, Authorization Email Address,
 * Authentication Type, Expire after an amount and a unit, timer from sending or opening, and
 * Expire after N views. Empty optional fields are left out.
 */
export function linkSettingsFrom(form: Form): Record<string, unknown> {
  const settings: Record<string, unknown> = { auth_type: one(form, 'auth_type') || 'email' };
  const recipient = one(form, 'recipient_email').trim();
  if (recipient) settings.recipient_email = recipient;
  const auth = one(form, 'auth_email').trim();
  if (auth) settings.auth_email = auth;
  const time = one(form, 'expire_amount').trim();
  if (time)
    settings[one(form, 'timer_start') === 'opened' ? 'retain_from_opened' : 'retain_from_created'] = {
      [one(form, 'expire_unit') || 'hours']: amount(time),
    };
  const views = one(form, 'expire_views').trim();
  if (views) settings.expire_after_n_views = amount(views);
  const watermark = one(form, 'watermark_text').trim();
  if (watermark) settings.watermark = { text: watermark, position: one(form, 'watermark_position') || 'center' };
  if (one(form, 'download') === 'off') settings.allow_download = false;
  // addresses and domains, one per line or separated by commas or spaces
  const others = one(form, 'allowed_viewers')
    .split(/[\s,;]+/)
    .filter(Boolean);
  if (others.length) settings.allowed_viewers = others;
  const notify = all(form, 'notify');
  if (notify.length)
    settings.notify_sender = { on_first_view: notify.includes('first_view'), on_end: notify.includes('ended') };
  const remind = one(form, 'remind_hours').trim();
  if (remind) settings.remind_before = { hours: amount(remind) };
  const message = one(form, 'message').trim();
  if (message) settings.message = message;
  return settings;
}

/** A path that starts with a Magic Link setting's name (the share form's body is the settings themselves). */
const LINK_SETTING = new RegExp(`^(${SETTING_KEYS.join('|')})`);

/** Whether an API error detail is about the Magic Link settings (not, say, a merge field named recipient_email). */
function isLinkPath(path: string): boolean {
  return path.includes('magic_link') || path === 'body' || path.startsWith('body.') || LINK_SETTING.test(path);
}

/** Where an API error detail about Magic Link settings belongs on the form; undefined for any other detail. */
function linkField(path: string): string | undefined {
  if (!isLinkPath(path)) return undefined;
  const last = path.split('.');
  const key = last.find((k) => (SETTING_KEYS as readonly string[]).includes(k.replace(/\[\d+\]$/, '')));
  if (!key) return undefined;
  if (key.startsWith('allowed_viewers')) return 'allowed_viewers';
  if (key === 'notify_sender') return 'notify';
  if (key === 'remind_before') return 'remind_hours';
  return {
    recipient_email: 'recipient_email',
    auth_email: 'auth_email',
    auth_type: 'auth_type',
    expire_after_n_views: 'expire_views',
    retain_from_created: 'expire_amount',
    retain_from_opened: 'expire_amount',
    watermark: 'watermark_text',
    allow_download: 'download',
    message: 'message',
  }[key];
}

/**
 * The form field each error detail is about: Magic Link settings by their names, the document
 * name, merge fields as `var:<name>`, anything else (e.g. "needs a limit") by the path given.
 */
export function fieldErrors(details: ErrorDetail[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of details) {
    const f = d.field;
    const name = isLinkPath(f)
      ? (linkField(f) ?? 'expire_amount')
      : f === 'destinations.inkit_storage.name'
        ? 'store_name'
        : f.startsWith('merge_parameters.')
          ? `var:${f.slice('merge_parameters.'.length)}`
          : f === 'destinations'
            ? 'destinations'
            : `var:${f}`;
    if (!out.has(name)) out.set(name, d.message);
  }
  return out;
}

/** The words of a variable's name: snake_case, camelCase, dotted paths and numbers split apart. */
export function wordsOf(name: string): string[] {
  return name
    .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/(\p{L})(\p{N})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/**
 * A variable's name as a label: `recipient_name` is "Recipient name", `invoiceTotal` "Invoice
 * total", `customer.address.city` "Customer address city". An acronym in a mixed-case name stays
 * one (`customerURL` is "Customer URL"); a name in capitals only is read as words (`VAT_NUMBER` is
 * "Vat number"). A name with no letters or digits is shown as it is.
 */
export function readableLabel(name: string): string {
  const words = wordsOf(name);
  if (!words.length) return name;
  const mixed = /\p{Ll}/u.test(name);
  const text = words.map((w) => (mixed && w.length > 1 && w === w.toUpperCase() ? w : w.toLowerCase())).join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The form's label of an API field, for the list at the top of a form. */
export function formLabel(field: string): string {
  const f = linkField(field);
  if (f)
    return {
      recipient_email: 'Recipient Email',
      auth_email: 'Authorization Email Address',
      auth_type: 'Authentication Type',
      expire_views: 'Expire after N views',
      expire_amount: 'Expire after',
      watermark_text: 'Watermark',
      download: 'Download',
      allowed_viewers: 'Also allowed',
      notify: 'Tell me',
      remind_hours: 'Remind the recipient',
      message: 'Message',
    }[f]!;
  if (/^destinations\.magic_link$|^body$/.test(field)) return 'Magic Link';
  if (field === 'destinations.inkit_storage.name') return 'Document name';
  if (field === 'destinations') return 'Destinations';
  // a merge field as the form labels it
  return readableLabel(field.replace(/^merge_parameters\./, ''));
}

/**
 * What an API error detail about a Magic Link setting means on the form, in the form's words
 * (the API's messages name JSON fields); other details as the API says them.
 */
export function formMessage(d: ErrorDetail): string {
  const f = linkField(d.field);
  if (d.code === 'no_limit') return 'Choose a limit: a number of views, a time, or both.';
  if (f === 'recipient_email' && d.code === 'required') return "Enter the recipient's e-mail address.";
  if ((f === 'recipient_email' || f === 'auth_email') && d.code === 'invalid_email')
    return 'Enter an e-mail address, like name@example.com.';
  if (f === 'expire_views' && d.code === 'range') return 'Enter a whole number of views, from 1 to 1,000,000.';
  if (f === 'expire_amount' && d.code === 'range')
    return 'Enter a whole number of minutes, hours or days: at least 1, at most 10 years.';
  if (f === 'expire_amount' && d.code === 'conflict') return 'Choose one timer: from sending or from opening.';
  if (f === 'allowed_viewers' && d.code === 'invalid_email')
    return 'Enter e-mail addresses and domains written @example.com, separated by commas.';
  if (f === 'remind_hours' && d.code === 'range')
    return 'Enter whole hours, fewer than the link lasts (or leave it empty for no reminder).';
  if (f === 'watermark_text' && d.code === 'unknown_placeholder')
    return 'Use only the placeholders {{email}}, {{viewed_at}}, {{ip}} and {{link_id}}.';
  if (f === 'auth_type' && d.code === 'not_allowed')
    return 'That sign-in is not allowed by the Magic Link settings: choose one of those offered.';
  return d.message;
}

/** Where the Magic Link app's sign-in types and providers are set (src/web/settings/magic-link.ts). */
const MAGIC_LINK_SETTINGS = '/app/settings#magic-link-app';

/**
 * The Authentication Type choice: Email when the Magic Link app allows it, and Social always, so
 * that it can be found; while the app does not allow it, it cannot be chosen and says where it is
 * set up (a provider, then Social in the allowed types, both on the Settings page).
 */
function authTypeField(chosen: string, errors: Map<string, string>, id: string, authTypes: string[]): Html {
  const socialReady = authTypes.includes('social');
  const offered: string[] = authTypes.filter((t) => t === 'email' || t === 'social');
  const note = `${id}-social-setup`;
  return radios({
    name: 'auth_type',
    legend: 'Authentication Type',
    options: [
      ...(authTypes.includes('email') ? [['email', 'Email (a one-time code)'] as [string, string]] : []),
      ['social', 'Social (OpenID Connect sign-in)', socialReady ? undefined : note],
    ],
    value: offered.includes(chosen) ? chosen : (offered[0] ?? 'email'),
    errors,
    hint: socialReady
      ? undefined
      : html`<div class="hint" id="${note}">
          Social sign-in is not set up: add a sign-in provider and allow Social sign-in in
          <a href="${MAGIC_LINK_SETTINGS}">Settings → Magic Link app</a>.
        </div>`,
  });
}

/** The Magic Link settings as the spec's web form has them (used by Generate and by Share), offering the authentication types the app allows (authTypeField). */
export function linkFieldset(
  form: Form,
  errors: Map<string, string>,
  id = 'link-settings',
  authTypes: string[] = ['email', 'social'],
): Html {
  const value = (k: string, fallback = '') => one(form, k) || fallback;
  return html`<div id="${id}">
    <div class="row">
      ${field({ name: 'recipient_email', label: 'Recipient Email', type: 'email', value: value('recipient_email'), errors, hint: 'The link is e-mailed here.' })}
      ${field({ name: 'auth_email', label: 'Authorization Email Address', type: 'email', value: value('auth_email'), errors, hint: 'The address the recipient must prove; empty: the recipient email.' })}
    </div>
    ${field({ name: 'allowed_viewers', label: 'Also allowed', value: value('allowed_viewers'), errors, hint: 'Others who may open it, each proving their own address: e-mail addresses and whole domains written @example.com, separated by commas. The view limit counts everyone.', attrs: raw('placeholder="ann@example.com, @example.com"') })}
    ${field({ name: 'message', label: 'Message', value: value('message'), errors, textarea: true, hint: 'Your words to the recipient, quoted in the e-mail and shown above the document. Empty: none.', attrs: raw(`maxlength="${MAX_MESSAGE}"`) })}
    ${authTypeField(value('auth_type'), errors, id, authTypes)}
    <div class="row">
      ${field({ name: 'expire_amount', label: 'Expire after', type: 'text', value: value('expire_amount'), errors, attrs: raw('inputmode="numeric" placeholder="e.g. 24"') })}
      ${select({
        name: 'expire_unit',
        label: 'Unit',
        options: [
          ['minutes', 'Minutes'],
          ['hours', 'Hours'],
          ['days', 'Days'],
        ],
        value: value('expire_unit', 'hours'),
      })}
      ${select({
        name: 'timer_start',
        label: 'Timer starts',
        options: [
          ['sent', 'When Sent'],
          ['opened', 'When Opened'],
        ],
        value: value('timer_start', 'sent'),
      })}
      ${field({ name: 'expire_views', label: 'Expire after N views', type: 'text', value: value('expire_views'), errors, attrs: raw('inputmode="numeric" placeholder="e.g. 3"') })}
    </div>
    <p class="hint">
      Set a time limit, a number of views, or both: whichever comes first ends the link. A link with a view limit also
      ends 10 days after it is made.
    </p>
    <div class="row">
      ${field({ name: 'watermark_text', label: 'Watermark', value: value('watermark_text'), errors, hint: 'Drawn over every page the recipient sees, e.g. Shared with {{email}} on {{viewed_at}}. Also {{ip}} and {{link_id}}. Empty: none.', attrs: raw('maxlength="200"') })}
      ${select({
        name: 'watermark_position',
        label: 'Watermark position',
        options: [
          ['center', 'Across the middle'],
          ['tiled', 'Tiled over the page'],
          ['top', 'At the top'],
          ['bottom', 'At the bottom'],
        ],
        value: value('watermark_position', 'center'),
      })}
      ${select({
        name: 'download',
        label: 'Download',
        options: [
          ['allowed', 'Allowed'],
          ['off', 'Off: pages shown as images'],
        ],
        value: value('download', 'allowed'),
      })}
    </div>
    <div class="row">
      <div class="field" role="group" aria-labelledby="${id}-notify">
        <strong class="small" id="${id}-notify">Tell me (the Magic Link app's sender e-mail)</strong>
        <div class="choices">
          <label
            ><input
              type="checkbox"
              name="notify"
              value="first_view"
              ${all(form, 'notify').includes('first_view') ? raw('checked') : ''}
            />
            When it is first viewed</label
          >
          <label
            ><input
              type="checkbox"
              name="notify"
              value="ended"
              ${all(form, 'notify').includes('ended') ? raw('checked') : ''}
            />
            When it ends</label
          >
        </div>
      </div>
      ${field({ name: 'remind_hours', label: 'Remind the recipient', value: value('remind_hours'), errors, attrs: raw('inputmode="numeric" placeholder="e.g. 24"'), hint: 'Hours before the link ends, if they have not opened it yet. Empty: no reminder.' })}
    </div>
  </div>`;
}
