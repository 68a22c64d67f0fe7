import type { Authenticator } from './http/auth';
import type { CompactionRow, Db, SessionRow, TokenCounter } from '@compactor/db';
import type { CompactionLimits, CompactionRequest } from '@compactor/workflow';
import type { SessionEventSource } from '@compactor/queue';

/** Something that answers PING: the readiness probe's view of Redis. */
export interface RedisPing {
  ping(): Promise<string>;
}

/**
 * Starting durable work: each call writes its rows and outbox entry in Postgres, then enqueues
 * (best effort: the reconciler enqueues what a Redis outage left behind). And telling the
 * session's event streams that it was deleted.
 */
export interface ApiJobs {
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
  /** Publishes `session.deleted` (best effort): its event streams, on every replica, send it and end. */
  sessionDeleted(session: SessionRow): Promise<void>;
}

/** Everything the HTTP layer needs, passed explicitly (no module singletons). */
export interface ApiResources {
  db: Db;
  redis: RedisPing;
  auth: Authenticator;
  /** The exact token counter for a session's model (its encoding). */
  tokenizerFor(modelId: string): TokenCounter;
  clock: () => Date;
  jobs: ApiJobs;
  /** Session events from every process (Redis pub/sub), for `GET /v1/sessions/:id/events`. */
  events: SessionEventSource;
}
