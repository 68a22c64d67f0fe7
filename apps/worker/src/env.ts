import { llmEnvSchema } from '@compactor/llm';
import { DEFAULT_STEP_CONCURRENCY, sharedEnvFields } from '@compactor/queue';
import { z } from 'zod';

const positiveMs = z.coerce.number().int().positive();

/** The worker's whole configuration. Only this file reads process.env. */
export const WorkerEnvSchema = z
  .object({
    /**
     * Pool: a job holds a connection only while a statement runs (most of its time is the LLM
     * call), so a few serve dozens of jobs, and each pays its own statement planning; at least 2,
     * as the reconciler holds one (its advisory lock's transaction) while its work uses another.
     * Statements: a compaction's view of a never-compacted session reads seconds of rows, so a
     * minute; a statement past it fails the try, and the queue retries it.
     */
    ...sharedEnvFields({ poolMin: 2, poolDefault: 10, statementTimeoutMs: 60_000 }),
    /** Jobs run at once by this process; compactions wait on the LLM, so dozens are fine. */
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16),
    /**
     * Of those jobs, how many do their database and CPU work at once, in arrival order; one
     * waiting on the LLM holds no place. A few keep the process busy; many make a burst of
     * ready jobs all wait for one another.
     */
    WORKER_STEP_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(DEFAULT_STEP_CONCURRENCY),
    /** Health and metrics port; 0 picks a free one (several workers on one host). */
    PORT: z.coerce.number().int().min(0).max(65_535).default(0),
    HOST: z.string().min(1).default('127.0.0.1'),
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
