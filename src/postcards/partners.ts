/**
 * Mail partners: who prints a live postcard and puts it in the mail. One small interface
 * (driver.ts), a driver per partner (lob.ts, postgrid.ts), and the partner's settings (GET and PUT
 * /v1/apps/mail_partner, the web app's Settings): which partner, its API key and webhook secret.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import { Setting } from '../db/setting';
import { ValidationError, type ErrorDetail } from '../errors';
import { isObject } from '../guards';
import { PARTNER_NAMES, type PartnerDriver, type PartnerName } from './driver';
import { lob } from './lob';
import { postgrid } from './postgrid';
import { checkReturnAddress, type ReturnAddress } from './rules';

/** The mail partner's settings: which partner, its API key and webhook secret (write-only), where its API is. */
export interface MailPartnerApp {
  partner: PartnerName | null;
  api_key?: string;
  webhook_secret?: string;
  /** The partner's API (its default when null); a test or a proxy points elsewhere. */
  api_url: string | null;
  /** Lob's use_type: what the mail is, as US law asks (marketing or operational). */
  use_type: 'marketing' | 'operational';
  /** Who the postcards are from, printed by the partner (Lob needs one for mail abroad); null: none. */
  return_address: ReturnAddress | null;
  configured_at: string | null;
}

/** The settings as the API shows them: the secrets only as whether they are set. */
export type MailPartnerView = Omit<MailPartnerApp, 'api_key' | 'webhook_secret'> & {
  api_key_set: boolean;
  webhook_secret_set: boolean;
};

const KEY = 'app:mail_partner';
const UNSET: MailPartnerApp = {
  partner: null,
  api_url: null,
  use_type: 'marketing',
  return_address: null,
  configured_at: null,
};

export class MailPartnerApps {
  private readonly stored: Setting<MailPartnerApp>;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.stored = new Setting(db, KEY);
  }

  async settings(): Promise<MailPartnerApp> {
    return { ...UNSET, ...(await this.stored.read()) };
  }

  async get(): Promise<MailPartnerView> {
    return view(await this.settings());
  }

  /**
   * `PUT /v1/apps/mail_partner`: {"partner": "lob", "api_key": "…", "webhook_secret": "…"}; a
   * secret left out keeps the stored one, but for another partner (a change of partner starts
   * with no key, secret or api_url); {"partner": null} hands nothing on from now on.
   */
  async put(body: unknown): Promise<MailPartnerView> {
    const details: ErrorDetail[] = [];
    const known = ['partner', 'api_key', 'webhook_secret', 'api_url', 'use_type', 'return_address'];
    const shown = ['object', 'name', 'configured_at', 'api_key_set', 'webhook_secret_set'];
    if (!isObject(body))
      throw new ValidationError('The body must be a JSON object.', [
        { field: 'body', message: 'must be an object', code: 'type' },
      ]);
    for (const k of Object.keys(body))
      if (!known.includes(k) && !shown.includes(k))
        details.push({ field: k, message: 'is not a mail partner setting', code: 'unknown_field' });
    const { partner, api_key, webhook_secret, api_url, use_type, return_address } = body;
    const from =
      return_address === undefined || return_address === null ? undefined : checkReturnAddress(return_address);
    if (from && !from.ok) details.push(...from.details);
    if (partner !== undefined && partner !== null && !(PARTNER_NAMES as readonly unknown[]).includes(partner))
      details.push({
        field: 'partner',
        message: `must be one of ${PARTNER_NAMES.join(', ')}, or null`,
        code: 'invalid',
      });
    for (const [field, v] of [
      ['api_key', api_key],
      ['webhook_secret', webhook_secret],
    ] as const)
      if (v !== undefined && (typeof v !== 'string' || !v.trim() || v.length > 500))
        details.push({ field, message: 'must be a string of 1 to 500 characters', code: 'invalid' });
    if (api_url !== undefined && api_url !== null && !apiUrlOk(api_url))
      details.push({
        field: 'api_url',
        message:
          'must be an https URL (http only on this machine: 127.0.0.1, localhost), or null for the partner’s own',
        code: 'invalid',
      });
    if (use_type !== undefined && use_type !== 'marketing' && use_type !== 'operational')
      details.push({ field: 'use_type', message: 'must be marketing or operational', code: 'invalid' });
    if (details.length) throw new ValidationError('The mail partner settings are not valid; see details.', details);
    const now = iso(this.clock.now());
    const saved = await this.stored.update((current) => {
      const next: MailPartnerApp = { ...UNSET, ...current, configured_at: now };
      if (partner !== undefined && partner !== next.partner) {
        // another partner's key, secret and API are not this one's: never kept across a change
        delete next.api_key;
        delete next.webhook_secret;
        next.api_url = null;
        next.partner = partner as PartnerName | null;
      }
      if (typeof api_key === 'string') next.api_key = api_key.trim();
      if (typeof webhook_secret === 'string') next.webhook_secret = webhook_secret.trim();
      if (api_url !== undefined) next.api_url = (api_url as string | null)?.replace(/\/+$/, '') ?? null;
      if (use_type !== undefined) next.use_type = use_type as MailPartnerApp['use_type'];
      if (return_address !== undefined) next.return_address = from?.ok ? from.value : null;
      if (next.partner === 'lob' && next.return_address && next.return_address.address_country !== 'US')
        throw new ValidationError('Lob prints a return address in the US only.', [
          { field: 'return_address.address_country', message: 'must be US for Lob', code: 'invalid' },
        ]);
      if (next.partner && !next.api_key)
        throw new ValidationError(`Handing postcards to ${next.partner} needs its API key.`, [
          {
            field: 'api_key',
            message: 'is required with a partner (a new one when the partner changes)',
            code: 'required',
          },
        ]);
      return next;
    });
    return view(saved);
  }

  /** The driver of the configured partner, or undefined when postcards are not handed on. */
  async driver(): Promise<PartnerDriver | undefined> {
    const s = await this.settings();
    if (!s.api_key) return undefined;
    if (s.partner === 'lob') return lob(s);
    if (s.partner === 'postgrid') return postgrid(s);
    return undefined;
  }
}

/** The API key travels to api_url: https, or http to this machine only (a stand-in, a local proxy). */
function apiUrlOk(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > 500) return false;
  try {
    const url = new URL(value);
    if (url.username || url.password || url.search || url.hash) return false;
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
    );
  } catch {
    return false;
  }
}

function view(app: MailPartnerApp): MailPartnerView {
  const { api_key, webhook_secret, ...rest } = app;
  return { ...rest, api_key_set: Boolean(api_key), webhook_secret_set: Boolean(webhook_secret) };
}
