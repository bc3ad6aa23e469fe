/**
 * The Temporal engine in the API process when Temporal cannot be reached: a received postcard or
 * a changed link is not lost (the database holds it) and the start is kept to be tried again.
 */
import { Client, Connection } from '@temporalio/client';
import { TemporalEngine } from '../../workflows/client';
import { closedPort } from '../support/net';

describe('TemporalEngine without a reachable server', () => {
  it('keeps failed starts and signals, reports them, and tries them again', async () => {
    const errors: string[] = [];
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const engine = new TemporalEngine(new Client({ connection }), 'paperlink', (id) => errors.push(id), 300);
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
});
