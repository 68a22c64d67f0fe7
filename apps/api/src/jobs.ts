import {
  announceCompactionReverted,
  announcePruneSkipped,
  announceSessionDeleted,
  boundedQueues,
  startCompaction,
  startPrepare,
  startPrune,
  type DispatchDeps,
} from '@compactor/queue';
import { announceEvent } from '@compactor/workflow';
import type { ApiJobs } from './resources';

/** {@link ApiJobs} over the queue package's dispatch, with its dependencies bound once. */
export function createApiJobs(deps: DispatchDeps, options: { enqueueTimeoutMs?: number } = {}): ApiJobs {
  const bound: DispatchDeps = { ...deps, queues: boundedQueues(deps.queues, options.enqueueTimeoutMs) };
  return {
    startCompaction: (session, request, limits) => startCompaction(bound, session, request, limits),
    startPrune: (session, reason) => startPrune(bound, session, reason),
    startPrepare: (session, baseCompactionId, headroomTokens) =>
      startPrepare(bound, session, baseCompactionId, headroomTokens),
    sessionDeleted: (session) => announceSessionDeleted(bound, session),
    pruneSkipped: (session, data) => announcePruneSkipped(bound, session, data),
    compactionReverted: (session, compaction, data) =>
      announceCompactionReverted(bound, session, compaction, data),
    tasksChanged: async (session, events) => {
      for (const { type, callId, tool, status } of events)
        await announceEvent(bound.events, bound.clock(), { session, compactionId: null }, type, {
          callId,
          tool,
          status: status as 'pending' | 'running' | 'completed' | 'error',
        });
    },
  };
}
