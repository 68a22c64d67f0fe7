import {
  insertCompactionWithOutbox,
  insertOutboxEntries,
  markOutboxDispatched,
  newId,
  oldestDeferredCompaction,
  requestPreparedSummary,
  safeErrorMessage,
  type CompactionRow,
  type Db,
  type OutboxRow,
  type SessionRow,
} from '@compactor/db';
import {
  SESSION_DELETED_EVENT,
  announceEvent,
  requestCompactionWith,
  startOldestDeferredCompaction,
  type CompactionLimits,
  type CompactionRequest,
  type SessionEventMap,
  type SessionEventPublisher,
  type WorkflowLog,
  type WorkflowResources,
} from '@compactor/workflow';
import { parseJobPayload, type JobName } from './catalog';
import type { JobQueues } from './queues';
import type { WorkerListener } from '../worker/worker-events';

/** What starting work needs: the database (system of record), the queues, events, a log. */
export interface DispatchDeps {
  db: Db;
  queues: JobQueues;
  events: SessionEventPublisher;
  log: WorkflowLog;
  clock: () => Date;
}

/** The job a compaction request's outbox entry names. */
const COMPACT_JOB: JobName = 'compact';

/**
 * Requests a compaction: the row and its outbox entry are written in one statement, then the
 * job is enqueued. Enqueueing is best effort — if Redis is down or the process dies right after
 * commit, the reconciler enqueues it from the outbox; nothing is lost. A request while one is
 * active returns the active one (`created: false`) and writes nothing. Past `limits` (the
 * tenant's active compactions) it throws workflow's ActiveCompactionLimitError, having written
 * nothing but, with `deferAtCap`, the entry that waits for room. The job's priority is the
 * compaction's rank in its tenant's backlog (the outbox entry's): a tenant's first compaction
 * runs before another tenant's hundredth, with or without a cap.
 */
export async function startCompaction(
  deps: DispatchDeps,
  session: SessionRow,
  request: CompactionRequest,
  limits: CompactionLimits = {},
): Promise<{ compaction: CompactionRow; created: boolean }> {
  const result = await requestCompactionWith(
    deps.db,
    session,
    request,
    (db, row) => insertCompactionWithOutbox(db, row, COMPACT_JOB),
    limits,
  );
  if ('existing' in result) return { compaction: result.existing, created: false };
  await announceAndDispatch(deps, session, result.inserted);
  return { compaction: result.inserted.compaction, created: true };
}

/**
 * What the workers' compactions need to request their follow-ups (workflow `followUps`): the
 * job the completing transaction writes the follow-up's outbox entry for, and, once that
 * committed, its `compaction.requested` event and its job, as {@link startCompaction} sends
 * them. Not held to a tenant cap: the follow-up takes the place its completed compaction left.
 */
export function followUpsOf(deps: DispatchDeps): NonNullable<WorkflowResources['followUps']> {
  return {
    jobName: COMPACT_JOB,
    started: (session, requested) => announceAndDispatch(deps, session, requested),
  };
}

/** How many deferred compactions one call starts at most (the rest wait for the next end or pass). */
const DEFERRED_STARTS_PER_CALL = 50;

/**
 * Starts the tenant's deferred auto compactions, longest waiting first, while the tenant has
 * room under the cap each was deferred under (workflow's `startOldestDeferredCompaction`: the
 * row, its outbox entry and the entry's removal commit together), then enqueues each as
 * {@link startCompaction} does. Called when one of the tenant's compactions ends, and by the
 * reconciler for every tenant with waiting entries. Returns the compactions it started.
 */
export async function startDeferredCompactions(
  deps: DispatchDeps,
  tenantId: string,
  { max = DEFERRED_STARTS_PER_CALL }: { max?: number } = {},
): Promise<CompactionRow[]> {
  // Most ends find nothing waiting: one indexed read, without the tenant's lock.
  if (!(await oldestDeferredCompaction(deps.db, tenantId))) return [];
  const started: CompactionRow[] = [];
  for (let tries = 0; tries < max; tries++) {
    const result = await startOldestDeferredCompaction(deps.db, tenantId, (db, row) =>
      insertCompactionWithOutbox(db, row, COMPACT_JOB),
    );
    if (result.outcome === 'none' || result.outcome === 'full') break;
    if (result.outcome === 'dropped') continue;
    await announceAndDispatch(deps, result.session, result.inserted);
    started.push(result.inserted.compaction);
  }
  return started;
}

/**
 * What the worker runs when one of a tenant's compactions ended: {@link startDeferredCompactions}
 * for its tenant. Best effort: a failure is logged, and the reconciler's next pass starts them.
 */
export function startDeferredWhenEnded(deps: DispatchDeps): WorkerListener<'compaction.ended'> {
  return async ({ compaction: ended }) => {
    try {
      await startDeferredCompactions(deps, ended.tenantId);
    } catch (error) {
      deps.log.warn(
        { compactionId: ended.id, tenantId: ended.tenantId, err: safeErrorMessage(error) },
        'deferred compactions could not be started; the reconciler will',
      );
    }
  };
}

