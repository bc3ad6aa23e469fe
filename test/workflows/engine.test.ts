/**
 * The Temporal engine in the API process when Temporal cannot be reached: a received postcard or
 * a changed link is not lost (the database holds it, marked for the next handover); a generate
 * request is answered 503 engine_unavailable at its deadline instead of hanging.
 */
import { Client, Connection } from '@temporalio/client';
import { FakeClock } from '../../src/clock';
import { TooLargeError, UnavailableError } from '../../src/errors';
import { MAX_PAYLOAD_BYTES, TemporalEngine } from '../../workflows/client';
import type { Db } from '../../src/db';
import type { Config } from '../../src/config';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { eventually } from '../support/eventually';
import { closedPort } from '../support/net';
import { startReceiver } from '../support/receiver';
import { linkRow, sample } from '../support/rows';
import { testService, type TestService } from '../support/service';
import { createLog } from '../../src/log';
import { serviceOptions } from '../../src/serve';
import type { LogLine } from '../support/logs';

const markOf = async (db: Db, table: 'magic_links' | 'postcards', id: string) =>
  (await db.selectFrom(table).select('wake_at').where('id', '=', id).executeTakeFirstOrThrow()).wake_at;

/**
 * A service on PostgreSQL whose Temporal engine talks to a port nothing listens on; the ids of
 * what it reports failing, and the engine itself.
 */
async function withTemporalAway(
  clock: FakeClock,
  config: Partial<Config> = {},
  onError: (id: string, err: unknown) => void = () => undefined,
) {
  const errors: string[] = [];
  const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
  let engine: TemporalEngine | undefined;
  const t = await testService({
    backend: 'postgres',
    clock,
    config: { engine: 'temporal', ...config },
    service: {
      engine: (_activities, { marks }) =>
        (engine = new TemporalEngine(new Client({ connection }), 'paperlink', {
          onError: (id, err) => (errors.push(id), onError(id, err)),
          marks,
          callTimeoutMs: 300,
          clock,
        })),
    },
  });
  return { t, errors, engine: engine! };
}

/** Posts the example postcard with a new postcard token: answered 202; its id. */
async function postPostcard(t: TestService): Promise<string> {
  const token = (await t.service.keys.create('postcard', 'engine test')).secret;
  const card = await t.app.inject({
    method: 'POST',
    url: '/postcards',
    payload: { ...sample, api_token: token, template_id: EXAMPLE_IDS.postcard },
  });
  expect(card.statusCode).toBe(202);
  return card.json<{ id: string }>().id;
}

