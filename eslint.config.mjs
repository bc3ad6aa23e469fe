// ESLint: typescript-eslint's type-checked rules over every TypeScript file (a promise nobody
// awaits loses its error), the recommended rules over the JavaScript scripts and benches, n8n's
// rules over the nodes, and what must hold for code that runs inside Temporal's workflow sandbox.
// src/flows and the workflow files are bundled into it: no Node built-ins, and in the flows no
// clock or randomness of their own (time comes from ports.now()). The bundle test
// (test/workflows/bundle.test.ts) checks the same from the other side.
import { builtinModules } from 'node:module';
import path from 'node:path';
import js from '@eslint/js';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const builtins = builtinModules.filter((m) => !m.startsWith('_'));
const noBuiltins = {
  paths: [...builtins, ...builtins.map((m) => `node:${m}`)].map((name) => ({
    name,
    message: 'runs inside the Temporal workflow sandbox: no Node built-ins here; do I/O in an activity.',
  })),
};

// The n8n package is cut from this repository (gulpfile.js): its manifest is
// packages/n8n-nodes-paperlink/package.json, while its sources stay in nodes/ and credentials/.
// n8n's rules that check a node against "its" package.json look for the nearest one above the
// file, which here is the service's; these rules are shown the file as if it lived in the package
// (whose nodes/ and credentials/ are links to the sources, so the manifest's paths resolve).
const n8nPackage = path.resolve('packages/n8n-nodes-paperlink');
const MANIFEST_RULES = ['no-credential-reuse', 'credential-test-required', 'valid-credential-references'];
const n8nPlugin = {
  ...n8nCommunityNodesPlugin,
  rules: Object.fromEntries(
    Object.entries(n8nCommunityNodesPlugin.rules).map(([name, rule]) => [
      name,
      !MANIFEST_RULES.includes(name)
        ? rule
        : {
            ...rule,
            create(context) {
              const filename = path.join(n8nPackage, path.relative(process.cwd(), context.filename));
              return rule.create(Object.create(context, { filename: { value: filename } }));
            },
          },
    ]),
  ),
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'packages/*/dist/**',
      'packages/*/nodes',
      'packages/*/credentials',
      // its own TypeScript project (its tsconfig), built and run from the packed tarball by scripts/test-temporal-app.js
      'examples/temporal-app/**',
    ],
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // an async function without an await is how a function meets an interface that returns a
      // promise (an asset resolver, a port); dropping `async`, the rule's fix, would turn what it
      // throws into an exception where callers expect a rejection
      '@typescript-eslint/require-await': 'off',
      // passing on what was caught (unknown) is how a rejection is forwarded, not a new non-Error reason
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // what a destructuring leaves out on purpose (`const { id: _id, ...rest } = row`)
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_' }],
      // a `let` a closure reads before the one assignment after it (`let fake!: …; … fake = make(closures)`)
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // a function a reader can hold on one screen (issue 67); the few over it (the layout's and the
    // compiler's case-by-case algorithms) say why where they are
    files: ['src/**/*.ts', 'workflows/**/*.ts', 'nodes/**/*.ts', 'credentials/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }] },
  },
  {
    // a test reads the JSON its requests answered (`res.json()`, any) and asserts on it: a wrong
    // shape fails the assertion, so typing every answer first would add nothing the test checks
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['scripts/**/*.js', 'bench/**/*.js', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_' }] },
  },
  {
    files: ['**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  // the web app's browser modules (bundled by gulpfile.js)
  { files: ['web/**/*.mjs'], languageOptions: { globals: { ...globals.browser } } },
  // n8n's rules for community node packages, every one on, on the nodes, the credentials and the
  // n8n package's manifest (which must have no runtime dependencies: the nodes are bundled)
  // (recommended, which holds recommendedWithoutN8nCloudSupport, and the one rule outside both)
  {
    ...n8nCommunityNodesPlugin.configs.recommended,
    plugins: { '@n8n/community-nodes': n8nPlugin },
    files: ['nodes/**/*.ts', 'credentials/**/*.ts', 'packages/n8n-nodes-paperlink/package.json'],
    languageOptions: { parser: tseslint.parser },
    rules: {
      ...Object.fromEntries(
        Object.keys(n8nCommunityNodesPlugin.rules).map((r) => [`@n8n/community-nodes/${r}`, 'error']),
      ),
      ...n8nCommunityNodesPlugin.configs.recommended.rules,
    },
  },
  {
    files: ['src/flows/**/*.ts', 'workflows/workflows.ts', 'workflows/common.ts', 'workflows/children.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          ...noBuiltins,
          patterns: [
            {
              // a parent path is outside the sandbox's code, except the flows themselves
              regex: '^\\.\\./(?!src/flows/)',
              allowTypeImports: true,
              message: 'only types may come from outside src/flows into the workflow sandbox.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/flows/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'flows read the time from ports.now().' },
        { object: 'Math', property: 'random', message: 'flows must be deterministic.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'flows read the time from ports.now().',
        },
      ],
    },
  },
);
