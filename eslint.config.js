// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/coverage/**',
      '**/.turbo/**',
      '**/dist/**',
      'packages/db/migrations/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // The pure core must not reach for ambient time, randomness or the environment (DESIGN.md).
    files: ['packages/core/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'core is pure: take the time as an argument' },
        { object: 'Math', property: 'random', message: 'core is pure: take randomness as an argument' },
        { object: 'process', property: 'env', message: 'core is pure: only apps read the environment' },
      ],
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'path', 'http', 'https', 'net'] }],
    },
  },
  {
    // Only apps read process.env, through their env.ts.
    files: ['packages/**/src/**/*.ts'],
    ignores: ['**/*.test.ts', 'packages/testing/**', 'packages/db/src/cli/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'only apps read the environment (env.ts)' },
      ],
    },
  },
);
