import type { CompactionRow } from '@compactor/db';
import type { PruneSessionOutcome } from '@compactor/workflow';
import type { JobName } from '../jobs/catalog';

/** What a compact job returns (kept on the finished job for the queue dashboard). */
export interface CompactJobResult {
  status: 'completed' | 'skipped' | 'failed' | 'inactive' | 'stale';
  tokensBefore?: number | null;
  tokensAfter?: number | null;
}

/** What one pass did. */
export interface ReconcileReport {
  dispatched: number;
  redriven: number;
  abandoned: number;
  /** Pending drafts retired (`failed`, `job_lost`) because no live job would ever write them. */
  draftsRetired: number;
  /** Deferred auto compactions started (their tenants had room and no compaction's end started them). */
  deferredStarted: number;
  skippedLocked: boolean;
}

/**
 * How a job try ended, as the metrics label it: a compact job's status, `completed` for a prune
 * job, `error` when the try threw (BullMQ retries it or fails the job).
 */
export type JobOutcome = CompactJobResult['status'] | 'error';

/** What a worker process reports as it runs: each event and its payload. */
export interface WorkerEventMap {
  /** A job try ended (metrics): its queue, how it ended and how long it took. */
  'job.ended': { queue: JobName; outcome: JobOutcome; durationMs: number };
  /**
   * A compaction ended for good (completed, skipped, failed; not a retried try nor a stale one),
   * before its job completes: the worker starts the tenant's deferred compactions here. Awaited;
   * must not throw.
   */
  'compaction.ended': { compaction: CompactionRow };
  /** A prune job ran (not skipped): what it marked and its prompt-cache effect (metrics). */
  'prune.ended': { outcome: PruneSessionOutcome };
  /** A reconciler pass finished (a pass that failed is logged and reports nothing). */
  'reconciler.passed': { report: ReconcileReport };
}
export type WorkerEventName = keyof WorkerEventMap;

/** Listens to one worker event; the job waits for what it returns only on `compaction.ended`. */
export type WorkerListener<E extends WorkerEventName> = (payload: WorkerEventMap[E]) => void | Promise<void>;

/** At most one listener per event; an event without one is not reported. */
export type WorkerListeners = { readonly [E in WorkerEventName]?: WorkerListener<E> };

/** Calls `event`'s listener, if any, with its payload; returns what the listener returns. */
export function emitWorkerEvent<E extends WorkerEventName>(
  listeners: WorkerListeners | undefined,
  event: E,
  payload: WorkerEventMap[E],
): void | Promise<void> {
  const listener: WorkerListener<E> | undefined = listeners?.[event];
  return listener?.(payload);
}
