import { availableParallelism } from 'node:os';
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
    // Most of the suite waits (child processes, Postgres, Redis, timers) rather than computes: on
    // a 2-core machine 4 files at a time took the run from 527 s to 363 s (docs/BENCHMARKS.md,
    // "Test suite"), every test passing. More cores: one file per core, as vitest would.
    maxWorkers: Math.max(4, availableParallelism()),
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
