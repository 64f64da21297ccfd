// Three tiers: unit specs (beside the code, and test/**/*.spec.ts for checks over the source tree),
// repository specs (test/<module>/*.db-spec.ts: each repository against real PostgreSQL), and e2e
// suites (test/<module>/*.e2e-spec.ts, each on its own database).
// ts-jest transpiles only (no type check here: `npm run check` does that once for the tree).
const tsJest = ['ts-jest', { isolatedModules: true, diagnostics: false }];
// content-disposition (under @fastify/static, which Swagger UI needs on Fastify) ships ESM only.
const esmJs = ['ts-jest', { isolatedModules: true, diagnostics: false, tsconfig: { allowJs: true, module: 'commonjs' } }];
const common = {
  transform: { '^.+\\.ts$': tsJest, '^.+/node_modules/content-disposition/.+\\.js$': esmJs },
  transformIgnorePatterns: ['/node_modules/(?!.*content-disposition/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleDirectories: ['node_modules', '<rootDir>'],
  testEnvironment: 'node',
};
module.exports = {
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  projects: [
    { ...common, displayName: 'unit', rootDir: __dirname, testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'] },
    { ...common, displayName: 'db', rootDir: __dirname, testMatch: ['<rootDir>/test/**/*.db-spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // Every response the suites see is checked against docs/openapi.json (test/support/observed-responses.ts).
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
