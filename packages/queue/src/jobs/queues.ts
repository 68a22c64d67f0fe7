import { Queue, type ConnectionOptions } from 'bullmq';
import {
  DEFAULT_JOB_POLICY,
  DEFAULT_QUEUE_PREFIX,
  JOB_NAMES,
  jobOptions,
  parseJobPayload,
  type EnqueueOptions,
  type JobName,
  type JobPayload,
  type JobPolicy,
} from './catalog';
import { REDIS_COMMAND_TIMEOUT_MS } from '../redis/connect';
import { settleWithin } from '../shutdown/bounded-close';

/** Where the queues live: a Redis connection and the key prefix (hash-tagged by default). */
export interface QueueConfig {
  connection: ConnectionOptions;
  prefix?: string;
  policy?: JobPolicy;
  /**
   * A queue's connection failed (Redis down, reset, refused): the caller logs it. Without a
   * listener BullMQ prints the error and its stack to stderr, outside the process's JSON logs.
   */
  onError?: (queue: JobName, error: Error) => void;
}

/** One BullMQ queue per job name of the catalog, with typed, validated enqueue. */
export interface JobQueues {
  readonly prefix: string;
  readonly policy: JobPolicy;
  queue(name: JobName): Queue;
  /** Enqueues `payload` under `jobId`; a job with that id already in the queue makes this a no-op. */
  enqueue<N extends JobName>(
    name: N,
    jobId: string,
    payload: JobPayload<N>,
    options?: EnqueueOptions,
  ): Promise<void>;
  close(): Promise<void>;
}

export function createJobQueues(config: QueueConfig): JobQueues {
  const prefix = config.prefix ?? DEFAULT_QUEUE_PREFIX;
  const policy = config.policy ?? DEFAULT_JOB_POLICY;
  const onError = config.onError ?? (() => undefined);
  const queues = new Map(
    JOB_NAMES.map((name) => {
      const queue = new Queue(name, { connection: config.connection, prefix });
      queue.on('error', (error: Error) => onError(name, error));
      return [name, queue] as const;
    }),
  );
  const queue = (name: JobName) => {
    const q = queues.get(name);
    if (!q) throw new Error(`no queue for job ${name}`);
    return q;
  };
  return {
    prefix,
    policy,
    queue,
    async enqueue(name, jobId, payload, options) {
      const data = parseJobPayload(name, payload);
      await queue(name).add(name, data, jobOptions(policy, name, jobId, data, options));
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}

/**
 * Jobs in each queue by state, for metrics (the backlog: waiting + prioritized + delayed;
 * compactions wait as `prioritized`, in their tenant's backlog order), or
 * `null` when Redis does not answer within `timeoutMs`: a scrape reports the rest of its
 * metrics instead of failing or hanging with Redis.
 */
export async function queueCounts(
  queues: JobQueues,
  timeoutMs = REDIS_COMMAND_TIMEOUT_MS,
): Promise<Record<JobName, Record<string, number>> | null> {
  let counts: Record<JobName, Record<string, number>> | null = null;
  const counting = Promise.all(
    JOB_NAMES.map(
      async (name) =>
        [
          name,
          await queues.queue(name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
        ] as const,
    ),
  ).then((entries) => {
    counts = Object.fromEntries(entries) as Record<JobName, Record<string, number>>;
  });
  await settleWithin(counting, timeoutMs);
  return counts;
}
