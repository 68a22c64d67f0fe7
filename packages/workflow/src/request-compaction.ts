import { type CompactionReason, type CompactionStrategy, type PolicyInput } from '@compactor/core';
import { resolveStoredPolicy } from './stored-policy';
import {
  bindCompactionJoinKey,
  ConflictError,
  countActiveCompactionsOfTenant,
  deferCompaction,
  findActiveCompaction,
  findCompaction,
  findCompactionByIdempotencyKey,
  findCompactionJoinKey,
  insertCompaction,
  lockTenantCompactionRequests,
  newId,
  type CompactionRequestRow,
  type CompactionRow,
  type DbOrTx,
  type SessionRow,
} from '@compactor/db';
import { ActiveCompactionLimitError } from './active-compaction-limit-error';

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

/** What may stop a compaction request from starting one. */
export interface CompactionLimits {
  /**
   * Compactions the session's tenant may have pending or running at once: past it, a request
   * with nothing to join (no active compaction of its session, no earlier request with its
   * `Idempotency-Key`) is an {@link ActiveCompactionLimitError}. 0 or absent: no limit.
   */
  maxActivePerTenant?: number | undefined;
  /**
   * Past the cap, record the request to be started when the tenant has room (db
   * `deferCompaction`, in the transaction that counted) instead of only refusing it: the error
   * then says `deferred`. The auto trigger's choice: an append never fails for it.
   */
  deferAtCap?: boolean | undefined;
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
  limits: CompactionLimits = {},
): Promise<{ compaction: CompactionRow; created: boolean }> {
  const result = await requestCompactionWith(
    db,
    session,
    request,
    (tx, row) => insertCompaction(tx, row),
    limits,
  );
  return 'inserted' in result
    ? { compaction: result.inserted, created: true }
    : { compaction: result.existing, created: false };
}

/** The tenant is at its cap: nothing was inserted. */
const AT_CAP = Symbol('at the cap');

/**
 * {@link requestCompaction} with the caller's insert (one that also writes the job's outbox
 * entry, say), run on the handle it is given: what `insert` returned for a new row, or the
 * compaction the request collided with. Under a tenant cap the insert runs in a transaction
 * holding the tenant's lock, after a count of its active compactions that stops at the cap;
 * with `deferAtCap`, a request past the cap is recorded there to wait for room.
 */
export async function requestCompactionWith<Inserted>(
  db: DbOrTx,
  session: SessionRow,
  request: CompactionRequest,
  insert: (db: DbOrTx, row: CompactionRequestRow) => Promise<Inserted | null>,
  limits: CompactionLimits = {},
): Promise<{ inserted: Inserted } | { existing: CompactionRow }> {
  const cap = limits.maxActivePerTenant ?? 0;
  let deferred = false;
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = compactionRequestRow(session, request);
    const inserted =
      cap > 0
        ? await db.transaction(async (tx) => {
            await lockTenantCompactionRequests(tx, session.tenantId);
            const active = await countActiveCompactionsOfTenant(tx, session.tenantId, cap);
            if (active < cap) return insert(tx, row);
            if (limits.deferAtCap) {
              deferred = await deferCompaction(tx, {
                sessionPk: session.pk,
                tenantId: session.tenantId,
                reason: request.reason,
                maxActive: cap,
              });
            }
            return AT_CAP;
          })
        : await insert(db, row);
    if (inserted !== null && inserted !== AT_CAP) return { inserted };
    // Joining what is already there adds no active compaction: it is never refused.
    if (request.idempotencyKey) {
      const repeated = await findCompactionByIdempotencyKey(db, session.pk, request.idempotencyKey);
      if (repeated) return { existing: repeated };
    }
    const active = await findActiveCompaction(db, session.pk);
    if (active) return { existing: active };
    if (inserted === AT_CAP) throw new ActiveCompactionLimitError(session.tenantId, cap, deferred);
    // The active one finished between our insert and our lookup: try again.
  }
  throw new Error(`could not start or find a compaction for session ${session.id}`);
}

/** What a keyed request asked for, as a created row or a join binding records it. */
interface AskedFor {
  strategy: CompactionStrategy;
  keepRecentTokens: number | null;
  instructions: string | null;
}

/**
 * A request under an `Idempotency-Key`, bound to its first body whatever that request got: the
 * compaction it created (the key is on that row) or the active one it joined (the key is bound
 * to it in `compaction_join_keys`). The key again with the same body returns that compaction
 * (`created: false`, even after it finished); with another body it is a ConflictError, and
 * nothing is written. An omitted strategy is the policy's, as the row records it. `start`
 * records a request that has no binding yet (dispatch's `startCompaction`: the row, its outbox
 * entry and its event).
 */
export async function requestCompactionOnce(
  db: DbOrTx,
  session: SessionRow,
  request: CompactionRequest & { idempotencyKey: string },
  start: (request: CompactionRequest) => Promise<{ compaction: CompactionRow; created: boolean }>,
): Promise<{ compaction: CompactionRow; created: boolean }> {
  const key = request.idempotencyKey;
  const asked: AskedFor = {
    strategy: request.strategy ?? resolveStoredPolicy(session.policy as PolicyInput).strategy,
    keepRecentTokens: request.keepRecentTokens ?? null,
    instructions: request.instructions ?? null,
  };
  const same = (other: AskedFor) =>
    other.strategy === asked.strategy &&
    other.keepRecentTokens === asked.keepRecentTokens &&
    other.instructions === asked.instructions;
  const sameCreated = (row: CompactionRow) => row.reason === request.reason && same(row);
  const conflict = () =>
    new ConflictError('this Idempotency-Key was used for a different request on this session', {
      idempotencyKey: key,
    });
  const joinedBy = async (binding: { compactionId: string }) => {
    const compaction = await findCompaction(db, binding.compactionId);
    if (!compaction) throw conflict();
    return { compaction, created: false };
  };

  const created = await findCompactionByIdempotencyKey(db, session.pk, key);
  if (created) {
    if (!sameCreated(created)) throw conflict();
    return { compaction: created, created: false };
  }
  const joined = await findCompactionJoinKey(db, session.pk, key);
  if (joined) {
    if (!same(joined)) throw conflict();
    return joinedBy(joined);
  }

  const result = await start({ ...request, strategy: asked.strategy });
  if (result.created) return result;
  if (result.compaction.idempotencyKey === key) {
    // A concurrent request with this key created it: the same rules apply to its row.
    if (!sameCreated(result.compaction)) throw conflict();
    return result;
  }
  const binding = await bindCompactionJoinKey(db, {
    sessionPk: session.pk,
    idempotencyKey: key,
    compactionId: result.compaction.id,
    ...asked,
  });
  if (!same(binding)) throw conflict();
  // A concurrent request with this key and body bound it first (to the same compaction, unless
  // that one finished in between): the key answers with what it is bound to.
  return binding.compactionId === result.compaction.id ? result : joinedBy(binding);
}

/** The row a request inserts (a new id each call): the policy's strategy unless the request names one. */
export function compactionRequestRow(session: SessionRow, request: CompactionRequest): CompactionRequestRow {
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
