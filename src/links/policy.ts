/**
 * Magic Link policy: the settings a caller gives, checked field by field, and the deadlines they
 * make. Pure functions of the settings and the time; the database applies them atomically.
 */
import { DateTime, Duration } from 'luxon';
import { ValidationError, type ErrorDetail } from '../errors';
import { isEmail, isObject } from '../guards';
import { WATERMARK_POSITIONS, type WatermarkPosition } from '../templates/viewcopy';

export type AuthType = 'email' | 'social';
export type Unit = 'minutes' | 'hours' | 'days';
export const UNITS: Unit[] = ['minutes', 'hours', 'days'];

/** With a view limit, a link also expires this long after creation (spec §2.4 rule 2). */
export const VIEW_LIMIT_CAP = Duration.fromObject({ days: 10 });
/**
 * A link whose only time limit runs from its first opening, and that has no view limit, must be
 * opened within this long of its creation (the same 10 days as the cap of a view limit); once
 * opened, its timer runs its full length. Without it, an unopened link would live for ever.
 */
export const OPEN_WITHIN = VIEW_LIMIT_CAP;
/** Deadlines further away than this are refused as mistakes. */
export const LONGEST = Duration.fromObject({ years: 10 });
export const MAX_VIEWS = 1_000_000;

/** The settings a Magic Link takes (MagicLinkSettings), as a link answers them too. */
export const SETTING_KEYS = [
  'recipient_email',
  'auth_email',
  'auth_type',
  'expire_after_n_views',
  'retain_from_created',
  'retain_from_opened',
  'watermark',
  'allow_download',
  'allowed_viewers',
  'notify_sender',
  'remind_before',
  'message',
] as const;

export interface Retention extends Span {
  /** When the timer starts: when the link is created (and sent), or when it is first opened. */
  from: 'created' | 'opened';
}

/** The placeholders a watermark's text may use, filled in per viewing session. */
export const WATERMARK_PLACEHOLDERS = ['email', 'viewed_at', 'ip', 'link_id'] as const;
export const WATERMARK_MAX_TEXT = 200;

/** A link's watermark as its settings hold it: `text` still has its placeholders. */
export interface Watermark {
  text: string;
  position: WatermarkPosition;
  opacity: number;
  size: number | null;
  rotation: number | null;
}

export interface LinkSettings {
  recipientEmail: string;
  authEmail: string;
  authType: AuthType;
  maxViews: number | null;
  retention: Retention | null;
  /** Drawn over every page the recipient sees; absent in links made before watermarks. */
  watermark?: Watermark | null;
  /** Whether the recipient may have the PDF (absent: true, as before). Without it, they see page images. */
  allowDownload?: boolean;
  /** Who else may open it besides authEmail: addresses and `@domain`s, in lower case (absent: nobody). */
  allowedViewers?: string[];
  /** E-mails to the sender: on the first view, when the link ends; `email` null: the app's sender_email. */
  notifySender?: { email: string | null; firstView: boolean; ended: boolean } | null;
  /** A reminder to the recipient this long before the link ends, while it is unopened. */
  remindBefore?: Span | null;
  /** The sender's words to the recipient: in the link's e-mail and above the document. */
  message?: string | null;
}

/** The longest `message` a link may carry, in characters. */
export const MAX_MESSAGE = 1000;

function messageOf(value: unknown, field: string, details: ErrorDetail[]): string | null {
  if (value === undefined || value === null) return null;
  // a browser's form sends its line breaks as CRLF: kept as one kind, and counted so
  const text = typeof value === 'string' ? value.replace(/\r\n?/g, '\n').trim() : '';
  if (!text || text.length > MAX_MESSAGE) {
    details.push({ field, message: `must be text of 1 to ${MAX_MESSAGE} characters, or null`, code: 'invalid' });
    return null;
  }
  return text;
}

function notifyOf(value: unknown, field: string, details: ErrorDetail[]): LinkSettings['notifySender'] {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) {
    details.push({ field, message: 'must be an object like {"on_first_view": true, "on_end": true}', code: 'type' });
    return null;
  }
  const start = details.length;
  for (const k of ['on_first_view', 'on_end'])
    if (value[k] !== undefined && typeof value[k] !== 'boolean')
      details.push({ field: `${field}.${k}`, message: 'must be true or false', code: 'type' });
  if (value.email !== undefined && value.email !== null && !isEmail(value.email))
    details.push({ field: `${field}.email`, message: 'must be an e-mail address', code: 'invalid_email' });
  for (const k of Object.keys(value))
    if (!['on_first_view', 'on_end', 'email'].includes(k))
      details.push({ field: `${field}.${k}`, message: 'is not a notification setting', code: 'unknown_field' });
  if (details.length > start) return null;
  return {
    email: (value.email as string | undefined) ?? null,
    firstView: value.on_first_view === true,
    ended: value.on_end === true,
  };
}

