import { startCompaction, startPrune, type DispatchDeps, type JobQueues } from '@compactor/queue';
import type { ApiJobs } from './resources';

/**
 * How long a request waits for an enqueue. The rows and the outbox entry are committed before
 * it; a job that could not be enqueued in time is enqueued by the reconciler, so a slow or
 * unreachable Redis never holds (or fails) an append.
 */
export const ENQUEUE_TIMEOUT_MS = 2000;

/**
 * The queues with every enqueue bounded by `timeoutMs`: BullMQ waits for Redis to come back
 * rather than failing while it connects, which would hang the HTTP request.
 */
export function boundedQueues(queues: JobQueues, timeoutMs = ENQUEUE_TIMEOUT_MS): JobQueues {
  return {
    prefix: queues.prefix,
    policy: queues.policy,
    queue: (name) => queues.queue(name),
    close: () => queues.close(),
    async enqueue(name, jobId, payload) {
      let timer: NodeJS.Timeout | undefined;
      const enqueued = queues.enqueue(name, jobId, payload);
      enqueued.catch(() => undefined); // a late failure after the timeout is the reconciler's
      try {
        await Promise.race([
          enqueued,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`enqueue did not finish within ${timeoutMs} ms`)),
              timeoutMs,
            );
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** {@link ApiJobs} over the queue package's dispatch, with its dependencies bound once. */
export function createApiJobs(deps: DispatchDeps, options: { enqueueTimeoutMs?: number } = {}): ApiJobs {
  const bound: DispatchDeps = { ...deps, queues: boundedQueues(deps.queues, options.enqueueTimeoutMs) };
  return {
    startCompaction: (session, request) => startCompaction(bound, session, request),
    startPrune: (session, reason) => startPrune(bound, session, reason),
  };
}
