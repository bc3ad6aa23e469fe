/** The tables, as Kysely sees them. Times are ISO 8601 text in UTC; JSON is text; bytes are BLOB/bytea. */
import type { Generated, Selectable } from 'kysely';

export interface ApiKeysTable {
  id: string;
  /** `api` keys call the API; `postcard` tokens authorise postcard requests. */
  kind: string;
  name: string;
  /** The first characters of the key, shown in lists so people can tell keys apart. */
  prefix: string;
  /** SHA-256 of the whole key, hex. */
  hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** An API key's scopes, a JSON list; null: every scope. */
  scopes: string | null;
  /** A postcard token in test mode (1): its postcards are rendered and proofed, never handed on. */
  test: Generated<number>;
}

export interface TemplatesTable {
  id: string;
  name: string;
  /** The version a render uses when it names none. */
  current_version: number;
  created_at: string;
  /** When its name or its current version last changed. */
  updated_at: string;
}

/** Each saved version of a template, never changed once written. */
export interface TemplateVersionsTable {
  template_id: string;
  /** 1, 2, 3, … in the order saved. */
  version: number;
  format: string;
  source: Uint8Array;
  /** JSON array of variable names, in order of first use. */
  variables: string;
  /** JSON object: each optional variable and the text it takes when no value is given. */
  defaults: string;
  /** JSON object: the values the editor and the previews fill it with; null: none saved. */
  sample: string | null;
  size: number;
  /** The postcard size the template names (4x6, …), null: not a postcard template. */
  postcard: string | null;
  /** JSON array: what printing it with its sample values warned of (print.ts), null: not a postcard template. */
  print_warnings: string | null;
  created_at: string;
}

/** The images, fonts and style sheets a version names, by the path it names them with. */
export interface TemplateVersionAssetsTable {
  template_id: string;
  version: number;
  path: string;
  /** Empty when stored_in names the version that holds them. */
  bytes: Uint8Array;
  /** The version of the template whose row for this path holds the bytes (null: this row holds them). */
  stored_in: number | null;
}

export interface DocumentsTable {
  id: string;
  render_id: string;
  name: string;
  description: string | null;
  status: string;
  template_id: string;
  /** The template version it was rendered from; null on a record made before versions. */
  template_version: number | null;
  created_by_key_id: string | null;
  created_by_name: string | null;
  size: number;
  sha256: string;
  storage: string;
  created_at: string;
  /** When the retention sweep deletes it (retain_for, or the storage app's default); null: kept until deleted. */
  expires_at: string | null;
  /** 1: made only for Magic Links, kept while one is active and a set time after the last ends (Documents.expireDue). */
  follows_links: Generated<number>;
}

export interface BlobsTable {
  key: string;
  bytes: Uint8Array;
}

/** The bytes of a render whose storing failed, waiting for its retry (src/documents/spool.ts). */
export interface RenderSpoolTable {
  render_id: string;
  bytes: Uint8Array;
  /** JSON: what the render said beside its bytes. */
  meta: string;
  size: number;
  created_at: string;
}

/** A key of file or object storage whose bytes no record may name yet (a save under way) or any more (a delete under way). */
export interface StoragePendingTable {
  key: string;
  since: string;
}

