// Two projects: unit specs beside the code, e2e suites under test/ (each on its own database).
const swc = ['@swc/jest', {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
}];
const common = {
  transform: { '^.+\\.ts$': swc, '^.+/node_modules/content-disposition/.+\\.js$': swc },
  // content-disposition (under @fastify/static, which Swagger UI needs on Fastify) ships ESM only.
  transformIgnorePatterns: ['/node_modules/(?!.*content-disposition/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleDirectories: ['node_modules', '<rootDir>'],
  testEnvironment: 'node',
};
module.exports = {
  testTimeout: 60000,
  projects: [
    { ...common, displayName: 'unit', rootDir: __dirname, testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', rootDir: __dirname, testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
};
