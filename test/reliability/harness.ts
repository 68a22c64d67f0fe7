/**
 * Process-level reliability harness: real worker PROCESSES (`apps/worker/src/main.ts`) against
 * this test file's own Postgres database and a Redis (shared, under a unique hash-tagged prefix,
 * or a private `redis-server`), the LLM stub in the test process, and compactions requested the
 * way the API requests them (`startCompaction`: row + outbox, then enqueue).
 *
 * Children never outlive the test process: `useWorkerFleet` kills them in afterAll, an `exit`
 * handler SIGKILLs whatever is left, and each worker preloads `orphan-guard.mjs`, which exits
 * when the test process's end of its stdin pipe closes (a crashed or killed vitest fork).
 */
export * from './config';
export * from './context-check';
export * from './fleet';
export * from './records';
export * from './rig';
export * from './seeding';
export { prng } from '@compactor/testing/fixtures';
