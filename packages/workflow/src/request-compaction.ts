import {
  resolveStoredPolicy,
  type CompactionReason,
  type CompactionStrategy,
  type PolicyInput,
} from '@compactor/core';
import {
  findActiveCompaction,
  findCompactionByIdempotencyKey,
  insertCompaction,
  newId,
  type CompactionRequestRow,
  type CompactionRow,
  type DbOrTx,
  type SessionRow,
} from '@compactor/db';

/** A manual, auto or overflow request; all but `reason` is optional (`force` defaults on for overflow). */
export interface CompactionRequest {
  reason: CompactionReason;
  /** Defaults to the session policy's strategy. */
  strategy?: CompactionStrategy | undefined;
  /** Per-request keep-recent override (Opal's manual `keep_recent`). */
  keepRecentTokens?: number | null | undefined;
  /** Custom summary instructions (`/compact focus on …`); the policy's apply otherwise. */
  instructions?: string | null | undefined;
  /** Keep only the last messages if no clean cut exists (emergency compaction; implied by overflow). */
  force?: boolean | undefined;
  idempotencyKey?: string | null | undefined;
}

/**
 * Records a compaction request. At most one compaction per session is active (the database's
 * partial unique index decides, so racing requests cannot both start one): a request while one
 * is pending or running returns that one with `created: false`, as does a repeated
 * `Idempotency-Key`. The caller enqueues the job for a created row.
 */
export async function requestCompaction(
  db: DbOrTx,
  session: SessionRow,
  request: CompactionRequest,
): Promise<{ compaction: CompactionRow; created: boolean }> {
  const result = await requestCompactionWith(db, session, request, (row) => insertCompaction(db, row));
  return 'inserted' in result
    ? { compaction: result.inserted, created: true }
    : { compaction: result.existing, created: false };
}

/**
 * {@link requestCompaction} with the caller's insert (one that also writes the job's outbox
 * entry, say): what `insert` returned for a new row, or the compaction the request collided with.
 */
export async function requestCompactionWith<Inserted>(
  db: DbOrTx,
  session: SessionRow,
  request: CompactionRequest,
  insert: (row: CompactionRequestRow) => Promise<Inserted | null>,
): Promise<{ inserted: Inserted } | { existing: CompactionRow }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await insert(compactionRequestRow(session, request));
    if (inserted) return { inserted };
    if (request.idempotencyKey) {
      const repeated = await findCompactionByIdempotencyKey(db, session.pk, request.idempotencyKey);
      if (repeated) return { existing: repeated };
    }
    const active = await findActiveCompaction(db, session.pk);
    if (active) return { existing: active };
    // The active one finished between our insert and our lookup: try again.
  }
  throw new Error(`could not start or find a compaction for session ${session.id}`);
}

/** The row a request inserts (a new id each call): the policy's strategy unless the request names one. */
function compactionRequestRow(session: SessionRow, request: CompactionRequest): CompactionRequestRow {
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  return {
    id: newId('cmp'),
    sessionPk: session.pk,
    reason: request.reason,
    strategy: request.strategy ?? policy.strategy,
    keepRecentTokens: request.keepRecentTokens ?? null,
    instructions: request.instructions ?? null,
    force: request.force ?? request.reason === 'overflow',
    idempotencyKey: request.idempotencyKey ?? null,
  };
}
