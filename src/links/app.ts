/**
 * The Magic Link app: the settings an operator sets up once before links can be made (spec §1:
 * "the Magic Link feature requires that the Magic Link app has been set up first"). Stored in the
 * settings table; `PUT /v1/apps/magic_link` and `paperlink apps magic-link setup` write them.
 */
import type { Clock } from '../clock';
import { iso } from '../clock';
import type { Db } from '../db';
import { Setting } from '../db/setting';
import { ConflictError, ValidationError, type ErrorDetail } from '../errors';
import { isEmail } from '../guards';
import { type AuthType } from './policy';
import { isObject } from '../guards';
import { urlProblem } from '../net/guard';

export interface OidcProvider {
  /** Short id used in URLs, e.g. `google`. */
  id: string;
  /** Shown on the sign-in button, e.g. `Google`. */
  name: string;
  issuer: string;
  client_id: string;
  client_secret?: string;
}

export interface MagicLinkApp {
  /** Where links point: this server's address (PUBLIC_URL) unless an operator set one here. */
  public_url: string;
  /** Whether public_url is the server's address (true), or one set in these settings (false). */
  public_url_follows_server: boolean;
  sender_name: string;
  sender_email: string;
  organization_name: string;
  /** An https URL or a data: URI of an image shown on the pages and in e-mails. */
  logo_url: string | null;
  accent_color: string;
  auth_types: AuthType[];
  oidc_providers: OidcProvider[];
  configured_at: string;
}

/** As the API shows it: provider secrets are never given back. */
export type PublicMagicLinkApp = Omit<MagicLinkApp, 'oidc_providers'> & {
  oidc_providers: (Omit<OidcProvider, 'client_secret'> & { client_secret_set: boolean })[];
};

const KEY = 'app:magic_link';
/** A logo given inline: a base64 data: URI of a PNG, JPEG or SVG (groups: the media type, its subtype, the bytes). */
export const DATA_IMAGE = /^data:(image\/(png|jpeg|svg\+xml));base64,([A-Za-z0-9+/=]+)$/;

export function publicView(app: MagicLinkApp): PublicMagicLinkApp {
  return {
    ...app,
    oidc_providers: app.oidc_providers.map(({ client_secret, ...p }) => ({
      ...p,
      client_secret_set: Boolean(client_secret),
    })),
  };
}

function text(body: Record<string, unknown>, key: string, details: ErrorDetail[], max = 200): string | undefined {
  const v = body[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.trim() === '' || v.length > max) {
    details.push({ field: key, message: `must be text of 1 to ${max} characters`, code: 'invalid' });
    return undefined;
  }
  return v.trim();
}

