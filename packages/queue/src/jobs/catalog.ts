import type { JobsOptions } from 'bullmq';
import { z } from 'zod';

/**
 * The job catalog: every job the workers run, its payload schema and its queue options. A
 * payload carries ids only; the row in Postgres says what to do (it is the system of record).
 */
export const JOB_PAYLOADS = {
  /** Run (or resume) one compaction; the job id is the compaction id, so enqueueing dedupes. */
  compact: z.object({ compactionId: z.string().min(1) }),
  /** Prune old tool outputs of one session, outside a compaction (OpenCode's prune after a turn). */
  prune: z.object({ sessionPk: z.number().int().positive(), reason: z.enum(['turn', 'manual']) }),
  /**
   * Write a session's prepared summary (policy `prepare`) without changing its context; the job
   * id is the request's (`draftId`), which fences its writes.
   */
  prepare: z.object({
    sessionPk: z.number().int().positive(),
    draftId: z.string().min(1),
    // How far below its trigger the session was when the draft was requested (core
    // `draftKeepRecentTokens`); absent in a request queued before it was recorded: 0.
    headroomTokens: z.number().int().nonnegative().optional(),
  }),
} as const;

export type JobName = keyof typeof JOB_PAYLOADS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOB_PAYLOADS)[N]>;
export const JOB_NAMES = Object.keys(JOB_PAYLOADS) as JobName[];

/** Parses a payload of job `name`; throws a readable error for anything else. */
export function parseJobPayload<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  return JOB_PAYLOADS[name].parse(data) as JobPayload<N>;
}

/**
 * One hash-tagged prefix for every key, so a queue's keys land in one Redis Cluster slot
 * (BullMQ's Lua scripts touch several keys at once).
 */
export const DEFAULT_QUEUE_PREFIX = '{compactor}';

/** The name of the backoff strategy the workers register (exponential, jittered, Retry-After aware). */
export const BACKOFF_TYPE = 'compactor';

/** Options every job of the catalog is enqueued with. */
export interface JobPolicy {
  /** Tries before the workflow's last-attempt handling ends the compaction (or falls back). */
  attempts: number;
  /** First retry delay; doubled each attempt, jittered. */
  backoffBaseMs: number;
  /** Finished jobs kept for inspection (count and age), so Redis does not grow without bound. */
  keepCompleted: { count: number; ageSeconds: number };
  keepFailed: { count: number; ageSeconds: number };
}

export const DEFAULT_JOB_POLICY: JobPolicy = {
  attempts: 5,
  backoffBaseMs: 1_000,
  keepCompleted: { count: 1_000, ageSeconds: 24 * 3600 },
  keepFailed: { count: 5_000, ageSeconds: 7 * 24 * 3600 },
};

/**
 * Jobs that must not run side by side for one session share a de-duplication id: a prune
 * requested while one waits is dropped, while one runs it is kept (the latest) to run after it.
 * A compaction needs none: its job id is the compaction id, and one is active per session.
 */
export function deduplicationId<N extends JobName>(name: N, payload: JobPayload<N>): string | null {
  if (name === 'prune') return `prune:${(payload as JobPayload<'prune'>).sessionPk}`;
  return null;
}

/**
 * Where a job of each kind waits in BullMQ. A compaction carries a priority (its rank in its
 * tenant's backlog), so it waits in the queue's `prioritized` sorted set; a prune job carries
 * none and waits in the `wait` list. The autoscaler reads these keys (infra/k8s/keda.yaml).
 */
export const WAITS_IN: Readonly<Record<JobName, 'wait' | 'prioritized'>> = {
  compact: 'prioritized',
  prune: 'wait',
  prepare: 'wait',
};

/** What an enqueue may add to the catalog's options. */
export interface EnqueueOptions {
  /**
   * BullMQ's priority: lower runs first, and 0 (none) before any prioritized job. A compaction
   * carries its rank in its tenant's backlog (the outbox entry's `priority`).
   * @defaultValue 0
   */
  priority?: number | undefined;
}

/** BullMQ options for a job of the catalog. */
export function jobOptions<N extends JobName>(
  policy: JobPolicy,
  name: N,
  jobId: string,
  payload: JobPayload<N>,
  options: EnqueueOptions = {},
): JobsOptions {
  const dedupe = deduplicationId(name, payload);
  return {
    jobId,
    ...(options.priority ? { priority: options.priority } : {}),
    ...(dedupe ? { deduplication: { id: dedupe, keepLastIfActive: true } } : {}),
    attempts: policy.attempts,
    backoff: { type: BACKOFF_TYPE, delay: policy.backoffBaseMs },
    removeOnComplete: { count: policy.keepCompleted.count, age: policy.keepCompleted.ageSeconds },
    removeOnFail: { count: policy.keepFailed.count, age: policy.keepFailed.ageSeconds },
  };
}
