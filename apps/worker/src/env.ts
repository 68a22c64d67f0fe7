import { llmEnvSchema } from '@compactor/llm';
import { DEFAULT_STEP_CONCURRENCY, redisUrlSchema } from '@compactor/queue';
import { z } from 'zod';

const positiveMs = z.coerce.number().int().positive();

/** The worker's whole configuration. Only this file reads process.env. */
export const WorkerEnvSchema = z
  .object({
    DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/compactor'),
    /** One server (`redis://`) or a Redis Cluster's seed nodes (`redis-cluster://host:port,host:port`). */
    REDIS_URL: redisUrlSchema.default('redis://127.0.0.1:6379'),
    /** Must equal the API's: the queues and event channels live under it. Hash-tagged for Redis Cluster. */
    QUEUE_PREFIX: z.string().min(1).default('{compactor}'),
    /** Jobs run at once by this process; compactions wait on the LLM, so dozens are fine. */
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16),
    /**
     * Of those jobs, how many do their database and CPU work at once, in arrival order; one
     * waiting on the LLM holds no place. A few keep the process busy; many make a burst of
     * ready jobs all wait for one another.
     */
    WORKER_STEP_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(DEFAULT_STEP_CONCURRENCY),
    /**
     * Postgres connections of the process. A job holds one only while a statement runs (most of
     * its time is the LLM call), so a few serve dozens of jobs; every connection also pays its own
     * statement planning, so more cost Postgres CPU. At least 2:
     * the reconciler holds one (its advisory lock's transaction) while its work uses another.
     */
    DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(1_000).default(10),
    /** Connecting to Postgres or waiting for a pooled connection, before the job's try fails (and is retried). */
    DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    /**
     * The longest statement (a compaction's view of a never-compacted session reads seconds of
     * rows): Postgres cancels it, the client gives up 2 s later on a frozen server; the try fails
     * and the queue retries it. 0 disables both.
     */
    DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
    /** Health and metrics port; 0 picks a free one (several workers on one host). */
    PORT: z.coerce.number().int().min(0).max(65_535).default(0),
    HOST: z.string().min(1).default('127.0.0.1'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Same setting as the API's: summary messages are counted with the encoding the API uses. */
    TOKENIZER_ENCODING: z.enum(['auto', 'o200k_base', 'cl100k_base']).default('auto'),
    /** Tries per job before the workflow's last-attempt handling (fallback or failure). */
    JOB_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(5),
    /** First retry delay, doubled per try, jittered; a provider's Retry-After wins when longer. */
    JOB_BACKOFF_MS: positiveMs.default(1_000),
    /** A killed worker's job is taken over this long after its last lock renewal. */
    LOCK_DURATION_MS: positiveMs.default(30_000),
    /** Reconciler pass interval (jittered ±20 %). */
    RECONCILE_INTERVAL_MS: positiveMs.default(10_000),
    /** A running compaction silent this long (no step progress) with no live job is re-driven. */
    STEP_TIMEOUT_MS: positiveMs.default(300_000),
    /** SIGTERM: stop taking jobs, wait this long for running ones, then cancel them (they resume elsewhere). */
    SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
  })
  .and(llmEnvSchema);

export type WorkerEnv = z.infer<typeof WorkerEnvSchema>;

export class EnvError extends Error {
  override readonly name = 'EnvError';
}

/** Parses the environment or throws one readable error naming every bad variable. */
export function parseWorkerEnv(source: Record<string, string | undefined> = process.env): WorkerEnv {
  const result = WorkerEnvSchema.safeParse(source);
  if (!result.success) throw new EnvError(`invalid environment:\n${z.prettifyError(result.error)}`);
  return result.data;
}
