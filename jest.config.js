/** Tests run from the TypeScript sources, transpiled by swc; `npm test` type-checks them first. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        // keep import() native so ESM-only test helpers (pdfjs-dist) load through Node
        module: { type: 'commonjs', ignoreDynamic: true },
      },
    ],
  },
  testTimeout: 30000,
};
