/** Tests run from the TypeScript sources, transpiled by swc; `npm test` type-checks them first. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '/node_modules/(cookie|openid-client|oauth4webapi|jose|iso-3166)/.+\\.js$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        // keep import() native so ESM-only test helpers (pdfjs-dist) load through Node
        module: { type: 'commonjs', ignoreDynamic: true },
      },
    ],
  },
  // cookie 2 (under fastify's inject) and openid-client with its deps are ESM-only; Node 20.19
  // requires them natively, jest's runtime does not, so jest compiles them to CommonJS
  transformIgnorePatterns: ['/node_modules/(?!(cookie|openid-client|oauth4webapi|jose|iso-3166)/)'],
  testTimeout: 30000,
  // a worker per core: the suites wait on Chromium, LibreOffice, PostgreSQL and their own servers
  // as much as they compute (jest's default, the cores less one, is one worker on a 2-core machine)
  maxWorkers: '100%',
  // n8n-core leaves timers running after its engine is used in-process (test/nodes); every suite closes what it opens
  forceExit: true,
  // one throwaway PostgreSQL cluster for the whole run (Debian's postgresql package)
  globalSetup: '<rootDir>/test/setup/servers.ts',
  // every suite's browser and LibreOffice closed after it (test/setup/close-renderers.ts)
  setupFilesAfterEnv: ['<rootDir>/test/setup/close-renderers.ts'],
  globalTeardown: '<rootDir>/test/setup/teardown.ts',
};
