/**
 * Request logs: each line a request writes carries that request's id (the X-Request-Id it was
 * answered with), and a level below the configured one writes nothing.
 */
import { Writable } from 'node:stream';
import { buildApp } from '../../src/app';
import { testService } from '../support/service';

async function logsAt(logLevel: 'info' | 'warn') {
  const t = await testService({ config: { logLevel } });
  let logged = '';
  const app = await buildApp(t.service, {
    logStream: new Writable({ write: (c, _e, cb) => ((logged += c.toString()), cb()) }),
  });
  try {
    const ids: string[] = [];
    for (const url of ['/healthz', '/v1/nothing', '/healthz']) {
      const res = await app.inject({ method: 'GET', url, headers: { 'x-service-api-token': t.key } });
      ids.push(String(res.headers['x-request-id']));
    }
    const lines = logged
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; reqId?: string; msg?: string });
    return { ids, lines };
  } finally {
    await app.close();
    await t.stop();
  }
}

describe('request logs', () => {
  it('tie every line of a request to the id it was answered with', async () => {
    const { ids, lines } = await logsAt('info');
    for (const id of ids) {
      const own = lines.filter((l) => l.reqId === id);
      expect(own.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
    }
    expect(lines.filter((l) => l.reqId === undefined && /request/.test(l.msg ?? ''))).toEqual([]);
  });

  it('write nothing below the configured level', async () => {
    const { lines } = await logsAt('warn');
    expect(lines.filter((l) => l.level < 40)).toEqual([]);
    expect(lines.filter((l) => l.reqId !== undefined)).toEqual([]);
  });
});
