import type { CompactionRow, Db, SessionRow, TokenCounter } from '@compactor/db';
import type { CompactionLimits, CompactionRequest, SessionEventMap } from '@compactor/workflow';
import type { SessionEventSource } from '@compactor/queue';

/**
 * Starting durable work: each call writes its rows and outbox entry in Postgres, then enqueues
 * (best effort: the reconciler enqueues what a Redis outage left behind). And telling the
 * session's event streams that it was deleted.
 */
export interface SessionJobs {
  /**
   * A compaction for the session, or the active one (`created: false`). Past `limits`, workflow's
   * ActiveCompactionLimitError (nothing written).
   */
  startCompaction(
    session: SessionRow,
    request: CompactionRequest,
    limits?: CompactionLimits,
  ): Promise<{ compaction: CompactionRow; created: boolean }>;
  /** A prune-only job for the session. */
  startPrune(session: SessionRow, reason: 'turn' | 'manual'): Promise<{ jobId: string }>;
  /**
   * The session's prepared summary built on its latest completed compaction `baseCompactionId`
   * (policy `prepare`), or `null` when one was requested on that boundary already.
   */
  startPrepare(
    session: SessionRow,
    baseCompactionId: string | null,
    headroomTokens: number,
  ): Promise<{ jobId: string } | null>;
  /** Publishes `session.deleted` (best effort): its event streams, on every replica, send it and end. */
  sessionDeleted(session: SessionRow): Promise<void>;
  /** Publishes `prune.skipped` (best effort): a finished turn's prune waited for the prompt cache. */
  pruneSkipped(session: SessionRow, data: SessionEventMap['prune.skipped']): Promise<void>;
  /**
   * Publishes `task.started` / `task.finished` (best effort) for the task calls a write recorded
   * (docs/TASKS.md); absent: task changes are recorded but not announced.
   */
  tasksChanged?(
    session: SessionRow,
    events: Array<{ type: 'task.started' | 'task.finished'; callId: string; tool: string; status: string }>,
  ): Promise<void>;
  /** Publishes `compaction.reverted` (best effort), once the revert committed. */
  compactionReverted(
    session: SessionRow,
    compaction: CompactionRow,
    data: SessionEventMap['compaction.reverted'],
  ): Promise<void>;
}

/** Everything a session operation needs, passed explicitly (no module singletons). */
export interface SessionResources {
  db: Db;
  /** The exact token counter for a session's model (its encoding). */
  tokenizerFor(modelId: string): TokenCounter;
  clock: () => Date;
  jobs: SessionJobs;
  /** Session events from every process (Redis pub/sub), for a session's event stream. */
  events: SessionEventSource;
}

/** Where an operation writes its warnings (the request's logger). Never message text. */
export interface OperationLog {
  warn(fields: Record<string, unknown>, message: string): void;
}
