import {
  compactionSince,
  countActiveCompactionsOfTenant,
  deleteDeferredCompaction,
  findSessionByPk,
  lockTenantCompactionRequests,
  oldestDeferredCompaction,
  type CompactionRequestRow,
  type DbOrTx,
  type SessionRow,
} from '@compactor/db';
import { compactionRequestRow } from './request-compaction';

/** What one try to start a tenant's longest-waiting deferred compaction came to. */
export type DeferredStart<Inserted> =
  /** Nothing of the tenant waits. */
  | { outcome: 'none' }
  /** The tenant is still at the cap its entry was deferred under: it keeps waiting. */
  | { outcome: 'full' }
  /** Its session has had a compaction since (or has one active): the entry was removed. */
  | { outcome: 'dropped' }
  | { outcome: 'started'; session: SessionRow; inserted: Inserted };

/**
 * Starts the tenant's longest-waiting deferred auto compaction if the tenant has room under the
 * cap it was deferred under. One transaction holding the tenant's request lock (the one a
 * request past the cap held when it deferred): the count, the session's check, the caller's
 * `insert` (the compaction and its outbox entry) and the entry's removal commit together, so a
 * crash loses no entry and no entry starts twice. An entry whose session has had a compaction
 * requested since it was deferred, or has one active, is removed instead: that one covers it.
 */
export async function startOldestDeferredCompaction<Inserted>(
  db: DbOrTx,
  tenantId: string,
  insert: (tx: DbOrTx, row: CompactionRequestRow) => Promise<Inserted | null>,
): Promise<DeferredStart<Inserted>> {
  return db.transaction(async (tx): Promise<DeferredStart<Inserted>> => {
    await lockTenantCompactionRequests(tx, tenantId);
    const entry = await oldestDeferredCompaction(tx, tenantId);
    if (!entry) return { outcome: 'none' };
    const active = await countActiveCompactionsOfTenant(tx, tenantId, entry.maxActive);
    if (active >= entry.maxActive) return { outcome: 'full' };
    const session = await findSessionByPk(tx, entry.sessionPk);
    const covered = !session || (await compactionSince(tx, entry.sessionPk, entry.deferredAt));
    // A request that skips the cap (a worker's follow-up) may have won the session meanwhile.
    const inserted = covered
      ? null
      : await insert(tx, compactionRequestRow(session, { reason: entry.reason }));
    await deleteDeferredCompaction(tx, entry.sessionPk);
    return session && inserted !== null ? { outcome: 'started', session, inserted } : { outcome: 'dropped' };
  });
}
