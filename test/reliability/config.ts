/** Configuration shared by the reliability tests: queue prefixes, worker environment, job policy. */
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { JobPolicy } from '@compactor/queue';

/** A prefix no other test uses, hash-tagged like production's (`{compactor}`). */
export function uniqueHashTaggedPrefix(label = 'rel'): string {
  return `{${label}-${randomUUID()}}`;
}

/** The worker environment for these tests: short locks, a fast reconciler, quick retries. */
export function workerEnv(base: {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  llmUrl: string;
  [key: string]: string;
}): Record<string, string> {
  const { databaseUrl, redisUrl, prefix, llmUrl, ...overrides } = base;
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    OPENAI_BASE_URL: llmUrl,
    OPENAI_API_KEY: 'stub',
    WORKER_CONCURRENCY: '4',
    LOCK_DURATION_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    STEP_TIMEOUT_MS: '3000',
    JOB_BACKOFF_MS: '50',
    JOB_ATTEMPTS: '5',
    SHUTDOWN_TIMEOUT_MS: '2000',
    LOG_LEVEL: 'warn',
    ...overrides,
  };
}

/** The job policy the test process enqueues with; must match the workers' JOB_ATTEMPTS / JOB_BACKOFF_MS. */
export function jobPolicy(attempts: number, backoffBaseMs: number): JobPolicy {
  return {
    attempts,
    backoffBaseMs,
    keepCompleted: { count: 1_000, ageSeconds: 3600 },
    keepFailed: { count: 1_000, ageSeconds: 3600 },
  };
}
/** The shared services vitest's global setup found. */
export const sharedRedisUrl = () => inject('redisUrl');
