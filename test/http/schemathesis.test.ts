/**
 * schemathesis (PyPI) against the served /openapi.json, as a client that only reads the document
 * would test us: examples, boundary values and generated requests for every operation, with a
 * fixed seed and budget, checking that no answer is a 5xx and that every answer (status, content
 * type, headers, body) is one the document describes, and that requests breaking the schema are
 * refused. `scripts/schemathesis-install.sh` installs it (CI does); without it this is skipped.
 *
 * Left out, and why: `positive_data_acceptance` (a request can fit the schema and still break a
 * rule of the domain: a template id that names no template is 422 with a detail, not a 2xx),
 * `unsupported_method` (an undeclared method is 404 in the error shape, as any unknown route),
 * and the stateful checks of other users' data (one key here).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { operatorCli, serveProcess } from '../support/serve';

const VERSION = process.env.SCHEMATHESIS_VERSION ?? '4.32.5';
const home = path.join(os.homedir(), '.cache', 'paperlink-schemathesis', VERSION);
const st = path.join(home, 'bin', 'st');
const reason = fs.existsSync(path.join(home, '.complete'))
  ? undefined
  : `schemathesis ${VERSION} is not installed: bash scripts/schemathesis-install.sh`;
const suite = reason ? describe.skip : describe;

const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'negative_data_rejection',
  'missing_required_header',
];

suite(`schemathesis against /openapi.json${reason ? ` (skipped: ${reason})` : ''}`, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-schemathesis-'));
  let server: Awaited<ReturnType<typeof serveProcess>> | undefined;
  afterAll(() => {
    server?.child.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('finds no 5xx, no answer the document does not describe, and no schema-breaking request taken', async () => {
    const key = /plk_\w+/.exec(operatorCli(dataDir, {})('keys', 'create', '--name', 'schemathesis'))![0];
    // every request comes from here: no per-address limits
    server = await serveProcess(dataDir, {
      RATE_LIMIT_POSTCARDS: '0',
      RATE_LIMIT_PAGES: '0',
      RATE_LIMIT_CODES: '0',
      RATE_LIMIT_PREVIEWS: '0',
    });
    const run = spawnSync(
      st,
      [
        'run',
        `${server.url}/openapi.json`,
        '--header',
        `X-Service-API-Token: ${key}`,
        '--checks',
        CHECKS.join(','),
        '--seed',
        '20261126',
        '--max-examples',
        '25',
        // one worker: with threads, hypothesis's ast.parse meets CPython 3.11's "AST constructor
        // recursion depth mismatch" (python/cpython#106905) now and then, a failure of the tool's own
        '--workers',
        '1',
        '--no-color',
        '--output-truncate',
        'false',
      ],
      { encoding: 'utf8', cwd: dataDir, timeout: 600_000, env: { ...process.env, SCHEMATHESIS_HOOKS: '' } },
    );
    const out = `${run.stdout}${run.stderr}`;
    const summary = /=+ (.*(passed|failures?|errors?).*) =+\s*$/m.exec(out)?.[1] ?? out.slice(-2000);
    expect({ exit: run.status, summary, failures: run.status === 0 ? '' : out.slice(-20_000) }).toEqual({
      exit: 0,
      summary: expect.stringContaining('passed'),
      failures: '',
    });
  }, 620_000);
});
