/**
 * How long documents are kept. A generate request may say (`retain_for`, as Inkit names it, at the
 * top or on `destinations.inkit_storage`); without it, the storage app's default applies (set in
 * Settings, `PUT /v1/apps/inkit_storage`); without that, documents are kept until deleted. A
 * document whose time has come is deleted by `serve`'s retention sweep, with its bytes; its links
 * end with reason `document_expired`.
 */
import { DateTime } from 'luxon';
import { iso, type Clock } from '../clock';
import type { Db } from '../db';
import { Setting } from '../db/setting';
import { ValidationError, type ErrorDetail } from '../errors';
import { isObject } from '../guards';
import { parseDuration, type Span } from '../links/policy';

/** How often `serve` looks for documents whose time has come: they are deleted within this long of it. */
export const RETENTION_SWEEP_MS = 60 * 1000;

export interface StorageApp {
  /** How long a document is kept when its request does not say; null: until it is deleted. */
  retain_for: Record<string, number> | null;
  configured_at: string | null;
}

const KEY = 'app:inkit_storage';
const WHY = 'delete the document yourself when it is no longer needed, or keep it without retain_for';

/** A span as the API writes it: {"days": 30}. */
export function spanJson(span: Span | null): Record<string, number> | null {
  return span && { [span.unit]: span.amount };
}

/** When a document made at `now` and kept for `span` is deleted. */
export function deleteAt(span: Span, now: Date): string {
  return iso(
    DateTime.fromJSDate(now, { zone: 'utc' })
      .plus({ [span.unit]: span.amount })
      .toJSDate(),
  );
}

/** The time `span` before `now`: a document that follows its links is deleted once its last link ended before it. */
export function spanBefore(span: Span, now: Date): string {
  return iso(
    DateTime.fromJSDate(now, { zone: 'utc' })
      .minus({ [span.unit]: span.amount })
      .toJSDate(),
  );
}

/**
 * How long a document made only for Magic Links is kept after its last link ends (when neither its
 * request nor the storage app says how long to keep it): the sender can still see the link's views
 * and share it again meanwhile.
 */
export const KEPT_AFTER_LINKS: Span = { unit: 'days', amount: 30 };

/**
 * The retention a generate request asks for: `retain_for`, or the same on `inkit_storage` (both
 * may be given when they agree). Undefined: the request does not say.
 */
export function requestedRetention(
  body: Record<string, unknown>,
  storage: Record<string, unknown> | undefined,
  details: ErrorDetail[],
): Span | undefined {
  const top = body.retain_for === undefined ? undefined : parseDuration(body.retain_for, 'retain_for', details, WHY);
  const there =
    storage?.retain_for === undefined
      ? undefined
      : parseDuration(storage.retain_for, 'destinations.inkit_storage.retain_for', details, WHY);
  if (top && there && (top.unit !== there.unit || top.amount !== there.amount))
    details.push({
      field: 'destinations.inkit_storage.retain_for',
      message: 'differs from retain_for; give one of them',
      code: 'conflict',
    });
  return top ?? there ?? undefined;
}

/** The storage app's settings: the default retention, read at every render (kept a few seconds). */
export class StorageApps {
  private readonly stored: Setting<StorageApp>;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.stored = new Setting(db, KEY);
  }

  /**
   * The settings, read back as strictly as they are written: a stored retention that breaks the
   * rules (written by an older version, or by hand) is no retention, so it can never make a
   * generate fail, nor delete a document sooner than asked.
   */
  async get(): Promise<StorageApp> {
    const app = (await this.stored.read()) ?? { retain_for: null, configured_at: null };
    return { ...app, retain_for: spanJson(this.spanOf(app.retain_for)) };
  }

  /** The default retention as a span; null: keep until deleted. */
  async defaultRetention(): Promise<Span | null> {
    return this.spanOf((await this.stored.read())?.retain_for ?? null);
  }

  private spanOf(stored: unknown): Span | null {
    if (stored === null || stored === undefined) return null;
    const details: ErrorDetail[] = [];
    return parseDuration(stored, 'retain_for', details, WHY);
  }

  /** `PUT /v1/apps/inkit_storage`: {"retain_for": {"days": 30}} or {"retain_for": null}. */
  async put(body: unknown): Promise<StorageApp> {
    const details: ErrorDetail[] = [];
    if (!isObject(body)) details.push({ field: 'body', message: 'must be an object', code: 'type' });
    else
      for (const k of Object.keys(body))
        // what GET answers with may be sent back as it is
        if (!['retain_for', 'object', 'name', 'configured_at'].includes(k))
          details.push({ field: k, message: 'is not a storage setting', code: 'unknown_field' });
    const given = isObject(body) ? body.retain_for : undefined;
    const span = given === null || given === undefined ? null : parseDuration(given, 'retain_for', details, WHY);
    if (details.length) throw new ValidationError('The storage settings are not valid; see details.', details);
    const now = iso(this.clock.now());
    return this.stored.update((stored) => ({
      retain_for: given === undefined ? spanJson(this.spanOf(stored?.retain_for)) : spanJson(span),
      configured_at: now,
    }));
  }
}
