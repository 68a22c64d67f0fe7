import {
  announceSessionDeleted,
  boundedQueues,
  startCompaction,
  startPrune,
  type DispatchDeps,
} from '@compactor/queue';
import type { ApiJobs } from './resources';

/** {@link ApiJobs} over the queue package's dispatch, with its dependencies bound once. */
export function createApiJobs(deps: DispatchDeps, options: { enqueueTimeoutMs?: number } = {}): ApiJobs {
  const bound: DispatchDeps = { ...deps, queues: boundedQueues(deps.queues, options.enqueueTimeoutMs) };
  return {
    startCompaction: (session, request, limits) => startCompaction(bound, session, request, limits),
    startPrune: (session, reason) => startPrune(bound, session, reason),
    sessionDeleted: (session) => announceSessionDeleted(bound, session),
  };
}
