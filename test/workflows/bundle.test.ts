/**
 * What keeps the workflow sandbox deterministic: the workflows bundle with Temporal's own bundler
 * (which refuses Node built-ins anywhere in the import graph), and the lint rule that says so in
 * the editor, before a bundle is ever made.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const root = path.resolve(__dirname, '../..');
const logger = new DefaultLogger('ERROR');

describe('the workflow bundle', () => {
  it('bundles workflows/workflows.ts with the flows it binds', async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: path.join(root, 'workflows/workflows.ts'), logger });
    for (const name of ['generateFlow', 'linkLifecycle', 'postcardIntake', 'POLICIES']) expect(code).toContain(name);
  }, 60_000);

  it.each([
    ['workflow-via-helper.ts', 'node:os'],
    ['workflow-bare-builtin.ts', 'crypto'],
  ])(
    'refuses %s, which reaches the built-in %s',
    async (file, builtin) => {
      const said: string[] = [];
      const listening = new DefaultLogger('WARN', (entry) => said.push(entry.message));
      const err = await bundleWorkflowCode({
        workflowsPath: path.join(__dirname, 'fixtures', file),
        logger: listening,
      }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(Error);
      // the bundler names the module in its error, or in webpack's output when the scheme is node:
      expect(`${err!.message}\n${said.join('\n')}`).toContain(builtin);
    },
    60_000,
  );
});

describe('the package for engineers', () => {
  it('exports the client helpers, the worker parts and a bundleable workflows file by package name', async () => {
    // node resolves the package's own name through its "exports", as in an engineer's project (needs `npm run build`)
    const script = `const c = require('paperlink/workflows/client'); const w = require('paperlink/workflows/worker');
      console.log(JSON.stringify({ client: Object.keys(c).sort(), worker: Object.keys(w).sort(), path: w.workflowsPath }));`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const found = JSON.parse(r.stdout) as { client: string[]; worker: string[]; path: string };
    expect(found.client).toEqual(
      expect.arrayContaining([
        'generateDocument',
        'startPostcardIntake',
        'linkStatus',
        'signalLink',
        'expireLink',
        'requestError',
        'TemporalEngine',
        'workflowId',
      ]),
    );
    expect(found.worker).toEqual(expect.arrayContaining(['createActivities', 'runWorker', 'workflowsPath']));
    expect(found.path).toBe(path.join(root, 'dist/workflows/workflows.js'));
    const { code } = await bundleWorkflowCode({ workflowsPath: found.path, logger });
    expect(code).toContain('linkLifecycle');
  }, 60_000);
});

describe('the sandbox lint rule', () => {
  const eslint = new ESLint({ cwd: root });
  // a file that is not on disk is outside the TypeScript project: linted without type information
  const unsaved = new ESLint({ cwd: root, overrideConfig: tseslint.configs.disableTypeChecked });

  it('passes on the flows and the workflow files as they are', async () => {
    const results = await eslint.lintFiles(['src/flows', 'workflows/workflows.ts', 'workflows/common.ts']);
    expect(
      results.flatMap((r) => r.messages.map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.ruleId}`)),
    ).toEqual([]);
    expect(results.length).toBeGreaterThanOrEqual(6);
    // linting with type information builds the project's TypeScript program: seconds, a minute on a busy machine
  }, 180_000);

  it.each([
    [
      'src/flows/new-flow.ts',
      "import fs from 'node:fs';\nexport const n = fs.constants.F_OK;\n",
      '@typescript-eslint/no-restricted-imports',
    ],
    [
      'src/flows/new-flow.ts',
      "import { randomUUID } from 'crypto';\nexport const n = randomUUID();\n",
      '@typescript-eslint/no-restricted-imports',
    ],
    [
      'src/flows/new-flow.ts',
      "import { Documents } from '../documents';\nexport const d = Documents;\n",
      '@typescript-eslint/no-restricted-imports',
    ],
    ['src/flows/new-flow.ts', 'export const t = Date.now();\n', 'no-restricted-properties'],
    ['src/flows/new-flow.ts', 'export const r = Math.random();\n', 'no-restricted-properties'],
    ['src/flows/new-flow.ts', 'export const t = new Date();\n', 'no-restricted-syntax'],
    [
      'workflows/workflows.ts',
      "import path from 'path';\nexport const p = path.sep;\n",
      '@typescript-eslint/no-restricted-imports',
    ],
  ])('flags %s with %j', async (filePath, text, rule) => {
    const [result] = await unsaved.lintText(text, { filePath: path.join(root, filePath) });
    expect(result.messages.map((m) => m.ruleId)).toContain(rule);
  });

  it('lets types in from the rest of src (they vanish from the bundle)', async () => {
    const [result] = await unsaved.lintText(
      "import type { Documents } from '../documents';\nexport type D = Documents;\n",
      { filePath: path.join(root, 'src/flows/new-flow.ts') },
    );
    expect(result.messages).toEqual([]);
  });
});
