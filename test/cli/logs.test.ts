/**
 * One log format per process: `paperlink serve` under LOG_FORMAT=json writes nothing but JSON
 * objects, one a line, on standard output and standard error alike (the request log, its greeting,
 * what it says in the background, its stop), and its greeting names the engine as a field. Under
 * LOG_FORMAT=pretty the greeting says the same in words.
 */
import fs from 'node:fs';
import path from 'node:path';
import { eventually } from '../support/eventually';
import { jsonLines, run, type LogLine } from '../support/logs';
import { tempDir } from '../support/tmp';

const dirs = tempDir();

describe('paperlink serve under LOG_FORMAT=json', () => {
  it('writes only JSON lines, its greeting naming the engine, through a generate and a stop', async () => {
    const dataDir = path.join(dirs, 'json');
    const serve = run(['serve', '--port', '0', '--processes', '1', '--data-dir', dataDir], {
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'debug',
      STARTUP_CHECK: 'true',
    });
    try {
      // the greeting ends with the first start's key and a request to try it with
      const keyLine = () => jsonLines(serve.out.stdout, 'stdout').find((l) => /^plk_\w+$/.test(l.msg));
      await eventually(async () => keyLine() !== undefined, `the greeting:\n${serve.out.stdout}`, 30);
      const greeting = jsonLines(serve.out.stdout, 'stdout').find((l) => typeof l.url === 'string')!;
      expect(greeting).toMatchObject({ level: 30, engine: 'embedded', database: 'sqlite', processes: 1 });
      expect(greeting.temporal).toBeUndefined();
      // the first request it wrote, as a user runs it
      const key = keyLine()!.msg;
      const res = await fetch(`${greeting.url as string}/v1/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-api-token': key },
        body: fs.readFileSync(path.join(dataDir, 'first-request.json')),
      });
      expect(res.status).toBe(201);
      await eventually(
        async () => jsonLines(serve.out.stdout, 'stdout').some((l) => Array.isArray(l.formats_working)),
        'the template formats tried',
        60,
      );
    } finally {
      serve.child.kill('SIGTERM');
    }
    const code = await serve.exited;
    if (code !== 0) console.log(`exit ${code}\n${serve.out.stdout.slice(-4000)}\n${serve.out.stderr.slice(-4000)}`);
    expect(code).toBe(0);
    const lines = [...jsonLines(serve.out.stdout, 'stdout'), ...jsonLines(serve.out.stderr, 'stderr')];
    // the request log and the process's own lines, both in the one format
    expect(lines.some((l) => (l.req as { url?: string } | undefined)?.url === '/v1/generate')).toBe(true);
    expect(lines.every((l: LogLine) => typeof l.level === 'number' && typeof l.time === 'number')).toBe(true);
  }, 120_000);

  it('says a failure to start as one JSON line on standard error, with its code', async () => {
    const dataDir = path.join(dirs, 'taken');
    const first = run(['serve', '--port', '0', '--processes', '1', '--data-dir', dataDir], {
      LOG_FORMAT: 'json',
      STARTUP_CHECK: 'false',
    });
    try {
      await eventually(async () => /openapi\.json/.test(first.out.stdout), 'the first server', 30);
      const second = run(['serve', '--port', '0', '--processes', '1', '--data-dir', dataDir], {
        LOG_FORMAT: 'json',
        STARTUP_CHECK: 'false',
      });
      expect(await second.exited).toBe(1);
      const said = [...jsonLines(second.out.stdout, 'stdout'), ...jsonLines(second.out.stderr, 'stderr')];
      expect(said.map((l) => l.err?.code)).toContain('data_dir_in_use');
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  }, 60_000);
});

describe('paperlink serve under LOG_FORMAT=pretty', () => {
  it('names the engine in its greeting', async () => {
    const serve = run(['serve', '--port', '0', '--processes', '1', '--data-dir', path.join(dirs, 'pretty')], {
      LOG_FORMAT: 'pretty',
      STARTUP_CHECK: 'false',
    });
    try {
      await eventually(async () => /openapi\.json/.test(serve.out.stdout), 'the greeting', 30);
      expect(serve.out.stdout).toMatch(/^ {2}data: .*; engine: embedded\b/m);
      expect(serve.out.stdout.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  }, 60_000);
});