/** The most entries `allowed_viewers` may have. */
export const MAX_ALLOWED_VIEWERS = 100;
const DOMAIN = /^@(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

function allowedViewersOf(value: unknown, field: string, details: ErrorDetail[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > MAX_ALLOWED_VIEWERS) {
    details.push({
      field,
      message: `must be a list of up to ${MAX_ALLOWED_VIEWERS} e-mail addresses and domains (@example.com)`,
      code: 'invalid',
    });
    return [];
  }
  const out: string[] = [];
  value.forEach((v: unknown, i) => {
    const entry = typeof v === 'string' ? v.trim().toLowerCase() : '';
    if (DOMAIN.test(entry) || isEmail(entry)) {
      if (!out.includes(entry)) out.push(entry);
    } else
      details.push({
        field: `${field}[${i}]`,
        message: 'must be an e-mail address, or a domain written @example.com',
        code: 'invalid_email',
      });
  });
  return out;
}

/**
 * Whether someone who proved `email` may open a link: its auth_email, an address on its list, or
 * an address at a domain on its list (that domain exactly, not its subdomains). Letter case aside.
 */
export function mayOpen(authEmail: string, allowed: readonly string[] | undefined, email: string): boolean {
  const e = email.trim().toLowerCase();
  if (e === authEmail.toLowerCase()) return true;
  if (!allowed?.length) return false;
  return allowed.includes(e) || allowed.includes(e.slice(e.lastIndexOf('@')));
}

function watermarkOf(value: unknown, field: string, details: ErrorDetail[]): Watermark | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) {
    details.push({ field, message: 'must be an object like {"text": "{{email}}"}', code: 'type' });
    return null;
  }
  const start = details.length;
  const { text, position = 'center', opacity = 0.2, size = null, rotation = null } = value;
  if (typeof text !== 'string' || !text.trim() || text.length > WATERMARK_MAX_TEXT)
    details.push({
      field: `${field}.text`,
      message: `must be text of 1 to ${WATERMARK_MAX_TEXT} characters`,
      code: 'invalid',
    });
  else
    for (const m of text.matchAll(/{{\s*([^}]*?)\s*}}/g))
      if (!(WATERMARK_PLACEHOLDERS as readonly string[]).includes(m[1]))
        details.push({
          field: `${field}.text`,
          message: `{{${m[1]}}} is not a placeholder; use ${WATERMARK_PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}`,
          code: 'unknown_placeholder',
        });
  if (typeof position !== 'string' || !(WATERMARK_POSITIONS as readonly string[]).includes(position))
    details.push({
      field: `${field}.position`,
      message: `must be one of ${WATERMARK_POSITIONS.join(', ')}`,
      code: 'invalid',
    });
  if (typeof opacity !== 'number' || !(opacity >= 0.05 && opacity <= 1))
    details.push({ field: `${field}.opacity`, message: 'must be a number from 0.05 to 1', code: 'range' });
  if (size !== null && (typeof size !== 'number' || !(size >= 6 && size <= 144)))
    details.push({
      field: `${field}.size`,
      message: 'must be a size in points from 6 to 144, or null to fit',
      code: 'range',
    });
  if (rotation !== null && (typeof rotation !== 'number' || !(rotation >= -90 && rotation <= 90)))
    details.push({ field: `${field}.rotation`, message: 'must be degrees from -90 to 90, or null', code: 'range' });
  for (const k of Object.keys(value))
    if (!['text', 'position', 'opacity', 'size', 'rotation'].includes(k))
      details.push({ field: `${field}.${k}`, message: 'is not a watermark setting', code: 'unknown_field' });
  if (details.length > start) return null;
  return {
    text: (text as string).trim(),
    position: position as WatermarkPosition,
    opacity: opacity as number,
    size: size as number | null,
    rotation: rotation as number | null,
  };
}

/** The watermark's text for one viewing session: each placeholder filled in, control characters dropped. */
export function watermarkText(
  text: string,
  values: { email: string; viewed_at: string; ip: string; link_id: string },
): string {
  return text
    .replace(/{{\s*([a-z_]+)\s*}}/g, (whole, name: string) =>
      Object.hasOwn(values, name) ? values[name as keyof typeof values] : whole,
    )
    .replace(/[\p{Cc}\p{Cf}]/gu, ' ');
}

function retentionOf(value: unknown, field: string, from: Retention['from'], details: ErrorDetail[]): Retention | null {
  const d = parseDuration(value, field, details, 'links are for sharing, not archiving');
  return d && { from, ...d };
}

