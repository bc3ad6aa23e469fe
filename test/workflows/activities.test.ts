/**
 * The activities a Temporal worker runs, under Temporal's MockActivityEnvironment, against a real
 * service (SQLite and PostgreSQL): what they do to the database, and how their failures reach
 * Temporal (a request that cannot succeed is non-retryable and carries the API's error; anything
 * else is retried).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { loadConfig } from '../../src/config';
import { ValidationError } from '../../src/errors';
import type { Activities } from '../../src/engine';
import { parseLinkSettings } from '../../src/links/policy';
import { createService, type Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { createActivities } from '../../workflows/activities';
import { requestError } from '../../workflows/client';
import { REQUEST_FAILURE } from '../../workflows/common';
import { BACKENDS, freshPostgres } from '../support/service';

const root = path.resolve(__dirname, '../..');
const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;
const letter = {
  template_id: EXAMPLE_IDS.letter,
  merge_parameters: { recipient_name: 'Ada', body: 'Hello' },
  destinations: { inkit_storage: {} },
};

describe.each(BACKENDS)('activities on %s', (backend) => {
  let service: Service;
  let dataDir: string;
  let activities: Activities;
  const env = new MockActivityEnvironment();
  const run = <K extends keyof Activities>(name: K, ...args: Parameters<Activities[K]>) =>
    (env.run as (fn: unknown, ...a: unknown[]) => Promise<unknown>)(activities[name], ...args) as ReturnType<
      Activities[K]
    >;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-activities-'));
    const databaseUrl = backend === 'postgres' ? await freshPostgres() : undefined;
    service = await createService(loadConfig({}, { dataDir, databaseUrl, logLevel: 'silent' }), {
      log: () => undefined,
    });
    await service.apps.magicLink.put({});
    activities = createActivities(service);
  });
  afterAll(async () => {
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates once per render id: a retried activity returns the document it stored before', async () => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const body = { ...letter, merge_parameters: Object.fromEntries(variables.map((v) => [v, `value of ${v}`])) };
    const input = { body, caller: { keyId: null, name: 'temporal test' }, renderId: 'rnd_activity_retry_1' };
    const first = await run('generateDocument', input);
    const again = await run('generateDocument', input);
    expect(first.id).toBe('rnd_activity_retry_1');
    expect(again.document_id).toBe(first.document_id);
    const all = await service.documents.list({ limit: 100 });
    expect(all.data.filter((d) => d.id === first.document_id)).toHaveLength(1);
    expect(all.data).toHaveLength(1);
  });

  it('e-mails the Magic Link of a render once however often the activity runs, its first URL keeps working, and no result holds it', async () => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const to = `retried-${backend}@example.com`;
    const body = {
      ...letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations: { magic_link: { recipient_email: to, expire_after_n_views: 2 } },
    };
    const input = { body, caller: { keyId: null, name: 'temporal test' }, renderId: `rnd_activity_link_${backend}` };
    const first = await run('generateDocument', input);
    const again = await run('generateDocument', input);
    expect(again.magic_link_piece_id).toBe(first.magic_link_piece_id);
    // the URL is a secret: the activity's result (kept in Temporal's history) leaves it out, and
    // the API derives it again for its answer
    expect(first.destinations.magic_link!.url).toBe('');
    expect(again.destinations.magic_link!.url).toBe('');
    const url = await service.links.url(first.magic_link_piece_id!);
    // the outbox holds every e-mail the service sent: one to this recipient, with the first URL
    const outbox = path.join(dataDir, 'outbox');
    const sent = fs
      .readdirSync(outbox)
      .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8'))
      .filter((m) => m.includes(to));
    expect(sent).toHaveLength(1);
    const token = new URL(url).pathname.split('/').pop()!;
    expect(sent[0].replace(/=\r?\n/g, '')).toContain(token);
    expect(await service.links.open(token, { ip: '127.0.0.1' })).toMatchObject({
      row: { id: first.magic_link_piece_id },
    });
  });

  it('answers "not sent" for a link revoked before its e-mail went out, so its flow ends revoked instead of failing', async () => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const body = {
      ...letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations: { magic_link: { recipient_email: `revoked-${backend}@example.com`, expire_after_n_views: 1 } },
    };
    // as it is while its e-mail is still due (a failed send waiting for its retry)
    const made = await run('generateDocument', { body, caller: { keyId: null, name: null } });
    const id = made.magic_link_piece_id!;
    await service.database.db.updateTable('magic_links').set({ sent_at: null }).where('id', '=', id).execute();
    await service.links.end(id, 'revoked', false);
    await expect(run('deliverLink', id)).resolves.toBe(false);
    expect(await run('linkState', id)).toMatchObject({ status: 'revoked' });
  });

  it('makes a broken request a non-retryable failure that carries the API error', async () => {
    const err = await run('generateDocument', {
      body: { template_id: 'tmpl_nope', destinations: {} },
      caller: { keyId: null, name: null },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApplicationFailure);
    const failure = err as ApplicationFailure;
    expect(failure.type).toBe(REQUEST_FAILURE);
    expect(failure.nonRetryable).toBe(true);
    const revived = requestError(failure);
    expect(revived).toBeInstanceOf(ValidationError);
    expect(revived!.code).toBe('validation_failed');
    expect(revived!.details.map((d) => d.field).sort()).toEqual(['destinations', 'merge_parameters', 'template_id']);
  });

  it("reads, delivers, expires and revokes a link, and never tells the link's own workflow what it did", async () => {
    const told: string[] = [];
    service.links.onChange = (linkId, change) => told.push(`${linkId} ${change}`);
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const body = {
      ...letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations: { magic_link: { recipient_email: 'ada@example.com', retain_from_created: { hours: 24 } } },
    };
    const made = await run('generateDocument', { body, caller: { keyId: null, name: null } });
    const id = made.magic_link_piece_id!;
    const state = await run('linkState', id);
    expect(state).toMatchObject({ status: 'active', sent: true, sendAttempts: 1, viewsLeft: null });
    expect(Date.parse(state.expiresAt!) - Date.parse((await service.links.get(id)).created_at)).toBe(24 * 3_600_000);
    // delivering a link that was e-mailed already sends nothing (a retried activity, a second engine)
    expect(await run('deliverLink', id)).toBe(true);
    expect((await run('linkState', id)).sendAttempts).toBe(1);
    await run('expireLink', id);
    expect((await run('linkState', id)).status).toBe('expired');

    const other = await service.links.create(
      made.document_id,
      parseLinkSettings({ recipient_email: 'b@example.com', expire_after_n_views: 2 }, 'magic_link'),
      null,
    );
    // a link shared from a stored document starts its own lifecycle: that one is told
    expect(told).toEqual([`${other.link.id} sent`]);
    await run('revokeLink', other.link.id);
    expect((await run('linkState', other.link.id)).status).toBe('revoked');
    // the activities (the workflow asked) told nothing; the API's own revoke tells, once, and only when it ended the link
    expect(told).toEqual([`${other.link.id} sent`]);
    const third = await service.links.create(
      made.document_id,
      parseLinkSettings({ recipient_email: 'c@example.com', expire_after_n_views: 2 }, 'magic_link'),
      null,
    );
    await service.links.end(third.link.id, 'revoked');
    await service.links.end(third.link.id, 'revoked');
    expect(told.filter((t) => t.startsWith(third.link.id))).toEqual([
      `${third.link.id} sent`,
      `${third.link.id} ended`,
    ]);
    service.links.onChange = () => undefined;
  });

  it('heartbeats while an activity runs, so a worker that dies mid-round is noticed', async () => {
    let finish!: (next: string | null) => void;
    const slow = createActivities(
      {
        ...service,
        dispatcher: {
          drain: () => new Promise<string | null>((r) => (finish = r)),
        } as unknown as Service['dispatcher'],
      },
      { heartbeatMs: 5 },
    );
    const beats = new MockActivityEnvironment();
    let seen = 0;
    beats.on('heartbeat', () => {
      if (++seen === 2) finish(null);
    });
    // the round ends only after its second heartbeat
    await expect(beats.run(() => slow.deliverWebhooks())).resolves.toBeNull();
    expect(seen).toBeGreaterThanOrEqual(2);
  });

  it('delivers due webhook events and says when the next retry is due', async () => {
    expect(await run('deliverWebhooks')).toBeNull();
    const db = service.database.db;
    // a subscription to a receiver that refuses: the activity records the attempt and schedules the retry
    await db
      .insertInto('webhooks')
      .values({
        id: 'wh_activity',
        url: 'http://127.0.0.1:9/refused',
        events: '["*"]',
        description: null,
        secret: 'whsec_x',
        created_at: new Date().toISOString(),
      })
      .execute();
    await db
      .transaction()
      .execute((trx) =>
        service.events.emit(trx, 'postcard.received', 'pc_activity', () => ({ object: { id: 'pc_activity' } })),
      );
    const next = await run('deliverWebhooks');
    expect(next).not.toBeNull();
    const delivery = await db
      .selectFrom('deliveries')
      .selectAll()
      .where('resource_id', '=', 'pc_activity')
      .executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, next_attempt_at: next });
    expect(delivery.last_error).toMatch(/ECONNREFUSED|private/);
    await db.deleteFrom('deliveries').where('webhook_id', '=', 'wh_activity').execute();
    await db.deleteFrom('webhooks').where('id', '=', 'wh_activity').execute();
  });

  it('renders a received postcard, and says so when it is asked again', async () => {
    const token = (await service.keys.create('postcard', 'activities test')).secret;
    const { id } = await service.postcards.accept({ api_token: token, template_id: EXAMPLE_IDS.postcard, ...sample });
    expect(await run('renderPostcard', id)).toBe('rendered');
    expect(await run('renderPostcard', id)).toBe('rendered');
    expect((await service.postcards.get(id)).document_id).toMatch(/^doc_/);
  });

  it('lets an unexpected failure (document storage unwritable) through as retryable, and renders once it is fixed', async () => {
    const token = (await service.keys.create('postcard', 'activities test 2')).secret;
    const { id } = await service.postcards.accept({ api_token: token, template_id: EXAMPLE_IDS.postcard, ...sample });
    const docs = path.join(dataDir, 'documents');
    fs.renameSync(docs, `${docs}.away`);
    fs.writeFileSync(docs, 'not a folder');
    try {
      const err = await run('renderPostcard', id).then(
        () => undefined,
        (e: unknown) => e,
      );
      // the file system's own error (another realm's Error under jest), not an ApplicationFailure
      expect((err as Error).message).toMatch(/ENOTDIR|EEXIST/);
      expect(err).not.toBeInstanceOf(ApplicationFailure);
      expect((await service.postcards.get(id)).status).toBe('received');
    } finally {
      fs.rmSync(docs);
      fs.renameSync(`${docs}.away`, docs);
    }
    expect(await run('renderPostcard', id)).toBe('rendered');
  });
});
