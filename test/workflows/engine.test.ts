/**
 * The Temporal engine in the API process when Temporal cannot be reached: a received postcard or
 * a changed link is not lost (the database holds it) and the start is kept to be tried again; a
 * generate request is answered 503 engine_unavailable at its deadline instead of hanging.
 */
import { Client, Connection } from '@temporalio/client';
import { FakeClock } from '../../src/clock';
import { UnavailableError } from '../../src/errors';
import { TemporalEngine } from '../../workflows/client';
import { closedPort } from '../support/net';

describe('TemporalEngine without a reachable server', () => {
  it('keeps failed starts and signals, reports them, and tries them again', async () => {
    const errors: string[] = [];
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const engine = new TemporalEngine(new Client({ connection }), 'paperlink', {
      onError: (id) => errors.push(id),
      callTimeoutMs: 300,
    });
    try {
      engine.postcardReceived('pc_1');
      engine.linkChanged('ml_1', 'opened');
      const deadline = Date.now() + 25_000;
      while (errors.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(errors.sort()).toEqual(['link-ml_1', 'postcard-pc_1']);
      expect(await engine.retry()).toBe(2);
      expect(errors.filter((e) => e === 'postcard-pc_1')).toHaveLength(2);
    } finally {
      await engine.stop();
    }
  }, 60_000);

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