/** An amount of time as the API writes it: one unit key with a positive whole number, e.g. {"days": 30}. */
export interface Span {
  unit: Unit;
  amount: number;
}

/** Reads a span like {"hours": 24}: one unit, a positive whole number, at most 10 years (`why` says why not more). */
export function parseDuration(value: unknown, field: string, details: ErrorDetail[], why: string): Span | null {
  if (!isObject(value)) {
    details.push({ field, message: 'must be an object with one unit key, e.g. {"hours": 24}', code: 'type' });
    return null;
  }
  const keys = Object.keys(value);
  const units = keys.filter((k): k is Unit => (UNITS as string[]).includes(k));
  const unknown = keys.filter((k) => !(UNITS as string[]).includes(k));
  for (const k of unknown)
    details.push({
      field: `${field}.${k}`,
      message: `is not a unit; use one of ${UNITS.join(', ')}`,
      code: 'unknown_unit',
    });
  if (units.length !== 1) {
    if (!unknown.length)
      details.push({
        field,
        message: `must have exactly one unit key (${UNITS.join(', ')}), e.g. {"hours": 24}`,
        code: 'one_unit',
      });
    return null;
  }
  const unit = units[0];
  const amount = value[unit];
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) {
    details.push({ field: `${field}.${unit}`, message: 'must be a positive whole number', code: 'range' });
    return null;
  }
  // compared as numbers, unit by unit: a huge amount (1e308 days) overflows a Duration's arithmetic
  if (amount > LONGEST.as(unit)) {
    details.push({
      field: `${field}.${unit}`,
      message: `is more than 10 years; ${why}`,
      code: 'range',
    });
    return null;
  }
  return { unit, amount };
}

/**
 * Reads the `magic_link` settings (spec §2.4 and DESIGN.md). Every broken field is one detail;
 * `prefix` is where the settings sit in the request, e.g. `destinations.magic_link` ('' when they are
 * the whole body, as the route's schema names the fields too).
 */
export function parseLinkSettings(input: unknown, prefix: string): LinkSettings {
  const details: ErrorDetail[] = [];
  const at = (f: string) => (prefix ? `${prefix}.${f}` : f);
  if (!isObject(input))
    throw new ValidationError('The Magic Link settings must be an object.', [
      { field: prefix || 'body', message: 'must be an object', code: 'type' },
    ]);

  const recipient = input.recipient_email;
  if (recipient === undefined)
    details.push({
      field: at('recipient_email'),
      message: 'is required: the link is e-mailed there',
      code: 'required',
    });
  else if (!isEmail(recipient))
    details.push({ field: at('recipient_email'), message: 'must be an e-mail address', code: 'invalid_email' });
  const auth = input.auth_email ?? recipient;
  if (input.auth_email !== undefined && !isEmail(input.auth_email))
    details.push({ field: at('auth_email'), message: 'must be an e-mail address', code: 'invalid_email' });

  const authType = input.auth_type ?? 'email';
  if (authType !== 'email' && authType !== 'social')
    details.push({ field: at('auth_type'), message: 'must be "email" or "social"', code: 'invalid' });

  let maxViews: number | null = null;
  if (input.expire_after_n_views !== undefined && input.expire_after_n_views !== null) {
    const n = input.expire_after_n_views;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_VIEWS)
      details.push({
        field: at('expire_after_n_views'),
        message: `must be a whole number from 1 to ${MAX_VIEWS}`,
        code: 'range',
      });
    else maxViews = n;
  }

  let retention: Retention | null = null;
  const created = input.retain_from_created;
  const opened = input.retain_from_opened;
  if (created !== undefined && created !== null && opened !== undefined && opened !== null) {
    details.push({
      field: at('retain_from_opened'),
      message: 'give retain_from_created or retain_from_opened, not both',
      code: 'conflict',
    });
  } else if (created !== undefined && created !== null) {
    retention = retentionOf(created, at('retain_from_created'), 'created', details);
  } else if (opened !== undefined && opened !== null) {
    retention = retentionOf(opened, at('retain_from_opened'), 'opened', details);
  }
  const limited =
    maxViews !== null ||
    retention !== null ||
    ['expire_after_n_views', 'retain_from_created', 'retain_from_opened'].some(
      (k) => input[k] !== undefined && input[k] !== null,
    );
  if (!limited)
    details.push({
      field: prefix || 'body',
      message:
        'needs a limit: expire_after_n_views, retain_from_created or retain_from_opened (or views and one time limit)',
      code: 'no_limit',
    });

  const watermark = watermarkOf(input.watermark, at('watermark'), details);
  const allowedViewers = allowedViewersOf(input.allowed_viewers, at('allowed_viewers'), details);
  const notifySender = notifyOf(input.notify_sender, at('notify_sender'), details);
  const remindBefore =
    input.remind_before === undefined || input.remind_before === null
      ? null
      : parseDuration(input.remind_before, at('remind_before'), details, 'a reminder is for a link about to end');
  const message = messageOf(input.message, at('message'), details);
  const allowDownload = input.allow_download ?? true;
  if (typeof allowDownload !== 'boolean')
    details.push({ field: at('allow_download'), message: 'must be true or false', code: 'type' });

  const known = new Set<string>(SETTING_KEYS);
  for (const k of Object.keys(input))
    if (!known.has(k)) details.push({ field: at(k), message: 'is not a Magic Link setting', code: 'unknown_field' });

  // a reminder as long as the link's whole time could never be sent
  if (remindBefore && !details.length) {
    const lifetime = deadlineAtCreation({ maxViews, retention } as LinkSettings, new Date(0));
    const span = Duration.fromObject({ [remindBefore.unit]: remindBefore.amount }).toMillis();
    if (lifetime && span >= lifetime.getTime())
      details.push({
        field: at('remind_before'),
        message: 'is as long as the link itself: the reminder would be sent before the link; make it shorter',
        code: 'range',
      });
  }
  if (details.length) throw new ValidationError('The Magic Link settings are not valid; see details.', details);
  return {
    recipientEmail: recipient as string,
    authEmail: auth as string,
    authType: authType as AuthType,
    maxViews,
    retention,
    watermark,
    allowDownload: allowDownload as boolean,
    allowedViewers,
    notifySender,
    remindBefore,
    message,
  };
}

