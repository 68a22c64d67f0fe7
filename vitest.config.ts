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
      'bench/**/*.test.ts',
    ],
    globalSetup: ['./test/global-setup.ts'],
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on a two-core machine, so
    // files run one after another and a core idles while a file waits on Postgres, Redis, a child
    // process or a timer (most of them do, most of the time). Two at least: files are isolated
    // (own database, own queue prefix, own ports), so they may overlap.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Generous: a test bounds a hang, it does not measure speed (benchmarks do), and on a machine
    // whose cores are all taken by other work a 10-second test can take a minute.
    testTimeout: 120_000,
    hookTimeout: 240_000,
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