export interface IdempotencyTable {
  /** Whose key it is and for which operation, e.g. `key_…:POST /v1/generate`. */
  scope: string;
  key: string;
  request_hash: string;
  /** `running` while a request is being handled, `failed` when it failed unexpectedly (a retry takes it over), then `done`. */
  state: string;
  status: number | null;
  body: string | null;
  created_at: string;
  expires_at: string;
  /** The lease of the request running it (src/jobs/lease.ts): a duplicate takes over once it is free. */
  claimed_by: number | null;
  claimed_until: string | null;
  claimed_epoch: Generated<number>;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface MagicLinksTable {
  id: string;
  document_id: string;
  /** SHA-256 of the URL token; the token itself is never stored. */
  token_hash: string;
  recipient_email: string;
  auth_email: string;
  auth_type: string;
  /** The parsed settings (LinkSettings), JSON. */
  settings: string;
  max_views: number | null;
  views_used: number;
  /** active | send_failed | expired | revoked */
  status: string;
  send_error: string | null;
  send_attempts: number;
  created_by_key_id: string | null;
  created_at: string;
  sent_at: string | null;
  opened_at: string | null;
  /** The moment the link stops working, when known (null: only the view limit ends it). */
  expires_at: string | null;
  /** When it was marked expired or revoked. */
  ended_at: string | null;
  /** Why it ended (an ExpiryReason: `views`, `time`, `revoked`, `document_deleted`, …); null while it has not, and for some links ended before 0027. */
  ended_reason: string | null;
  /** JSON: when each notice went (`first_view`, `ended`, `reminder`); null: none yet. */
  notices: string | null;
  /** The render (POST /v1/generate) that made the link: one link per render, however often it runs. */
  render_id: string | null;
  /**
   * The URL's token is an HMAC of a link key (`token_key`) and `id.generation`: a retried send e-mails
   * the same URL; only an explicit resend moves to the next generation (and the old URL stops working).
   */
  token_generation: number;
  /** The keyring's key (src/links/keyring.ts) the URL's token was derived with; null: an older version's key. */
  token_key: string | null;
  /** The lease on the link's e-mail (src/jobs/lease.ts): one sender at a time, until `sending_until` or its process's end. */
  sending_by: number | null;
  sending_until: string | null;
  sending_epoch: Generated<number>;
  /** The lease on a step of the link's lifecycle (embedded engine): free again when the step ends or its process dies. */
  claimed_by: number | null;
  claimed_until: string | null;
  claimed_epoch: Generated<number>;
  /**
   * When the embedded engine next looks at the link (its deadline, a retry, a lease running out;
   * now after a change); null: nothing to wait for. Under Temporal: a change its workflow may not
   * have seen, to hand over (src/engine/marks.ts).
   */
  wake_at: string | null;
  /** When the failed e-mail is tried again (planned by the lifecycle, cleared by each send's outcome). */
  send_retry_at: string | null;
}

export interface LinkEventsTable {
  id: string;
  link_id: string;
  at: string;
  /** opened | code_sent | code_checked | signed_in | viewed | denied */
  kind: string;
  outcome: string;
  ip: string | null;
  user_agent: string | null;
  email: string | null;
  /** How many times it happened: a refused anonymous opening repeated from the same IP and browser adds to its entry. */
  count: Generated<number>;
  /** The latest of those times (null while count is 1). */
  last_at: string | null;
}

export interface LinkCodesTable {
  link_id: string;
  /** The address the code was sent to (the link's auth_email, or one its allowed_viewers allow). */
  email: string;
  code_hash: string;
  attempts: number;
  expires_at: string;
}

export interface LinkSessionsTable {
  /** SHA-256 of the cookie value. */
  token_hash: string;
  link_id: string;
  email: string;
  created_at: string;
  expires_at: string;
  /** Until when the PDF of the last counted view may be fetched. */
  view_until: string | null;
  /** Which view of the link this session's last counted view was (a reload within it shows the same number). */
  view_number: number | null;
  /** Milliseconds of page time this sign-in has reported (never more than the time since it began). */
  reported_ms: Generated<number | string>;
}

/** How long one person looked at one page of a link, summed over their views. */
export interface LinkPageTimesTable {
  link_id: string;
  email: string;
  page: number;
  /** A bigint on PostgreSQL (read as text). */
  ms: number | string;
}

export interface PostcardsTable {
  id: string;
  /** received | rendered | failed */
  status: string;
  template_id: string;
  /** The template version it is rendered from, fixed when it is received; null on a record made before versions. */
  template_version: number | null;
  /** JSON: first_name, last_name, email, company, phone, source (those given). */
  contact: string;
  /** JSON: line_1, line_2, city, state, zip, country. */
  address: string;
  /** JSON: every other body field. */
  custom: string;
  token_id: string;
  /** The Idempotency-Key the request came with, unique per token. */
  idempotency_key: string | null;
  document_id: string | null;
  failure_reason: string | null;
  /** JSON: what the render warned about, e.g. text that does not fit its box. */
  warnings: string;
  created_at: string;
  updated_at: string;
  /** The lease on its render (embedded engine, src/jobs/lease.ts): free again when the render ends or its process dies. */
  claimed_by: number | null;
  claimed_until: string | null;
  claimed_epoch: Generated<number>;
  /** When the embedded engine renders it (received: at once; after an unexpected error, later); null once done. */
  wake_at: string | null;
  /** Renders that failed for a passing reason (the render time limit under load); at RENDER_ATTEMPTS it is failed. */
  render_attempts: number;
  /** Made with a test token (1): rendered and proofed, never handed on. */
  test: Generated<number>;
  /** The postcard size its PDF was checked for and marked with (src/templates/presets.ts); null: its template names none. */
  size: string | null;
  /** The mail partner it was handed to (src/postcards/partners.ts), and the partner's id of it once it said. */
  partner: string | null;
  partner_id: string | null;
}

/** A live postcard's hand-off to its mail partner (src/postcards/handoff.ts): one row per postcard, its id the postcard's. */
export interface PostcardHandoffsTable {
  id: string;
  partner: string;
  /** pending (to be submitted) | done (the partner has it) | failed (given up) */
  status: string;
  attempts: Generated<number>;
  /** When the next attempt is due (pending only). */
  next_attempt_at: string | null;
  first_attempt_at: string | null;
  last_error: string | null;
  /** The lease on an attempt (src/jobs/lease.ts). */
  claimed_by: number | null;
  claimed_until: string | null;
  claimed_epoch: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface EventsTable {
  /** evt_… */
  id: string;
  type: string;
  /** The id of the resource the event is about: deliveries keep its events in order. */
  resource_id: string;
  /** JSON: the event's `data`. */
  data: string;
  created_at: string;
  /** 0 until the dispatcher has written its deliveries, one per webhook subscribed when it was written (src/webhooks). */
  fanned_out: Generated<number>;
}

export interface WebhooksTable {
  /** wh_… */
  id: string;
  url: string;
  /** JSON: the event types, or ["*"]. */
  events: string;
  description: string | null;
  /** The signing secret (whsec_…). Kept as is: every delivery is signed with it. */
  secret: string;
  created_at: string;
  /** Attempts that failed in a row, whatever their deliveries: how long the endpoint rests (src/webhooks). */
  failures_in_a_row: Generated<number>;
  /** Until when no delivery to it is attempted (its endpoint failed); null: it is answering. */
  resting_until: string | null;
}

/**
 * The next_attempt_at of a delivery that waits behind another pending one for the same webhook
 * and resource (deliveries go in order per resource): later than any due time, so the due index
 * never offers it; set to now when the one before it is done (src/webhooks).
 */
export const BLOCKED = '9999-12-31T23:59:59.999Z';

export interface DeliveriesTable {
  /** dlv_… */
  id: string;
  webhook_id: string;
  event_id: string;
  resource_id: string;
  /** pending | succeeded | failed */
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_status_code: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  created_at: string;
  updated_at: string;
  /** The lease on an attempt (src/jobs/lease.ts): until `claimed_until`, or its process's end; then another may. */
  claimed_by: number | null;
  claimed_until: string | null;
  claimed_epoch: Generated<number>;
}

export interface DeliveryAttemptsTable {
  id: string;
  delivery_id: string;
  webhook_id: string;
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface AdminSessionsTable {
  /** SHA-256 of the session cookie's value. */
  token_hash: string;
  /** The API key signed in with; null for the operator password. */
  key_id: string | null;
  /** Who, as the app shows it: the key's name or "Operator". */
  name: string;
  created_at: string;
  expires_at: string;
}

export interface Schema {
  admin_sessions: AdminSessionsTable;
  events: EventsTable;
  webhooks: WebhooksTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  postcards: PostcardsTable;
  postcard_handoffs: PostcardHandoffsTable;
  magic_links: MagicLinksTable;
  link_events: LinkEventsTable;
  link_codes: LinkCodesTable;
  link_sessions: LinkSessionsTable;
  link_page_times: LinkPageTimesTable;
  api_keys: ApiKeysTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
  template_version_assets: TemplateVersionAssetsTable;
  documents: DocumentsTable;
  blobs: BlobsTable;
  storage_pending: StoragePendingTable;
  render_spool: RenderSpoolTable;
  idempotency: IdempotencyTable;
  settings: SettingsTable;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type TemplateRow = Selectable<TemplatesTable>;
export type TemplateVersionRow = Selectable<TemplateVersionsTable>;
export type DocumentRow = Selectable<DocumentsTable>;
export type MagicLinkRow = Selectable<MagicLinksTable>;
export type PostcardRow = Selectable<PostcardsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type { Generated };

/** The database a deployment runs on. */
export type Dialect = 'sqlite' | 'postgres';
