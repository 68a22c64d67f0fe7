import type { JobQueues } from './queues';

/**
 * How long a dispatch waits for an enqueue. The rows and the outbox entry are committed before
 * it; a job that could not be enqueued in time is enqueued by the reconciler, so a slow or
 * unreachable Redis never holds (or fails) the request or job that started the work.
 */
export const ENQUEUE_TIMEOUT_MS = 2000;

/**
 * The queues with every enqueue bounded by `timeoutMs`: BullMQ waits for Redis to come back
 * rather than failing while it connects, which would hang the caller. A late enqueue is left to
 * finish (or fail) on its own: the outbox entry stays undispatched for the reconciler.
 */
export function boundedQueues(queues: JobQueues, timeoutMs = ENQUEUE_TIMEOUT_MS): JobQueues {
  return {
    prefix: queues.prefix,
    policy: queues.policy,
    queue: (name) => queues.queue(name),
    close: () => queues.close(),
    async enqueue(name, jobId, payload, options) {
      let timer: NodeJS.Timeout | undefined;
      const enqueued = queues.enqueue(name, jobId, payload, options);
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
