import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { deferredCompactions } from '../schema';

/** An auto compaction waiting for its tenant to have room. */
export type DeferredCompactionRow = typeof deferredCompactions.$inferSelect;

/**
 * Records that the session's auto compaction waits for room under the tenant's cap `maxActive`.
 * Run it in the transaction that found the tenant at its cap, holding the tenant's request lock.
 * An entry already waiting keeps its place (its `deferred_at`) and takes the newer cap. Nothing
 * is recorded while the session has an active compaction: that one covers what this asked for.
 * Returns whether an entry now waits.
 */
export async function deferCompaction(
  db: DbOrTx,
  entry: { sessionPk: number; tenantId: string; reason: DeferredCompactionRow['reason']; maxActive: number },
): Promise<boolean> {
  const { rows } = await executePrepared(
    db,
    sql`insert into deferred_compactions (session_pk, tenant_id, reason, max_active)
        select ${entry.sessionPk}, ${entry.tenantId}, ${entry.reason}, ${entry.maxActive}::int
        where not exists (
          select 1 from compactions c
          where c.session_pk = ${entry.sessionPk} and c.status in ('pending', 'running')
        )
        on conflict (session_pk) do update set max_active = excluded.max_active
        returning session_pk`,
  );
  return rows.length > 0;
}

/** The tenant's longest-waiting entry, or `null` (the index `deferred_compactions_tenant_idx`). */
export async function oldestDeferredCompaction(
  db: DbOrTx,
  tenantId: string,
): Promise<DeferredCompactionRow | null> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`select session_pk, tenant_id, reason, max_active, deferred_at from deferred_compactions
        where tenant_id = ${tenantId} order by deferred_at limit 1`,
  );
  const row = rows[0];
  if (!row) return null;
  return {
    sessionPk: Number(row.session_pk),
    tenantId: String(row.tenant_id),
    reason: row.reason as DeferredCompactionRow['reason'],
    maxActive: Number(row.max_active),
    deferredAt: new Date(row.deferred_at as string | Date),
  };
}

/** The session's waiting entry, or `null`. */
export async function findDeferredCompaction(
  db: DbOrTx,
  sessionPk: number,
): Promise<DeferredCompactionRow | null> {
  const [row] = await db
    .select()
    .from(deferredCompactions)
    .where(sql`${deferredCompactions.sessionPk} = ${sessionPk}`);
  return row ?? null;
}

/** Removes the session's entry (it started, or it is no longer needed). */
export async function deleteDeferredCompaction(db: DbOrTx, sessionPk: number): Promise<void> {
  await db.delete(deferredCompactions).where(sql`${deferredCompactions.sessionPk} = ${sessionPk}`);
}

/**
 * Whether the session has a compaction active now or requested at or after `since`: either one
 * covers what an entry deferred at `since` asked for, so the entry is dropped, not started.
 */
export async function compactionSince(db: DbOrTx, sessionPk: number, since: Date): Promise<boolean> {
  const { rows } = await executePrepared<{ found: boolean }>(
    db,
    sql`select exists (
          select 1 from compactions c
          where c.session_pk = ${sessionPk}
            and (c.status in ('pending', 'running') or c.requested_at >= ${since.toISOString()}::timestamptz)
        ) as found`,
  );
  return rows[0]?.found === true;
}

/** Tenants with waiting entries, those waiting longest first (the reconciler's sweep). */
export async function tenantsWithDeferredCompactions(db: DbOrTx, limit: number): Promise<string[]> {
  const { rows } = await executePrepared<{ tenant_id: string }>(
    db,
    sql`select tenant_id from deferred_compactions
        group by tenant_id order by min(deferred_at) limit ${limit}`,
  );
  return rows.map((r) => r.tenant_id);
}
