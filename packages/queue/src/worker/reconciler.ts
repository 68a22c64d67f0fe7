import {
  abandonCompaction,
  findCompactionsToRedrive,
  listUndispatchedOutbox,
  pruneDispatchedOutbox,
  safeErrorMessage,
  tenantBacklogRank,
  tenantsWithDeferredCompactions,
  withReconcilerLock,
} from '@compactor/db';
import { dispatchOutbox, startDeferredCompactions, type DispatchDeps } from '../jobs/dispatch';
import { LIVE_JOB_STATES, retireDraftsWithoutJob, type DraftSweepCursor } from './reconciler-drafts';
import { emitWorkerEvent, type ReconcileReport, type WorkerListeners } from './worker-events';

export type { ReconcileReport } from './worker-events';
export type { DraftSweepCursor } from './reconciler-drafts';

/** The reconciler starts deferred compactions the way the API does, events included. */
export type ReconcilerDeps = DispatchDeps;

export interface ReconcilerOptions {
  /**
   * A `running` compaction silent (no fenced write) for longer than this is re-driven, and a
   * `pending` draft requested longer ago than this with no live job is retired.
   */
  stepTimeoutMs: number;
  /** Outbox entries and `pending` rows younger than this are left to the API's own enqueue. */
  graceMs?: number;
  /** Claims beyond this end the compaction `failed` (it crashed every worker that took it). */
  maxClaims?: number;
  batch?: number;
  /** Where the sweep of pending drafts resumes; the loop keeps one across its passes. */
  draftCursor?: DraftSweepCursor;
}

/**
 * One reconciler pass: Postgres is the system of record, Redis only a work list. It enqueues
 * outbox entries a crash left undispatched, re-enqueues active compactions whose job is
 * gone (Redis lost its data) or finished while the row is still active (a worker was killed
 * mid-try, a job stalled out), each at its rank in its tenant's backlog, retires pending drafts
 * whose job is gone (reconciler-drafts.ts), and starts deferred auto compactions whose tenants
 * have room. One process at a time runs a pass (advisory lock);
 * enqueueing is idempotent anyway (job id = compaction id).
 */
/** Removes a finished job; false when BullMQ refused (the job is locked, Redis failed). */
async function removed(job: { remove(): Promise<void> }): Promise<boolean> {
  try {
    await job.remove();
    return true;
  } catch {
    return false;
  }
}

export async function reconcileOnce(
  deps: ReconcilerDeps,
  options: ReconcilerOptions,
): Promise<ReconcileReport> {
  const graceMs = options.graceMs ?? 5_000;
  const maxClaims = options.maxClaims ?? deps.queues.policy.attempts * 3;
  const batch = options.batch ?? 500;
  const report = await withReconcilerLock(deps.db, async () => {
    const outbox = await listUndispatchedOutbox(deps.db, { olderThanMs: graceMs, limit: batch });
    const dispatched = await dispatchOutbox(deps, outbox);
    await pruneDispatchedOutbox(deps.db, { olderThanMs: 24 * 3600_000 });

    let redriven = 0;
    let abandoned = 0;
    const candidates = await findCompactionsToRedrive(deps.db, {
      pendingGraceMs: graceMs,
      stepTimeoutMs: options.stepTimeoutMs,
      limit: batch,
    });
    const queue = deps.queues.queue('compact');
    for (const row of candidates) {
      const job = await queue.getJob(row.id);
      const state = job ? await job.getState() : 'missing';
      if (LIVE_JOB_STATES.has(state)) continue;
      if (row.attempts >= maxClaims) {
        const ended = await abandonCompaction(deps.db, row.id, {
          attempts: row.attempts,
          code: 'attempts_exhausted',
          message: `gave up after ${row.attempts} claims without finishing`,
          at: deps.clock(),
        });
        if (ended) abandoned++;
        continue;
      }
      // A finished job with this id would make the new one a no-op: remove it first. One that
      // cannot be removed (locked, Redis failing) is left for the next pass, not counted.
      if (job && !(await removed(job))) {
        deps.log.warn(
          { compactionId: row.id, jobState: state },
          'could not remove its finished job; next pass',
        );
        continue;
      }
      const priority = await tenantBacklogRank(deps.db, row.tenantId);
      await deps.queues.enqueue('compact', row.id, { compactionId: row.id }, { priority });
      deps.log.info({ compactionId: row.id, status: row.status, jobState: state }, 're-enqueued compaction');
      redriven++;
    }

    const draftsRetired = await retireDraftsWithoutJob(deps, {
      olderThanMs: options.stepTimeoutMs,
      limit: batch,
      ...(options.draftCursor ? { cursor: options.draftCursor } : {}),
    });

    // Normally a compaction's end starts its tenant's next deferred one; this covers a worker
    // that died in between, and compactions this pass abandoned.
    let deferredStarted = 0;
    for (const tenantId of await tenantsWithDeferredCompactions(deps.db, batch)) {
      deferredStarted += (await startDeferredCompactions(deps, tenantId)).length;
    }
    return { dispatched, redriven, abandoned, draftsRetired, deferredStarted, skippedLocked: false };
  });
  return (
    report ?? {
      dispatched: 0,
      redriven: 0,
      abandoned: 0,
      draftsRetired: 0,
      deferredStarted: 0,
      skippedLocked: true,
    }
  );
}

/**
 * Runs {@link reconcileOnce} every `intervalMs` (±20 % jitter, so several workers do not pass
 * in lockstep) until stopped. A failed pass is logged and retried at the next tick.
 */
export function startReconciler(
  deps: ReconcilerDeps,
  options: ReconcilerOptions & {
    intervalMs: number;
    random?: () => number;
    /** `reconciler.passed`: each pass's report (metrics). */
    on?: Pick<WorkerListeners, 'reconciler.passed'>;
  },
): { stop(): Promise<void> } {
  const random = options.random ?? Math.random;
  const passOptions = { ...options, draftCursor: options.draftCursor ?? { after: null } };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const schedule = () => {
    if (stopped) return;
    const delay = options.intervalMs * (0.8 + 0.4 * random());
    timer = setTimeout(() => {
      current = reconcileOnce(deps, passOptions)
        .then((report) => {
          void emitWorkerEvent(options.on, 'reconciler.passed', { report });
          const acted =
            report.dispatched ||
            report.redriven ||
            report.abandoned ||
            report.draftsRetired ||
            report.deferredStarted;
          if (acted) {
            deps.log.info({ ...report }, 'reconciler pass');
          }
        })
        .catch((error: unknown) => deps.log.warn({ err: safeErrorMessage(error) }, 'reconciler pass failed'))
        .finally(schedule);
    }, delay);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
