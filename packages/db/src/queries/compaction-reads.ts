import { and, desc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { CompactionRow } from '../mappers';
import { compactions, sessions } from '../schema';

/**
 * A compaction with its session's public id, only when the session belongs to `tenantId`
 * (another tenant's compaction reads as missing). One indexed join.
 */
export async function findTenantCompaction(
  db: DbOrTx,
  tenantId: string,
  id: string,
): Promise<{ compaction: CompactionRow; sessionId: string } | null> {
  const [row] = await db
    .select({ compaction: compactions, sessionId: sessions.id })
    .from(compactions)
    .innerJoin(sessions, eq(sessions.pk, compactions.sessionPk))
    .where(and(eq(compactions.id, id), eq(sessions.tenantId, tenantId)));
  return row ?? null;
}

/**
 * One page of a session's compaction history, newest first, by keyset on `(requested_at, id)`:
 * with `beforeId`, the compactions requested before that one (ties broken by id, compared at
 * the database's microsecond precision, so no row is skipped or repeated). `null` when
 * `beforeId` is not a compaction of this session.
 */
export async function listCompactionsPage(
  db: DbOrTx,
  sessionPk: number,
  { limit, beforeId }: { limit: number; beforeId?: string | undefined },
): Promise<CompactionRow[] | null> {
  if (beforeId !== undefined) {
    const [cursor] = await db
      .select({ id: compactions.id })
      .from(compactions)
      .where(and(eq(compactions.id, beforeId), eq(compactions.sessionPk, sessionPk)));
    if (!cursor) return null;
  }
  return db
    .select()
    .from(compactions)
    .where(
      and(
        eq(compactions.sessionPk, sessionPk),
        beforeId === undefined
          ? undefined
          : sql`(${compactions.requestedAt}, ${compactions.id}) < (
              select c.requested_at, c.id from compactions c
              where c.id = ${beforeId} and c.session_pk = ${sessionPk})`,
      ),
    )
    .orderBy(desc(compactions.requestedAt), desc(compactions.id))
    .limit(limit);
}