/**
 * The deadline a link has when it is created: the time limit from creation, capped at 10 days when
 * views are limited; a timer from opening without a view limit: open within OPEN_WITHIN.
 */
export function deadlineAtCreation(s: LinkSettings, createdAt: Date): Date | null {
  const created = DateTime.fromJSDate(createdAt, { zone: 'utc' });
  const candidates: DateTime[] = [];
  if (s.retention?.from === 'created') candidates.push(created.plus({ [s.retention.unit]: s.retention.amount }));
  if (s.maxViews !== null) candidates.push(created.plus(VIEW_LIMIT_CAP));
  else if (s.retention?.from === 'opened') candidates.push(created.plus(OPEN_WITHIN));
  return earliest(candidates);
}

/**
 * The deadline after the first opening: a timer from opening starts now. With a view limit, never
 * beyond the 10-day cap it already had; without one, the bound on opening has done its work.
 */
export function deadlineAtOpening(s: LinkSettings, current: Date | null, openedAt: Date): Date | null {
  if (s.retention?.from !== 'opened') return current;
  const fromOpening = DateTime.fromJSDate(openedAt, { zone: 'utc' }).plus({ [s.retention.unit]: s.retention.amount });
  return earliest([
    fromOpening,
    ...(current && s.maxViews !== null ? [DateTime.fromJSDate(current, { zone: 'utc' })] : []),
  ]);
}

function earliest(times: DateTime[]): Date | null {
  if (!times.length) return null;
  return times.reduce((a, b) => (b < a ? b : a)).toJSDate();
}

/** A moment as e-mails say it, with its zone named: "Thu 3 Dec 2026, 10:00 UTC". */
export function mailDate(d: Date): string {
  return DateTime.fromJSDate(d, { zone: 'utc' }).setLocale('en-GB').toFormat("ccc d LLL yyyy, HH:mm 'UTC'");
}

function amount(n: number, unit: string): string {
  return `${n} ${n === 1 ? unit.replace(/s$/, '') : unit}`;
}

/**
 * What limits a link, as its recipient reads it in the e-mail: every rule that applies, the time
 * as a date (the earliest deadline: its own timer, the 10-day cap of a view limit, or the bound on
 * opening), and what a view is. `expiresAt` is the link's deadline when it is sent; `opened`, whether
 * it was opened already (a resend).
 */
export function limitsForRecipient(
  s: LinkSettings,
  expiresAt: Date | null,
  viewMinutes: number,
  opened = false,
): string {
  const views = s.maxViews === null ? null : amount(s.maxViews, 'views');
  const until = expiresAt ? mailDate(expiresAt) : null;
  const sameView = `A view lasts up to ${viewMinutes} minutes: reloading the page within them does not use another.`;
  // once opened, a timer from opening has become a date
  if (s.retention?.from === 'opened' && !opened) {
    const timer = amount(s.retention.amount, s.retention.unit);
    if (views)
      return `The link works for ${views} and for ${timer} after your first view, and ends ${until} at the latest. ${sameView}`;
    return `Open it by ${until}; from your first view it works for ${timer}.`;
  }
  if (views) return `The link works for ${views}, until ${until} at the latest. ${sameView}`;
  return `The link works until ${until}.`;
}
