import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../client';
import { executePrepared } from '../prepared';

/**
 * The deepest rank a compaction's queue priority tells apart (see `insertCompactionWithOutbox`):
 * counting a tenant's backlog reads one index entry per active compaction, so past this depth
 * its compactions share the last rank (still behind every smaller backlog). Far below BullMQ's
 * highest priority (2^21 - 1).
 */
export const TENANT_BACKLOG_RANK_LIMIT = 1_000;

/**
 * Takes the tenant's compaction-request lock until the transaction ends. Under it, the count of
 * the tenant's active compactions and the insert that follows are one step: two requests cannot
 * both see room for one more and both insert. Requests of other tenants never wait for it.
 */
export async function lockTenantCompactionRequests(tx: Tx, tenantId: string): Promise<void> {
  await executePrepared(
    tx,
    sql`select pg_advisory_xact_lock(hashtextextended(${`compactor:compaction-requests:${tenantId}`}, 0))`,
  );
}

/**
 * How many of the tenant's compactions are pending or running, counted up to `upTo` (the cap):
 * the partial index `compactions_tenant_active_idx` holds only active compactions, and the scan
 * stops at the cap, so the cost stays that of `upTo` entries however large the tenant is.
 */
export async function countActiveCompactionsOfTenant(
  db: DbOrTx,
  tenantId: string,
  upTo: number,
): Promise<number> {
  const { rows } = await executePrepared<{ active: number }>(
    db,
    activeCompactionsOfTenantSql(tenantId, upTo),
  );
  return rows[0]?.active ?? 0;
}

/** The statement of {@link countActiveCompactionsOfTenant} (its plan is tested). */
export function activeCompactionsOfTenantSql(tenantId: string, upTo: number): SQL {
  return sql`select count(*)::int as active from (
               select 1 from compactions c
               where c.tenant_id = ${tenantId} and c.status in ('pending', 'running')
               limit ${upTo}
             ) a`;
}

/**
 * The queue priority of an active compaction enqueued again (the reconciler's re-drive): behind
 * its tenant's other active compactions, as a new request of the tenant would be.
 */
export async function tenantBacklogRank(db: DbOrTx, tenantId: string): Promise<number> {
  return Math.max(1, await countActiveCompactionsOfTenant(db, tenantId, TENANT_BACKLOG_RANK_LIMIT));
}
