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
      // Local leftovers that .gitignore keeps out of the repository (the linter does not read it).
      'bench/scratch/**',
      'replay-report/**',
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
    // The client reaches the API over HTTP only: the wire contract and zod, global fetch, nothing
    // of the server (its tests and their test-support start the real API, so they are exempt).
    files: ['packages/client/src/**/*.ts', 'packages/client/examples/**/*.ts'],
    ignores: ['**/*.test.ts', 'packages/client/src/test-support/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@compactor/*', '!@compactor/contract', '!@compactor/client'],
              message: 'the client imports no server code: only @compactor/contract (and zod)',
            },
            {
              group: ['node:*', 'fs', 'http', 'https', 'net', 'undici', 'ioredis', 'pg', 'fastify'],
              message: 'the client runs anywhere fetch does: no Node modules, no server libraries',
            },
            { group: ['../../*'], message: 'the client imports nothing outside its package' },
          ],
        },
      ],
    },
  },
  {
    // The session layer is what a session does, whatever carries the request: no HTTP framework,
    // no app (the API adapts to it, never the other way), no driver of its own (db and queue own
    // Postgres and Redis).
    files: ['packages/sessions/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['fastify', 'fastify-*', '@fastify/*', 'http', 'node:http', 'https', 'node:https'],
              message: 'sessions knows no transport: HTTP concerns stay in apps/api/src/http',
            },
            {
              group: ['@compactor/api', '@compactor/api/*', '@compactor/worker', '**/apps/**'],
              message: 'packages never import apps',
            },
            {
              group: ['pg', 'ioredis', 'bullmq', 'drizzle-orm', 'drizzle-orm/*'],
              message: 'storage and queues go through @compactor/db and @compactor/queue',
            },
          ],
        },
      ],
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
