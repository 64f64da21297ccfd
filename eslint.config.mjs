// Lint rules worth having (STYLE.md): unhandled promises, async without await, exhaustive switches, strict equality, braces.
import tseslint from 'typescript-eslint';

const relativeImports = { group: ['../*', './*'], message: 'import from src/ (absolute)' };
const viaRepository = 'statements live in a *.repository.ts of the module that owns the table (docs/conventions.md, "Layout")';

const rules = {
  '@typescript-eslint/no-floating-promises': 'error',
  '@typescript-eslint/require-await': 'error',
  '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
  eqeqeq: ['error', 'always'],
  curly: ['error', 'multi-line'],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', '*.js', '*.mjs'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      ...rules,
      'no-restricted-imports': ['error', { patterns: [relativeImports] }],
    },
  },
  // Services hold the rules and call repositories: no data source, no SQL and no query builder
  // outside *.repository.ts, the migrations and src/database.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.repository.ts', 'src/database/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [relativeImports],
          paths: [
            { name: 'typeorm', importNames: ['DataSource', 'QueryRunner', 'SelectQueryBuilder'], message: viaRepository },
            { name: '@nestjs/typeorm', importNames: ['InjectRepository', 'InjectDataSource', 'InjectEntityManager'], message: viaRepository },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.property.name='query']", message: viaRepository },
        { selector: "CallExpression[callee.property.name='createQueryBuilder']", message: viaRepository },
        { selector: "CallExpression[callee.name='namedQuery']", message: viaRepository },
        { selector: "CallExpression[callee.name='namedQueryIn']", message: viaRepository },
      ],
    },
  },
  { files: ['test/**/*.ts', 'src/**/*.spec.ts', 'bench/**/*.ts'], rules: { '@typescript-eslint/require-await': 'off' } },
  // The client package (clients/typescript) is linted by the same rules; it is published, so its
  // imports are relative, and its generated types (src/schema.ts) are not linted.
  { ignores: ['clients/typescript/dist/**', 'clients/typescript/src/schema.ts'] },
  {
    files: ['clients/typescript/src/**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules,
  },
  // Jest loads global setup and teardown outside its module resolution: relative imports only.
  { files: ['test/support/global-*.ts'], rules: { 'no-restricted-imports': 'off' } },
);
