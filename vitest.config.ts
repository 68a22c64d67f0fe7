import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

// Tests of pure code: no database, queue, child process, environment or global state of their
// own. They share their worker's module cache (isolate: false), so the workspace's modules load
// once per worker instead of once per file; on two cores that is most of their time.
const PURE_PACKAGES = ['core', 'tokenizer', 'contract', 'llm', 'llm-stub', 'gateway'];
const PURE_TESTS = PURE_PACKAGES.map((name) => `packages/${name}/src/**/*.test.ts`);
// Pure, but counts of millions of characters: V8 coverage doubles its time (39 → 82 s), and it
// would be the pure run's longest file by far. It runs in `services`, without coverage; the
// tokenizer's other tests cover the same code.
const HOSTILE_TEXT_TEST = 'packages/tokenizer/src/hostile-text.test.ts';
const PURE_TESTS_BUT_HOSTILE_TEXT = PURE_TESTS.map((glob) =>
  glob.startsWith('packages/tokenizer/') ? 'packages/tokenizer/src/**/!(hostile-text).test.ts' : glob,
);

const ALL_TESTS = [
  'packages/*/src/**/*.test.ts',
  'apps/*/src/**/*.test.ts',
  'test/**/*.test.ts',
  'scripts/**/*.test.ts',
  'bench/**/*.test.ts',
];

// One vitest setup for the whole repo: tests live next to the code (`*.test.ts`), talk to real
// Postgres and Redis (see test/global-setup.ts), and run from TypeScript source without a build.
export default defineConfig({
  test: {
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
    projects: [
      {
        extends: true,
        test: {
          name: 'pure',
          include: PURE_TESTS,
          exclude: [...configDefaults.exclude, HOSTILE_TEXT_TEST],
          isolate: false,
        },
      },
      // Everything else: each file builds what it uses on its own database, queue prefix and
      // ports, and puts back what it changes of the process (timers, spies, environment), so
      // the files share their worker's module cache too. Isolated, every file loaded the
      // workspace and its dependencies again: 205 s of 554 s summed import time, now ~25 s.
      {
        extends: true,
        test: {
          name: 'services',
          include: ALL_TESTS,
          exclude: [...configDefaults.exclude, ...PURE_TESTS_BUT_HOSTILE_TEXT],
          isolate: false,
        },
      },
    ],
    // Coverage is measured where its threshold applies: the pure packages, by their own tests
    // (`npm test` runs project `pure` with coverage, then `services` without). V8 coverage costs
    // the services' tests about half their CPU again. `npm run test:coverage` measures every
    // package and app under every test.
    coverage: {
      provider: 'v8',
      include: PURE_PACKAGES.map((name) => `packages/${name}/src/**/*.ts`),
      exclude: ['**/*.test.ts', '**/test-support/**', '**/main.ts', 'packages/db/src/cli/**'],
      reporter: ['text-summary', ['text', { skipFull: true }]],
      thresholds: {
        'packages/core/src/**': { lines: 90 },
      },
    },
  },
});
