import { defineConfig } from 'vitest/config';

// One vitest setup for the whole repo: tests live next to the code (`*.test.ts`), talk to real
// Postgres and Redis (see test/global-setup.ts), and run from TypeScript source without a build.
export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'test/**/*.test.ts',
      'scripts/**/*.test.ts',
    ],
    globalSetup: ['./test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/test-support/**', '**/main.ts', 'packages/db/src/cli/**'],
      reporter: ['text-summary', ['text', { skipFull: true }]],
      thresholds: {
        'packages/core/src/**': { lines: 90 },
      },
    },
  },
});