describe('TemporalEngine without a reachable server', () => {
  it("logs a failed signal as serve does: under LOG_FORMAT=json with the SDK error's cause chain and the link's id", async () => {
    const clock = new FakeClock('2026-11-26T10:00:00Z');
    const lines: string[] = [];
    const { onFlowError } = serviceOptions(
      { engine: 'temporal' } as Config,
      createLog('json', (text) => lines.push(text)),
    );
    const { t, engine } = await withTemporalAway(clock, {}, onFlowError);
    try {
      await t.service.database.db.insertInto('magic_links').values(linkRow('ml_told', clock.now())).execute();
      engine.linkChanged('ml_told', 'opened');
      await eventually(async () => lines.length > 0, 'the failed signal logged', 25);
      const line = JSON.parse(lines[0]) as LogLine;
      expect(line).toMatchObject({ flow: 'link-ml_told', link_id: 'ml_told' });
      // the SDK's own error ("Failed to signalWithStart Workflow", or the deadline's) says little: its causes say why
      expect(line.err).toBeDefined();
      expect(line.err!.cause).toBeDefined();
    } finally {
      await t.stop();
    }
  }, 60_000);

  it('marks what it could not tell in its row (nothing held in memory), reports it, and keeps the marks when a handover fails', async () => {
    const clock = new FakeClock('2026-11-26T10:00:00Z');
    const { t, errors, engine } = await withTemporalAway(clock);
    try {
      const db = t.service.database.db;
      const postcard = await postPostcard(t);
      // a link Temporal had been told of (no mark) changes while it is unreachable
      await db.insertInto('magic_links').values(linkRow('ml_told', clock.now())).execute();
      clock.advance(1_000);
      engine.linkChanged('ml_told', 'opened');
      await eventually(async () => errors.includes('link-ml_told'), 'the failed signal reported', 25);
      await eventually(async () => (await markOf(db, 'magic_links', 'ml_told')) !== null, 'the link marked');
      expect(await markOf(db, 'magic_links', 'ml_told')).toBe(clock.now().toISOString());
      // the postcard was marked when it was received, and stays marked
      expect(await markOf(db, 'postcards', postcard)).not.toBeNull();
      await eventually(async () => errors.includes(`postcard-${postcard}`), 'the failed start reported', 25);
      // a handover cannot reach Temporal either: it fails, and every mark stays for the next one
      clock.advance(TemporalEngine.HANDOVER_MS + 1_000);
      await expect(engine.handOver()).rejects.toBeDefined();
      expect(await markOf(db, 'magic_links', 'ml_told')).not.toBeNull();
      expect(await markOf(db, 'postcards', postcard)).not.toBeNull();
    } finally {
      await t.stop();
    }
  }, 90_000);

  it('delivers webhook events by the process that wrote them, with Temporal away and no workflow to wake', async () => {
    // under ENGINE=temporal every process that runs background work delivers webhooks itself: an
    // event waits for no workflow, no signal and no other traffic
    const clock = new FakeClock('2026-11-26T10:00:00Z');
    const rx = await startReceiver();
    const { t, errors } = await withTemporalAway(clock, { webhookAllowPrivate: true });
    try {
      const hook = await t.app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: { 'x-service-api-token': t.key },
        payload: { url: rx.url, events: ['postcard.received'] },
      });
      expect(hook.statusCode).toBe(201);
      const postcard = await postPostcard(t);
      await eventually(async () => rx.received.length > 0, 'the event delivered', 25);
      expect(rx.received.map((r) => [r.event.type, r.event.data.object.id])).toEqual([['postcard.received', postcard]]);
      // the postcard's own start could not reach Temporal (it waits, marked, for the handover)
      await eventually(async () => errors.includes(`postcard-${postcard}`), 'the start failed', 25);
    } finally {
      await t.stop();
      await rx.stop();
    }
  }, 90_000);

  it("refuses a generate over Temporal's payload limit with 413 body_too_large, without calling Temporal", async () => {
    const clock = new FakeClock();
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const engine = new TemporalEngine(new Client({ connection }), 'paperlink', { clock });
    try {
      const body = {
        template_id: EXAMPLE_IDS.letter,
        attachments: [{ name: 'big.bin', content: 'A'.repeat(MAX_PAYLOAD_BYTES) }],
      };
      // the clock never moves: an answer at all means it did not wait on the unreachable server
      const err = await engine.generate({ body, caller: { keyId: null, name: 'test' } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TooLargeError);
      expect((err as TooLargeError).code).toBe('body_too_large');
      // just under the limit is handed on (and here waits for the unreachable server)
      let outcome: unknown;
      const pending = engine
        .generate({
          body: { template_id: 'x', pad: 'A'.repeat(MAX_PAYLOAD_BYTES - 200) },
          caller: { keyId: null, name: 'test' },
        })
        .then(
          () => (outcome = 'answered'),
          (e: unknown) => (outcome = e),
        );
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      expect(outcome).toBeUndefined();
      clock.advance(60_000);
      await pending;
      expect(outcome).toBeInstanceOf(UnavailableError);
    } finally {
      await engine.stop();
    }
  }, 30_000);

  it('answers a generate 503 engine_unavailable with Retry-After once its deadline passes, not before', async () => {
    const clock = new FakeClock();
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const engine = new TemporalEngine(new Client({ connection }), 'paperlink', { resultTimeoutMs: 60_000, clock });
    try {
      let outcome: unknown;
      const pending = engine
        .generate({ body: {}, caller: { keyId: null, name: 'test' }, renderId: 'rnd_deadline' })
        .then(
          () => (outcome = 'answered'),
          (err: unknown) => (outcome = err),
        );
      clock.advance(59_999);
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      expect(outcome).toBeUndefined(); // still retrying the unreachable server
      clock.advance(1);
      await pending;
      expect(outcome).toBeInstanceOf(UnavailableError);
      expect((outcome as UnavailableError).code).toBe('engine_unavailable');
      expect((outcome as UnavailableError).retryAfterSeconds).toBe(60);
    } finally {
      await engine.stop();
    }
  }, 30_000);
});
