/**
 * Versioned migrations, run at start in order; each runs once per database. Add new ones at the
 * end with the next number; never edit one that has shipped.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { BLOCKED, type Dialect } from './schema';

type Step = (db: Kysely<unknown>, dialect: Dialect) => Promise<void>;

const blob = (d: Dialect) => (d === 'postgres' ? 'bytea' : 'blob');

export const MIGRATIONS: [string, Step][] = [
  [
    '0001_service',
    async (db, d) => {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('api_keys_prefix').on('api_keys').column('prefix').execute();

      await db.schema
        .createTable('templates')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('source', sql.raw(blob(d)), (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('template_assets')
        .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .addPrimaryKeyConstraint('template_assets_pk', ['template_id', 'path'])
        .execute();

      await db.schema
        .createTable('documents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('render_id', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('created_by_key_id', 'text')
        .addColumn('created_by_name', 'text')
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('storage', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('blobs')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('idempotency')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('body', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_pk', ['scope', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_expires').on('idempotency').column('expires_at').execute();

      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  ],
  [
    '0002_magic_links',
    async (db) => {
      await db.schema
        .createTable('magic_links')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('document_id', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('recipient_email', 'text', (c) => c.notNull())
        .addColumn('auth_email', 'text', (c) => c.notNull())
        .addColumn('auth_type', 'text', (c) => c.notNull())
        .addColumn('settings', 'text', (c) => c.notNull())
        .addColumn('max_views', 'integer')
        .addColumn('views_used', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('send_error', 'text')
        .addColumn('send_attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_by_key_id', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('sent_at', 'text')
        .addColumn('opened_at', 'text')
        .addColumn('expires_at', 'text')
        .addColumn('ended_at', 'text')
        .execute();
      await db.schema.createIndex('magic_links_document').on('magic_links').column('document_id').execute();
      await db.schema.createIndex('magic_links_status').on('magic_links').column('status').execute();

      await db.schema
        .createTable('link_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('link_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('ip', 'text')
        .addColumn('user_agent', 'text')
        .addColumn('email', 'text')
        .execute();
      await db.schema.createIndex('link_events_link').on('link_events').columns(['link_id', 'at']).execute();

      await db.schema
        .createTable('link_codes')
        .addColumn('link_id', 'text', (c) => c.primaryKey())
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('link_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('link_id', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('view_until', 'text')
        .execute();
    },
  ],
  [
    '0003_postcards',
    async (db) => {
      await db.schema
        .createTable('postcards')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('contact', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('custom', 'text', (c) => c.notNull())
        .addColumn('token_id', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text')
        .addColumn('document_id', 'text')
        .addColumn('failure_reason', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('postcards_status').on('postcards').columns(['status', 'id']).execute();
      await db.schema
        .createIndex('postcards_idempotency')
        .on('postcards')
        .columns(['token_id', 'idempotency_key'])
        .unique()
        .execute();
    },
  ],
  [
    '0004_webhooks',
    async (db) => {
      // the outbox: written in the transaction of the change it tells about
      await db.schema
        .createTable('events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('resource_id', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('webhooks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('events', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('webhook_id', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('resource_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text', (c) => c.notNull())
        .addColumn('last_status_code', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('last_duration_ms', 'integer')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('deliveries_due').on('deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema
        .createIndex('deliveries_order')
        .on('deliveries')
        .columns(['webhook_id', 'resource_id', 'status', 'id'])
        .execute();
      await db.schema
        .createTable('delivery_attempts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('delivery_id', 'text', (c) => c.notNull())
        .addColumn('webhook_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('status_code', 'integer')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .execute();
      await db.schema
        .createIndex('delivery_attempts_delivery')
        .on('delivery_attempts')
        .columns(['delivery_id', 'id'])
        .execute();
    },
  ],
  [
    '0005_documents_render',
    async (db) => {
      // a retried generate activity (Temporal) finds the document it stored by render id
      await db.schema.createIndex('documents_render').on('documents').column('render_id').execute();
    },
  ],
  [
    '0006_admin_sessions',
    async (db) => {
      // the web app's sign-ins: by an API key (ends when the key is revoked) or the operator password
      await db.schema
        .createTable('admin_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('key_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
    },
  ],
  [
    '0007_link_delivery',
    async (db) => {
      // every effect of a link once: one link per render, a reproducible URL, one sender at a time
      await db.schema.alterTable('magic_links').addColumn('render_id', 'text').execute();
      await db.schema
        .alterTable('magic_links')
        .addColumn('token_generation', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('magic_links').addColumn('sending_until', 'text').execute();
      await db.schema.createIndex('magic_links_render').on('magic_links').column('render_id').unique().execute();
      // one document per render id: two runs of one render (a retry while the first still runs) store one
      await db.schema.dropIndex('documents_render').execute();
      await db.schema.createIndex('documents_render_unique').on('documents').column('render_id').unique().execute();
    },
  ],
  [
    '0008_defaults_and_warnings',
    async (db) => {
      // optional variables ({{name | default: "…"}}) and their defaults, JSON; earlier templates have none
      await db.schema
        .alterTable('templates')
        .addColumn('defaults', 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
      // what a postcard's render warned about (text that did not fit), JSON
      await db.schema
        .alterTable('postcards')
        .addColumn('warnings', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  ],
  [
    '0009_claims',
    async (db) => {
      // background work is claimed by one process (its presence id) at a time; see src/db/presence.ts
      await db.schema.alterTable('deliveries').addColumn('claimed_by', 'integer').execute();
      await db.schema.alterTable('deliveries').addColumn('claimed_until', 'text').execute();
      await db.schema.alterTable('postcards').addColumn('claimed_by', 'integer').execute();
      await db.schema.alterTable('magic_links').addColumn('claimed_by', 'integer').execute();
      await db.schema.alterTable('magic_links').addColumn('sending_by', 'integer').execute();
    },
  ],
  [
    '0010_key_scopes',
    async (db) => {
      // what an API key may do, a JSON list (src/keys); null: everything, as every key made before
      await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
    },
  ],
  [
    '0011_postcard_render_attempts',
    async (db) => {
      // renders of a postcard that failed for a passing reason, retried until RENDER_ATTEMPTS
      await db.schema
        .alterTable('postcards')
        .addColumn('render_attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  ],
  [
    '0012_link_token_key',
    async (db) => {
      // the id of the key (outside the database, src/links/keyring.ts) a link's URL was derived with
      await db.schema.alterTable('magic_links').addColumn('token_key', 'text').execute();
    },
  ],
  [
    '0013_delivery_queues',
    async (db) => {
      // an endpoint that fails rests, all its deliveries with it (src/webhooks Dispatcher.record)
      await db.schema
        .alterTable('webhooks')
        .addColumn('failures_in_a_row', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('webhooks').addColumn('resting_until', 'text').execute();
      // a request writes its event only; the dispatcher writes the deliveries, one per subscription
      // (what was written before had them written with it)
      await db.schema
        .alterTable('events')
        .addColumn('fanned_out', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await sql`create index events_to_fan_out on events (id) where fanned_out = 0`.execute(db);
      // each event writes a delivery for each subscription at once, so every index keyed by webhook
      // first costs a page per subscription and event: one is kept, what is due per webhook (the
      // dispatcher reads each awake endpoint's first); the order per resource is keyed by resource
      // first (one event's deliveries sit together); claims are found by their time and owner
      await db.schema.dropIndex('deliveries_order').execute();
      await db.schema
        .createIndex('deliveries_webhook_due')
        .on('deliveries')
        .columns(['webhook_id', 'status', 'next_attempt_at'])
        .execute();
      await db.schema
        .createIndex('deliveries_resource')
        .on('deliveries')
        .columns(['resource_id', 'webhook_id', 'status', 'id'])
        .execute();
      await db.schema.createIndex('deliveries_claimed_until').on('deliveries').column('claimed_until').execute();
      await db.schema.createIndex('deliveries_claimed_by').on('deliveries').column('claimed_by').execute();
      // a delivery behind another pending one for the same webhook and resource waits, out of the
      // due index, until that one is done (src/webhooks BLOCKED)
      await sql`update deliveries set next_attempt_at = ${BLOCKED}
        where status = 'pending' and exists (select 1 from deliveries p where p.webhook_id = deliveries.webhook_id
          and p.resource_id = deliveries.resource_id and p.status = 'pending' and p.id < deliveries.id)`.execute(db);
    },
  ],
  [
    '0014_purge_indexes',
    async (db) => {
      // housekeeping finds what expired by an index, a batch at a time, not by reading every row
      await db.schema.createIndex('link_sessions_expires').on('link_sessions').column('expires_at').execute();
      await db.schema.createIndex('link_codes_expires').on('link_codes').column('expires_at').execute();
    },
  ],
  [
    '0015_wake_up',
    async (db) => {
      // a link or postcard waiting for a moment is a row with that moment, not a flow in memory:
      // each process's scheduler takes the rows due now from this index (src/engine/embedded.ts)
      await db.schema.alterTable('magic_links').addColumn('wake_at', 'text').execute();
      await db.schema.alterTable('postcards').addColumn('wake_at', 'text').execute();
      // when a link whose e-mail failed is sent again (the scheduler plans it; a send outcome clears it)
      await db.schema.alterTable('magic_links').addColumn('send_retry_at', 'text').execute();
      // a claim now lasts one step, not a lifecycle: what was claimed before is free. A link that was
      // sent and has views left waits for its deadline (none: for a change); any other link not
      // ended, and every postcard not rendered, is due once (its first step writes when it next wakes)
      await sql`update magic_links set claimed_by = null where claimed_by is not null`.execute(db);
      await sql`update magic_links set wake_at = case
          when sent_at is not null and (max_views is null or views_used < max_views) then expires_at
          else created_at end
        where status in ('active', 'send_failed')`.execute(db);
      await sql`update postcards set claimed_by = null where claimed_by is not null`.execute(db);
      await sql`update postcards set wake_at = created_at where status = 'received'`.execute(db);
      for (const table of ['magic_links', 'postcards']) {
        await sql`create index ${sql.raw(`${table}_wake`)} on ${sql.table(table)} (wake_at) where wake_at is not null`.execute(
          db,
        );
        // the sweep finds what dead processes hold among the few rows claimed at any moment
        await sql`create index ${sql.raw(`${table}_claimed`)} on ${sql.table(table)} (claimed_by) where claimed_by is not null`.execute(
          db,
        );
      }
      // and the e-mail leases of dead senders among the few being sent
      await sql`create index magic_links_sending on magic_links (sending_until) where sending_until is not null`.execute(
        db,
      );
      await sql`create index deliveries_claimed on deliveries (claimed_by) where claimed_by is not null`.execute(db);
      await db.schema.dropIndex('deliveries_claimed_by').execute();
    },
  ],
  [
    '0016_list_indexes',
    async (db) => {
      // every list filter answers a page from an index in id order, newest first, however many rows
      // match: by status, by document, by recipient; a webhook's deliveries
      await db.schema.dropIndex('magic_links_status').execute();
      await db.schema.createIndex('magic_links_status').on('magic_links').columns(['status', 'id']).execute();
      await db.schema.dropIndex('magic_links_document').execute();
      await db.schema.createIndex('magic_links_document').on('magic_links').columns(['document_id', 'id']).execute();
      await db.schema
        .createIndex('magic_links_recipient')
        .on('magic_links')
        .columns(['recipient_email', 'id'])
        .execute();
      await db.schema.createIndex('deliveries_webhook').on('deliveries').columns(['webhook_id', 'id']).execute();
    },
  ],
  [
    '0017_storage_pending',
    async (db) => {
      // bytes outside the database (files, objects) that no record may name: written before their
      // record commits, or left after it was deleted; housekeeping deletes those no document names
      await db.schema
        .createTable('storage_pending')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('since', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('storage_pending_since').on('storage_pending').column('since').execute();
    },
  ],
  [
    '0018_templates_by_time_and_view_numbers',
    async (db) => {
      // templates list newest first by when they were made (the examples' fixed ids do not sort by time)
      await db.schema.createIndex('templates_created').on('templates').columns(['created_at', 'id']).execute();
      // a reload within a view shows that view's number, not the link's count since
      await db.schema.alterTable('link_sessions').addColumn('view_number', 'integer').execute();
    },
  ],
  [
    '0019_link_codes_per_person',
    async (db) => {
      // a link may be opened by several people (allowed_viewers), each with a code of their own: a
      // code is kept per link and address. Codes live ten minutes, so those in flight at the upgrade
      // are dropped rather than moved (their recipients ask for a new one)
      await db.schema.dropTable('link_codes').execute();
      await db.schema
        .createTable('link_codes')
        .addColumn('link_id', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('link_codes_pkey', ['link_id', 'email'])
        .execute();
      await db.schema.createIndex('link_codes_expires').on('link_codes').column('expires_at').execute();
    },
  ],
  [
    '0020_document_retention',
    async (db) => {
      // retain_for: when the retention sweep deletes a document; the sweep reads the index in time order
      await db.schema.alterTable('documents').addColumn('expires_at', 'text').execute();
      await sql`create index documents_expires on documents (expires_at) where expires_at is not null`.execute(db);
    },
  ],
  [
    '0021_link_page_times',
    async (db, d) => {
      // how long each person looked at each page of a link: one row per link, address and page,
      // added to by the viewer's reports (bounded by the pages a document has and the people it allows)
      await db.schema
        .createTable('link_page_times')
        .addColumn('link_id', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('page', 'integer', (c) => c.notNull())
        .addColumn('ms', d === 'postgres' ? 'bigint' : 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('link_page_times_pkey', ['link_id', 'email', 'page'])
        .execute();
      // what a sign-in has reported so far: never more than the time since it began
      await db.schema
        .alterTable('link_sessions')
        .addColumn('reported_ms', d === 'postgres' ? 'bigint' : 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  ],
  [
    '0022_link_notices',
    async (db) => {
      // the e-mails a link's lifecycle sends besides the link (to the sender on the first view and
      // at the end, a reminder to the recipient): JSON of when each went, so each goes once
      await db.schema.alterTable('magic_links').addColumn('notices', 'text').execute();
    },
  ],
  [
    '0023_history_retention',
    async (db) => {
      // housekeeping deletes an event with its deliveries (src/history.ts): found by the event
      await db.schema.createIndex('deliveries_event').on('deliveries').columns(['event_id', 'status']).execute();
    },
  ],
  [
    '0024_access_log_counts',
    async (db) => {
      // a refused anonymous opening repeated from the same address and browser is one entry with a count
      await db.schema
        .alterTable('link_events')
        .addColumn('count', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema.alterTable('link_events').addColumn('last_at', 'text').execute();
    },
  ],
  [
    '0025_render_spool',
    async (db, d) => {
      // the bytes of a render whose storing failed, for its retry (src/documents/spool.ts)
      await db.schema
        .createTable('render_spool')
        .addColumn('render_id', 'text', (c) => c.primaryKey())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .addColumn('meta', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  ],
  [
    '0026_leases',
    async (db) => {
      // every claim on background work is one shape (src/jobs/lease.ts): `<name>_by`, `<name>_until`
      // and `<name>_epoch`, the epoch fencing each write made under it
      for (const table of ['magic_links', 'postcards']) {
        await db.schema.alterTable(table).addColumn('claimed_until', 'text').execute();
        await db.schema
          .alterTable(table)
          .addColumn('claimed_epoch', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      }
      await db.schema
        .alterTable('magic_links')
        .addColumn('sending_epoch', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('deliveries')
        .addColumn('claimed_epoch', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // a send lease from before leases named their sender: its sender is gone; the link's step sends it
      await sql`update magic_links set wake_at = coalesce(wake_at, sending_until), sending_until = null
        where sending_until is not null and sending_by is null`.execute(db);
      // a request with an Idempotency-Key runs under a lease too
      await db.schema.alterTable('idempotency').addColumn('claimed_by', 'integer').execute();
      await db.schema.alterTable('idempotency').addColumn('claimed_until', 'text').execute();
      await db.schema
        .alterTable('idempotency')
        .addColumn('claimed_epoch', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`create index idempotency_claimed on idempotency (claimed_by) where claimed_by is not null`.execute(db);
      // a sweep finds held leases by their holder, as it does the others
      await sql`create index magic_links_sending_by on magic_links (sending_by) where sending_by is not null`.execute(
        db,
      );
      await db.schema.dropIndex('magic_links_sending').execute();
    },
  ],
  [
    '0027_link_ended_reason',
    async (db) => {
      // why a link ended, kept with it (a link ended with its document cannot tell from its row);
      // what an older ended link's row says: revoked, or ended with its document (which is gone);
      // the rest read their reason from their row (src/links/model.ts)
      await db.schema.alterTable('magic_links').addColumn('ended_reason', 'text').execute();
      await sql`update magic_links set ended_reason = 'revoked' where status = 'revoked'`.execute(db);
      await sql`update magic_links set ended_reason = 'document_deleted'
        where status = 'expired' and not exists (select 1 from documents where documents.id = magic_links.document_id)`.execute(
        db,
      );
    },
  ],
  [
    '0028_document_follows_links',
    async (db) => {
      // a document made only for Magic Links is kept while one is active and deleted a set time
      // after the last one ends (Documents.expireDue); the sweep finds them by a partial index
      await db.schema
        .alterTable('documents')
        .addColumn('follows_links', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`create index documents_follow_links on documents (id) where follows_links = 1`.execute(db);
    },
  ],
  [
    '0029_template_versions',
    async (db, d) => {
      // a template is a name and its current version; each save is a new version that never
      // changes (its source, its files, its sample values), and a render records which it used
      await db.schema
        .createTable('template_versions')
        .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('source', sql.raw(blob(d)), (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('defaults', 'text', (c) => c.notNull())
        .addColumn('sample', 'text')
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('template_versions_pk', ['template_id', 'version'])
        .execute();
      await sql`insert into template_versions (template_id, version, format, source, variables, defaults, size, created_at)
        select id, 1, format, source, variables, defaults, size, updated_at from templates`.execute(db);
      await db.schema
        .createTable('template_version_assets')
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('bytes', sql.raw(blob(d)), (c) => c.notNull())
        .addPrimaryKeyConstraint('template_version_assets_pk', ['template_id', 'version', 'path'])
        .addForeignKeyConstraint(
          'template_version_assets_version',
          ['template_id', 'version'],
          'template_versions',
          ['template_id', 'version'],
          (c) => c.onDelete('cascade'),
        )
        .execute();
      await sql`insert into template_version_assets (template_id, version, path, bytes)
        select template_id, 1, path, bytes from template_assets`.execute(db);
      await db.schema.dropTable('template_assets').execute();
      await db.schema
        .alterTable('templates')
        .addColumn('current_version', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      for (const column of ['format', 'source', 'variables', 'defaults', 'size'])
        await db.schema.alterTable('templates').dropColumn(column).execute();
      // what a render used: null on a record made before versions (it was version 1 or its replacement)
      await db.schema.alterTable('documents').addColumn('template_version', 'integer').execute();
      await db.schema.alterTable('postcards').addColumn('template_version', 'integer').execute();
    },
  ],
  [
    '0030_template_files_once',
    async (db) => {
      // a file a version has byte for byte as an earlier version of its template is stored once:
      // the later row's bytes are empty and stored_in names the version that holds them
      await db.schema.alterTable('template_version_assets').addColumn('stored_in', 'integer').execute();
    },
  ],
  [
    '0031_postcards_for_print',
    async (db) => {
      // test postcard tokens, and what a postcard was made with: test or live, its print size
      await db.schema
        .alterTable('api_keys')
        .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('postcards')
        .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('postcards').addColumn('size', 'text').execute();
      // a live postcard handed to a mail partner: who, and the partner's id of it
      await db.schema.alterTable('postcards').addColumn('partner', 'text').execute();
      await db.schema.alterTable('postcards').addColumn('partner_id', 'text').execute();
      // its hand-off, a job on the process's runner (src/postcards/handoff.ts): due, tried, leased
      await db.schema
        .createTable('postcard_handoffs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('partner', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text')
        .addColumn('first_attempt_at', 'text')
        .addColumn('last_error', 'text')
        .addColumn('claimed_by', 'integer')
        .addColumn('claimed_until', 'text')
        .addColumn('claimed_epoch', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await sql`create index postcard_handoffs_due on postcard_handoffs (next_attempt_at) where status = 'pending'`.execute(
        db,
      );
      await sql`create index postcard_handoffs_claimed on postcard_handoffs (claimed_by) where claimed_by is not null`.execute(
        db,
      );
      await sql`create unique index postcards_partner_id on postcards (partner, partner_id) where partner_id is not null`.execute(
        db,
      );
    },
  ],
  [
    '0032_template_print_check',
    async (db) => {
      // a postcard template's size, and what its sample print warned of at upload (store.ts)
      await db.schema.alterTable('template_versions').addColumn('postcard', 'text').execute();
      await db.schema.alterTable('template_versions').addColumn('print_warnings', 'text').execute();
    },
  ],
];

export function migrationsFor(dialect: Dialect): Record<string, Migration> {
  return Object.fromEntries(MIGRATIONS.map(([name, up]) => [name, { up: (db: Kysely<unknown>) => up(db, dialect) }]));
}
