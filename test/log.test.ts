/**
 * The process log (src/log.ts): under json one object a line that always parses, a failure with
 * every cause it has and the ids given, never a URL's password; under pretty the causes the text
 * does not say already.
 */
import { PaperlinkError } from '../src/errors';
import { createLog, errorFields } from '../src/log';
import type { LogLine } from './support/logs';

const written = (format: 'json' | 'pretty') => {
  const out: string[] = [];
  return { out, log: createLog(format, (t) => out.push(t)) };
};
const lines = (out: string[]) =>
  out
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogLine);

describe('errorFields()', () => {
  it('carries the whole cause chain with each code, and stops at a cycle', () => {
    const grpc = Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED 127.0.0.1:7233'), { code: 14 });
    const sdk = new Error('Failed to signalWithStart Workflow', { cause: grpc });
    sdk.name = 'ServiceError';
    const ours = new PaperlinkError('engine_unavailable', 'Temporal did not answer.', { cause: sdk });
    expect(errorFields(ours)).toMatchObject({
      type: 'PaperlinkError',
      code: 'engine_unavailable',
      cause: { type: 'ServiceError', cause: { code: 14, message: expect.stringContaining('UNAVAILABLE') } },
    });
    const loop = new Error('a');
    const other = new Error('b', { cause: loop });
    (loop as { cause?: unknown }).cause = other;
    let depth = 0;
    for (let e: { cause?: unknown } | undefined = errorFields(loop); e; e = e.cause as typeof e) depth++;
    expect(depth).toBeLessThan(20);
  });

  it("masks a URL's password in the message and the stack", () => {
    const err = new Error('connect to postgres://paperlink:s3cret@db:5432/paperlink failed');
    const f = errorFields(err);
    expect(JSON.stringify(f)).not.toContain('s3cret');
    expect(f.message).toContain('postgres://paperlink:***@db:5432');
  });
});

describe('createLog()', () => {
  it('json: a JSON object per line, the fields and err on the first, whatever the fields hold', () => {
    const { out, log } = written('json');
    const meta: Record<string, unknown> = { n: BigInt(7) };
    meta.self = meta;
    log('first\n  second\n', { link_id: 'ml_1', meta, err: new Error('outer', { cause: new Error('inner') }) });
    const [a, b, ...rest] = lines(out);
    expect(rest).toEqual([]);
    expect(a).toMatchObject({ level: 40, msg: 'first', link_id: 'ml_1', err: { cause: { message: 'inner' } } });
    expect(b).toMatchObject({ level: 40, msg: 'second' });
    expect(b.link_id).toBeUndefined();
  });

  it('pretty: the text, then each cause it does not say', () => {
    const { out, log } = written('pretty');
    log('flow link-ml_1 failed: outer', { err: new Error('outer', { cause: new Error('inner') }) });
    expect(out.join('')).toBe('flow link-ml_1 failed: outer\n  cause: inner\n');
  });
});
