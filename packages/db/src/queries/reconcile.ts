import { sql, type SQL } from 'drizzle-orm';
import type { Db, DbOrTx } from '../client';

/** An active compaction the reconciler should make sure a job exists for. */
export interface CompactionToRedrive {
  id: string;
  sessionPk: number;
  /** Its queue priority is its rank in the tenant's backlog again. */
  tenantId: string;
  status: 'pending' | 'running';
  attempts: number;
}

/**
 * The reconciler's one query: active compactions whose job may be gone. `pending` rows older
 * than `pendingGraceMs` (the API enqueues right after commit) and `running` rows whose attempt
 * has been silent (no fenced write, see `progress_at`) for longer than `stepTimeoutMs`: a
 * worker that died, or a job that vanished with Redis. The caller checks the queue before
 * re-enqueueing, so a row whose job is merely waiting costs one lookup. Reads the partial
 * index `compactions_active_progress_idx` only: cost grows with active compactions, not history.
 */
export async function findCompactionsToRedrive(
  db: DbOrTx,
  { pendingGraceMs, stepTimeoutMs, limit }: { pendingGraceMs: number; stepTimeoutMs: number; limit: number },
): Promise<CompactionToRedrive[]> {
  const result = await db.execute<{
    id: string;
    session_pk: string;
    tenant_id: string;
    status: string;
    attempts: number;
  }>(sql`
    select id, session_pk, tenant_id, status, attempts from compactions
    where (status = 'pending' and requested_at < now() - make_interval(secs => ${pendingGraceMs / 1000}))
       or (status = 'running' and progress_at < now() - make_interval(secs => ${stepTimeoutMs / 1000}))
    order by coalesce(progress_at, requested_at)
    limit ${limit}
  `);
  return result.rows.map((r) => ({
    id: r.id,
    sessionPk: Number(r.session_pk),
    tenantId: r.tenant_id,
    status: r.status as CompactionToRedrive['status'],
    attempts: r.attempts,
  }));
}

/** Where a sweep of pending drafts stands: the last one it checked (`requested_at` at full precision). */
export interface DraftSweepPosition {
  requestedAt: string;
  sessionPk: number;
}

/** A pending draft (policy `prepare`) the reconciler should make sure a job exists for. */
export interface DraftToCheck {
  sessionPk: number;
  /** The draft's id, which is its prepare job's id. */
  id: string;
  position: DraftSweepPosition;
}

/** What one pass of the draft sweep asks for. */
export interface DraftSweepRequest {
  olderThanMs: number;
  limit: number;
  /** The last draft a previous pass checked; `null` (or absent) from the oldest. */
  after?: DraftSweepPosition | null;
}

/**
 * The sweep's statement: pending drafts past the threshold after `after`, in the partial
 * index's order (`requested_at`, `session_pk`), so the plan is a range scan that stops at
 * `limit`. Exported for its plan test.
 */
export function pendingDraftsSweepSql({ olderThanMs, limit, after = null }: DraftSweepRequest): SQL {
  return sql`
    select session_pk, id, requested_at::text as position_at from prepared_summaries
    where status = 'pending' and requested_at < now() - make_interval(secs => ${olderThanMs / 1000})
      and (requested_at, session_pk) > (coalesce(${after?.requestedAt ?? null}::timestamptz, '-infinity'),
                                        coalesce(${after?.sessionPk ?? null}::bigint, 0))
    order by requested_at, session_pk
    limit ${limit}`;
}

/**
 * Pending drafts requested longer than `olderThanMs` ago, oldest first, after `after` (the last
 * one a previous pass checked; `null` from the start): the caller looks each one's job up and
 * retires the draft when no live job is behind it. Resuming after the last one checked keeps
 * old drafts whose jobs still wait (a backlog behind the compactions) from filling every pass.
 * Reads the partial index `prepared_summaries_pending_idx` only: cost grows with pending drafts
 * (at most one a session), not with the ready and given-up ones every preparing session keeps
 * (docs/plans/prepared-drafts-sweep-100k.txt).
 */
export async function findPendingDraftsToCheck(
  db: DbOrTx,
  request: DraftSweepRequest,
): Promise<DraftToCheck[]> {
  const result = await db.execute<{ session_pk: string; id: string; position_at: string }>(
    pendingDraftsSweepSql(request),
  );
  return result.rows.map((r) => ({
    sessionPk: Number(r.session_pk),
    id: r.id,
    position: { requestedAt: r.position_at, sessionPk: Number(r.session_pk) },
  }));
}

/**
 * Ends an active compaction the reconciler gave up on (it crashed its workers on every attempt,
 * say): `failed` with `code`, only if no attempt claimed it since `attempts` was read.
 */
export async function abandonCompaction(
  db: DbOrTx,
  id: string,
  { attempts, code, message, at }: { attempts: number; code: string; message: string; at: Date },
): Promise<boolean> {
  const result = await db.execute(sql`
    update compactions
    set status = 'failed', step = null, error_code = ${code}, error_message = ${message}, finished_at = ${at}
    where id = ${id} and status in ('pending', 'running') and attempts = ${attempts}
  `);
  return (result.rowCount ?? 0) > 0;
}

/** Runs `work` only if no other process holds the reconciler's lock; `null` when one does. */
export async function withReconcilerLock<T>(db: Db, work: () => Promise<T>): Promise<T | null> {
  return db.transaction(async (tx) => {
    const result = await tx.execute<{ locked: boolean }>(
      sql`select pg_try_advisory_xact_lock(hashtext('compactor:reconciler')) as locked`,
    );
    if (!result.rows[0]?.locked) return null;
    return work();
  });
}