function url(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

/** Merges `body` over the current settings (or the defaults) and checks the result. */
export function mergeApp(
  current: MagicLinkApp | undefined,
  defaults: Omit<MagicLinkApp, 'configured_at'>,
  body: unknown,
  now: Date,
  oidcAllowPrivate = false,
): MagicLinkApp {
  if (!isObject(body))
    throw new ValidationError('Send the Magic Link app settings as a JSON object.', [
      { field: 'body', message: 'must be an object', code: 'type' },
    ]);
  const base = current ?? { ...defaults, configured_at: iso(now) };
  const details: ErrorDetail[] = [];
  const out: MagicLinkApp = { ...base, configured_at: iso(now) };
  const known = new Set([
    'public_url',
    'sender_name',
    'sender_email',
    'organization_name',
    'logo_url',
    'accent_color',
    'auth_types',
    'oidc_providers',
  ]);
  for (const k of Object.keys(body))
    if (!known.has(k)) details.push({ field: k, message: 'is not a Magic Link app setting', code: 'unknown_field' });

  // null (or the server's own address) goes back to following PUBLIC_URL
  if (
    body.public_url === null ||
    (typeof body.public_url === 'string' && body.public_url.replace(/\/+$/, '') === defaults.public_url)
  ) {
    out.public_url = defaults.public_url;
    out.public_url_follows_server = true;
  } else if (body.public_url !== undefined) {
    if (!url(body.public_url))
      details.push({
        field: 'public_url',
        message: 'must be an http(s) URL where recipients reach this service, or null to follow PUBLIC_URL',
        code: 'invalid',
      });
    else {
      out.public_url = (body.public_url as string).replace(/\/+$/, '');
      out.public_url_follows_server = false;
    }
  }
  out.sender_name = text(body, 'sender_name', details) ?? out.sender_name;
  if (body.sender_email !== undefined) {
    if (!isEmail(body.sender_email))
      details.push({ field: 'sender_email', message: 'must be an e-mail address', code: 'invalid_email' });
    else out.sender_email = body.sender_email;
  }
  out.organization_name = text(body, 'organization_name', details) ?? out.organization_name;
  if (body.logo_url !== undefined) {
    const v = body.logo_url;
    if (v !== null && !(url(v) || (typeof v === 'string' && DATA_IMAGE.test(v) && v.length < 300_000))) {
      details.push({
        field: 'logo_url',
        message: 'must be an http(s) URL or a base64 data: URI of a PNG, JPEG or SVG under 200 KB, or null',
        code: 'invalid',
      });
    } else out.logo_url = v as string | null;
  }
  if (body.accent_color !== undefined) {
    if (typeof body.accent_color !== 'string' || !/^#[0-9a-fA-F]{6}$/.test(body.accent_color))
      details.push({ field: 'accent_color', message: 'must be a colour like #1F6FEB', code: 'invalid' });
    else out.accent_color = body.accent_color;
  }
  if (body.oidc_providers !== undefined) {
    const list = body.oidc_providers;
    if (!Array.isArray(list)) details.push({ field: 'oidc_providers', message: 'must be a list', code: 'type' });
    else {
      const providers: OidcProvider[] = [];
      list.forEach((p: unknown, i) => {
        const f = `oidc_providers[${i}]`;
        if (!isObject(p)) return details.push({ field: f, message: 'must be an object', code: 'type' });
        const id = p.id;
        if (typeof id !== 'string' || !/^[a-z0-9-]{1,32}$/.test(id))
          details.push({
            field: `${f}.id`,
            message: 'must be 1 to 32 lowercase letters, digits or dashes',
            code: 'invalid',
          });
        if (typeof p.name !== 'string' || !p.name.trim())
          details.push({
            field: `${f}.name`,
            message: 'is required: the name on the sign-in button',
            code: 'required',
          });
        const issuerProblem = url(p.issuer)
          ? urlProblem(p.issuer, oidcAllowPrivate, 'OIDC_ALLOW_PRIVATE')
          : "must be the provider's issuer URL";
        if (issuerProblem) details.push({ field: `${f}.issuer`, message: issuerProblem, code: 'invalid' });
        if (typeof p.client_id !== 'string' || !p.client_id)
          details.push({ field: `${f}.client_id`, message: 'is required', code: 'required' });
        // a secret left out keeps the one stored for this provider id
        const kept = base.oidc_providers.find((x) => x.id === id)?.client_secret;
        if (p.client_secret !== undefined && typeof p.client_secret !== 'string')
          details.push({ field: `${f}.client_secret`, message: 'must be text', code: 'type' });
        if (providers.some((x) => x.id === id))
          details.push({ field: `${f}.id`, message: 'is used twice', code: 'duplicate' });
        providers.push({
          id: id as string,
          name: typeof p.name === 'string' ? p.name.trim() : '',
          issuer: typeof p.issuer === 'string' ? p.issuer.replace(/\/+$/, '') : '',
          client_id: typeof p.client_id === 'string' ? p.client_id : '',
          client_secret: (p.client_secret as string | undefined) ?? kept,
        });
      });
      out.oidc_providers = providers;
    }
  }
  if (body.auth_types !== undefined) {
    const v = body.auth_types;
    if (
      !Array.isArray(v) ||
      v.length === 0 ||
      v.some((x) => x !== 'email' && x !== 'social') ||
      new Set(v).size !== v.length
    ) {
      details.push({
        field: 'auth_types',
        message: 'must be a non-empty list of "email" and/or "social"',
        code: 'invalid',
      });
    } else out.auth_types = v as AuthType[];
  }
  if (
    out.auth_types.includes('social') &&
    out.oidc_providers.length === 0 &&
    !details.some((d) => d.field.startsWith('oidc_providers'))
  ) {
    details.push({
      field: 'oidc_providers',
      message: 'social sign-in needs at least one OpenID Connect provider',
      code: 'required',
    });
  }
  if (details.length) throw new ValidationError('The Magic Link app settings are not valid; see details.', details);
  return out;
}

/** What to tell an operator whose links point somewhere other than this server's address, if they do. */
export function publicUrlMismatch(app: MagicLinkApp, serverUrl: string): string | undefined {
  if (app.public_url_follows_server || app.public_url === serverUrl.replace(/\/+$/, '')) return undefined;
  return `Magic Links point at ${app.public_url} (set in the Magic Link app), not at this server's address ${serverUrl}. If recipients reach the service at ${serverUrl}, follow it: PUT /v1/apps/magic_link {"public_url": null}, or clear the Public URL in the web app's Settings.`;
}

/** Before public_url_follows_server was stored, `serve` stored its own address on the first start: a loopback one was never chosen by anyone. */
function followsServer(stored: Partial<MagicLinkApp>): boolean {
  if (typeof stored.public_url_follows_server === 'boolean') return stored.public_url_follows_server;
  try {
    return ['127.0.0.1', 'localhost', '[::1]', '0.0.0.0'].includes(new URL(stored.public_url ?? '').hostname);
  } catch {
    return true;
  }
}

export class MagicLinkApps {
  constructor(
    db: Db,
    private readonly clock: Clock,
    private readonly defaults: Omit<MagicLinkApp, 'configured_at'>,
    /** OIDC_ALLOW_PRIVATE: a provider's issuer may be a loopback or private address. */
    private readonly oidcAllowPrivate = false,
  ) {
    this.stored = new Setting(db, KEY);
  }

  /** This server's address (PUBLIC_URL, or where it listens): `serve` sets it once it listens on a port it was given as 0. */
  get serverUrl(): string {
    return this.defaults.public_url;
  }
  set serverUrl(url: string) {
    this.defaults.public_url = url.replace(/\/+$/, '');
    this.stored.forget();
  }

  /** Stored settings as they apply on this server: a public_url that follows the server is its address. */
  private resolve(stored: MagicLinkApp): MagicLinkApp {
    const follows = followsServer(stored);
    return {
      ...stored,
      public_url: follows ? this.defaults.public_url : stored.public_url,
      public_url_follows_server: follows,
    };
  }

  /** Read at every recipient request: kept for a few seconds (other processes' changes show within that). */
  private readonly stored: Setting<MagicLinkApp>;

  async get(): Promise<MagicLinkApp | undefined> {
    const stored = await this.stored.read();
    return stored && this.resolve(stored);
  }

  /** The settings, or a 409 that says how to set them up. */
  async require(): Promise<MagicLinkApp> {
    const app = await this.get();
    if (!app) {
      throw new ConflictError(
        'app_not_configured',
        'Set up the Magic Link app before making links: PUT /v1/apps/magic_link with at least {"public_url", "sender_email", "organization_name"}, or run `npx paperlink apps magic-link setup`.',
      );
    }
    return app;
  }

  /** Changes the fields `body` names over what is stored now (not the copy kept for reads). */
  async put(body: unknown): Promise<MagicLinkApp> {
    const now = this.clock.now();
    return this.stored.update((stored) =>
      mergeApp(stored && this.resolve(stored), this.defaults, body, now, this.oidcAllowPrivate),
    );
  }
}
