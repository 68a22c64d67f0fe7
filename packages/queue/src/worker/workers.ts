import { Worker, type ConnectionOptions, type Job } from 'bullmq';
import { retryDelayMs } from '../jobs/backoff';
import { BACKOFF_TYPE, DEFAULT_JOB_POLICY, DEFAULT_QUEUE_PREFIX, type JobPolicy } from '../jobs/catalog';
import type { WorkflowResources } from '@compactor/workflow';
import type { JobName } from '../jobs/catalog';
import { draftWriterAlive } from './draft-writer';
import { compactProcessor, prepareProcessor, pruneProcessor } from './processors';
import { emitWorkerEvent, type JobOutcome, type WorkerListeners } from './worker-events';
import { WorkGate } from './work-gate';

/**
 * A few jobs at a time do their database and CPU work: enough to keep the event loop and a
 * couple of Postgres connections busy while one waits on a round trip; 3–6 measured alike.
 */
export const DEFAULT_STEP_CONCURRENCY = 4;

export interface WorkerOptions {
  connection: ConnectionOptions;
  prefix?: string;
  policy?: JobPolicy;
  /** Jobs run at once by this process (compactions are LLM-bound: high is fine). */
  concurrency: number;
  /**
   * Of those, how many do their database and CPU work at once, first come first served (a
   * compaction waiting on the LLM holds no place). Default {@link DEFAULT_STEP_CONCURRENCY}.
   */
  stepConcurrency?: number;
  /**
   * How long a job's lock lasts without renewal (renewed every half of it). A worker that dies
   * holding a job releases it this long after; another worker then takes over with a new fence.
   */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for (default: the lock duration). */
  stalledIntervalMs?: number;
  random?: () => number;
  /**
   * What the workers report: `job.ended` and `prune.ended` (metrics), and `compaction.ended` (the
   * worker starts the tenant's deferred compactions there: `startDeferredWhenEnded`).
   */
  on?: Pick<WorkerListeners, 'job.ended' | 'compaction.ended' | 'prune.ended'>;
}

/** How a job's lock is held and a dead worker's job found, the same for every queue. */
export interface JobLockSettings {
  lockDuration: number;
  stalledInterval: number;
  maxStalledCount: number;
}

/**
 * The one source of every queue's lock and stall settings: a compaction, a prune and a prepare
 * job whose worker died are all taken over by the same stall check, one lock duration after their
 * last renewal. A compaction waiting for a draft waits on that same lock (draft-writer.ts).
 */
export function jobLockSettings(
  options: Pick<WorkerOptions, 'lockDurationMs' | 'stalledIntervalMs'>,
): JobLockSettings {
  const lockDuration = options.lockDurationMs ?? 30_000;
  return {
    lockDuration,
    stalledInterval: options.stalledIntervalMs ?? lockDuration,
    // A job that stalls again and again is failed by BullMQ; the reconciler re-drives its row.
    maxStalledCount: 2,
  };
}

/** The worker's BullMQ workers, one per queue of the catalog. */
export interface RunningWorkers {
  readonly workers: Worker[];
  /** Jobs running right now, across queues (those waiting for a step place included). */
  active(): number;
  /** Jobs waiting for a place to do their database and CPU work. */
  queued(): number;
  /** Stops taking jobs and waits for running ones, at most `timeoutMs`; then cancels them. */
  close(timeoutMs: number): Promise<{ drained: boolean }>;
}

/**
 * Starts one BullMQ worker per job of the catalog. A job whose lock cannot be renewed (the
 * process stalled, Redis went away) is cancelled through its signal: another worker takes it
 * over with a newer fence, and this one stops instead of finishing work that would be refused.
 */
export function startWorkers(resources: WorkflowResources, options: WorkerOptions): RunningWorkers {
  const prefix = options.prefix ?? DEFAULT_QUEUE_PREFIX;
  const policy = options.policy ?? DEFAULT_JOB_POLICY;
  const random = options.random ?? Math.random;
  const common = {
    connection: options.connection,
    prefix,
    ...jobLockSettings(options),
    settings: {
      backoffStrategy: (attemptsMade: number, type?: string, error?: Error) =>
        type === BACKOFF_TYPE ? retryDelayMs(attemptsMade, policy.backoffBaseMs, error, random) : 0,
    },
  };
  const gate = new WorkGate(options.stepConcurrency ?? DEFAULT_STEP_CONCURRENCY);
  let running = 0;
  /** Counts the running job, and reports how its try ended (`outcomeOf` its result, `error` when it threw). */
  const counted =
    <R>(
      queue: JobName,
      processor: (job: Job, token?: string, signal?: AbortSignal) => Promise<R>,
      outcomeOf: (result: R) => JobOutcome,
    ) =>
    async (job: Job, token?: string, signal?: AbortSignal): Promise<R> => {
      running++;
      const started = performance.now();
      let outcome: JobOutcome = 'error';
      try {
        const result = await processor(job, token, signal);
        outcome = outcomeOf(result);
        return result;
      } finally {
        running--;
        void emitWorkerEvent(options.on, 'job.ended', {
          queue,
          outcome,
          durationMs: performance.now() - started,
        });
      }
    };
  // A prepare job's outcome is the draft's (ready, skipped, failed, superseded): every one completes.
  const prepare = new Worker(
    'prepare',
    counted('prepare', prepareProcessor(resources, gate), () => 'completed'),
    {
      ...common,
      concurrency: Math.max(1, Math.ceil(options.concurrency / 4)),
    },
  );
  // A compaction waiting for a draft stops waiting when the draft's job has lost its lock.
  const compactResources = { ...resources, draftWriterAlive: draftWriterAlive(prepare) };
  const compact = new Worker(
    'compact',
    counted('compact', compactProcessor(compactResources, gate, options.on), (result) => result.status),
    {
      ...common,
      concurrency: options.concurrency,
    },
  );
  // A prune job's outcome says what it did, not how it ended: every one that returns completed.
  const prune = new Worker(
    'prune',
    counted('prune', pruneProcessor(resources, gate, options.on), () => 'completed'),
    {
      ...common,
      concurrency: Math.max(1, Math.ceil(options.concurrency / 4)),
    },
  );
  const workers = [compact, prune, prepare];
  for (const worker of workers) {
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) worker.cancelJob(id, 'lock lost');
      resources.log.warn({ queue: worker.name, jobIds }, 'job lock lost; cancelled');
    });
    worker.on('failed', (job: Job | undefined, error: Error) => {
      resources.log.warn(
        { queue: worker.name, jobId: job?.id, attemptsMade: job?.attemptsMade, err: error.message },
        'job try failed',
      );
    });
    worker.on('error', (error: Error) => {
      resources.log.warn({ queue: worker.name, err: error.message }, 'worker error');
    });
  }
  return {
    workers,
    active: () => running,
    queued: () => gate.queued,
    async close(timeoutMs) {
      const drain = Promise.all(workers.map((w) => w.close())).then(() => true);
      const timeout = new Promise<false>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
      const drained = await Promise.race([drain, timeout]);
      if (!drained) {
        // Cancelled jobs keep their rows; the next worker resumes them (fenced, from the draft).
        for (const w of workers) w.cancelAllJobs('shutdown');
        await Promise.race([
          Promise.all(workers.map((w) => w.close(true))),
          new Promise((resolve) => setTimeout(resolve, 2_000).unref()),
        ]);
      }
      return { drained };
    },
  };
}
