import { Queue, type ConnectionOptions } from 'bullmq';
import {
  DEFAULT_JOB_POLICY,
  DEFAULT_QUEUE_PREFIX,
  JOB_NAMES,
  jobOptions,
  parseJobPayload,
  type JobName,
  type JobPayload,
  type JobPolicy,
} from './catalog';

/** Where the queues live: a Redis connection and the key prefix (hash-tagged by default). */
export interface QueueConfig {
  connection: ConnectionOptions;
  prefix?: string;
  policy?: JobPolicy;
}

/** One BullMQ queue per job name of the catalog, with typed, validated enqueue. */
export interface JobQueues {
  readonly prefix: string;
  readonly policy: JobPolicy;
  queue(name: JobName): Queue;
  /** Enqueues `payload` under `jobId`; a job with that id already in the queue makes this a no-op. */
  enqueue<N extends JobName>(name: N, jobId: string, payload: JobPayload<N>): Promise<void>;
  close(): Promise<void>;
}

export function createJobQueues(config: QueueConfig): JobQueues {
  const prefix = config.prefix ?? DEFAULT_QUEUE_PREFIX;
  const policy = config.policy ?? DEFAULT_JOB_POLICY;
  const queues = new Map(
    JOB_NAMES.map((name) => [name, new Queue(name, { connection: config.connection, prefix })] as const),
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
    async enqueue(name, jobId, payload) {
      const data = parseJobPayload(name, payload);
      await queue(name).add(name, data, jobOptions(policy, name, jobId, data));
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}

/** Jobs in each queue by state, for metrics (the autoscaling signal: waiting + delayed). */
export async function queueCounts(queues: JobQueues): Promise<Record<JobName, Record<string, number>>> {
  const entries = await Promise.all(
    JOB_NAMES.map(
      async (name) =>
        [name, await queues.queue(name).getJobCounts('waiting', 'active', 'delayed', 'failed')] as const,
    ),
  );
  return Object.fromEntries(entries) as Record<JobName, Record<string, number>>;
}