/** After a compaction's row committed: `compaction.requested`, then its job (best effort). */
async function announceAndDispatch(
  deps: DispatchDeps,
  session: SessionRow,
  { compaction, outbox }: { compaction: CompactionRow; outbox: OutboxRow },
): Promise<void> {
  // Announced before the enqueue, so no worker's `compaction.started` can overtake it.
  await announceEvent(
    deps.events,
    deps.clock(),
    { session, compactionId: compaction.id },
    'compaction.requested',
    { reason: compaction.reason, strategy: compaction.strategy },
  );
  await dispatchOutbox(deps, [outbox]);
}

/**
 * Tells the session's event streams, on every API replica, that the session is gone: they send
 * `session.deleted` and end. Call it once the delete committed. Best effort, as every event
 * (Redis away means the streams' subscriptions are away too).
 */
export async function announceSessionDeleted(
  deps: Pick<DispatchDeps, 'events' | 'clock'>,
  session: Pick<SessionRow, 'pk' | 'id'>,
): Promise<void> {
  await announceEvent(deps.events, deps.clock(), { session, compactionId: null }, SESSION_DELETED_EVENT, {});
}

/**
 * Tells the session's event streams that a client reverted one of its compactions (the view is
 * the one before it again). Call it once the revert committed; best effort, as every event.
 */
export async function announceCompactionReverted(
  deps: Pick<DispatchDeps, 'events' | 'clock'>,
  session: Pick<SessionRow, 'pk' | 'id'>,
  compaction: Pick<CompactionRow, 'id'>,
  data: SessionEventMap['compaction.reverted'],
): Promise<void> {
  await announceEvent(
    deps.events,
    deps.clock(),
    { session, compactionId: compaction.id },
    'compaction.reverted',
    data,
  );
}

/**
 * Tells the session's event streams that a finished turn's prune waited for the prompt cache
 * (`prune.skipped`). Best effort, as every event.
 */
export async function announcePruneSkipped(
  deps: Pick<DispatchDeps, 'events' | 'clock'>,
  session: Pick<SessionRow, 'pk' | 'id'>,
  data: SessionEventMap['prune.skipped'],
): Promise<void> {
  await announceEvent(deps.events, deps.clock(), { session, compactionId: null }, 'prune.skipped', data);
}

/**
 * Requests a prune-only job for a session. Prune jobs of one session collapse while one is still
 * waiting: the job id is per request, BullMQ's de-duplication id per session.
 *
 * A manual prune (`POST /prune`, answered 202) goes through the outbox, so a crash or a Redis
 * outage after the answer cannot lose it. A turn's prune is enqueued directly, with no rows
 * written: it is an optimization that every later turn's prune and every compaction's prune step
 * redo over the whole view, so a lost one costs nothing but a later prune, while the outbox
 * would cost two statements on a quarter of all appends.
 */
export async function startPrune(
  deps: DispatchDeps,
  session: SessionRow,
  reason: 'turn' | 'manual',
): Promise<{ jobId: string }> {
  const jobId = newId('prn');
  const payload = { sessionPk: session.pk, reason };
  if (reason === 'turn') {
    await deps.queues.enqueue('prune', jobId, payload);
    return { jobId };
  }
  const outbox = await insertOutboxEntries(deps.db, [{ jobName: 'prune', jobId, payload }]);
  await dispatchOutbox(deps, outbox);
  return { jobId };
}

/**
 * Requests the session's prepared summary (policy `prepare`) built on its latest completed
 * compaction `baseCompactionId`, `headroomTokens` below the trigger (core
 * `prepareHeadroomTokens`): the request row and its outbox entry in one statement, then the
 * job (best effort, as a compaction's). Once per crossing: `null` when one was requested on that
 * boundary already, nothing written. Losing one costs only the LLM call the trigger makes then.
 */
export async function startPrepare(
  deps: DispatchDeps,
  session: SessionRow,
  baseCompactionId: string | null,
  headroomTokens: number,
): Promise<{ jobId: string } | null> {
  const entry = await requestPreparedSummary(deps.db, {
    sessionPk: session.pk,
    id: newId('prp'),
    baseCompactionId,
    headroomTokens,
    jobName: 'prepare',
  });
  if (!entry) return null;
  await dispatchOutbox(deps, [entry]);
  return { jobId: entry.jobId };
}

/**
 * Enqueues outbox entries and marks them dispatched. Failures are logged and left for the
 * reconciler: the caller's work is already committed. Returns how many were enqueued.
 */
export async function dispatchOutbox(
  deps: Pick<DispatchDeps, 'db' | 'queues' | 'log' | 'clock'>,
  entries: OutboxRow[],
): Promise<number> {
  const done: number[] = [];
  for (const entry of entries) {
    try {
      const name = entry.jobName as JobName;
      await deps.queues.enqueue(name, entry.jobId, parseJobPayload(name, entry.payload), {
        priority: entry.priority,
      });
      done.push(entry.pk);
    } catch (error) {
      deps.log.warn(
        { jobName: entry.jobName, jobId: entry.jobId, err: safeErrorMessage(error) },
        'enqueue failed; the reconciler will retry it',
      );
    }
  }
  try {
    await markOutboxDispatched(deps.db, done, deps.clock());
  } catch (error) {
    // Left undispatched, the entries are enqueued again by the reconciler: a no-op by job id.
    deps.log.warn({ err: safeErrorMessage(error) }, 'could not mark outbox entries dispatched');
  }
  return done.length;
}
