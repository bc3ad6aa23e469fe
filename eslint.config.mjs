// ESLint: what must hold for code that runs inside Temporal's workflow sandbox.
// src/flows and the workflow files are bundled into it: no Node built-ins, and in the flows no
// clock or randomness of their own (time comes from ports.now()). The bundle test
// (test/workflows/bundle.test.ts) checks the same from the other side.
import { builtinModules } from 'node:module';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import tseslint from 'typescript-eslint';

const builtins = builtinModules.filter((m) => !m.startsWith('_'));
const noBuiltins = {
  paths: [...builtins, ...builtins.map((m) => `node:${m}`)].map((name) => ({
    name,
    message: 'runs inside the Temporal workflow sandbox: no Node built-ins here; do I/O in an activity.',
  })),
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  // n8n's rules for community node packages, on the nodes, the credentials and package.json
  {
    ...n8nCommunityNodesPlugin.configs.recommended,
    files: ['nodes/**/*.ts', 'credentials/**/*.ts', 'package.json'],
    languageOptions: { parser: tseslint.parser },
    rules: {
      ...n8nCommunityNodesPlugin.configs.recommended.rules,
      // this package is also the service and CLI: they need runtime dependencies; the heavy ones
      // (database drivers, the Temporal SDK) are optional (README, "n8n")
      '@n8n/community-nodes/no-runtime-dependencies': 'off',
    },
  },
  {
    files: ['src/flows/**/*.ts', 'workflows/workflows.ts', 'workflows/common.ts'],
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
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'flows read the time from ports.now().' }],
    },
  },
);
