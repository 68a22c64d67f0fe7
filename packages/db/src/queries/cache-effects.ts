import { and, eq, sql } from 'drizzle-orm';
import type { CacheEffect } from '@compactor/core';
import type { DbOrTx } from '../client';
import type { CompactionRow } from '../mappers';
import { compactions, pruneRuns } from '../schema';

/** The cache columns of a `compactions` or `prune_runs` row. */
function cacheColumns(effect: CacheEffect) {
  return {
    cacheInvalidatedTokens: effect.invalidatedTokens,
    cacheRewriteCostUsd: effect.rewriteCostUsd,
    cacheSavingPerTurnUsd: effect.savingPerTurnUsd,
    cacheBreakEvenTurns: effect.breakEvenTurns,
  };
}

/** A row's cache effect, or null where none was recorded. */
export function cacheEffectOf(row: {
  cacheInvalidatedTokens: number | null;
  cacheRewriteCostUsd: number | null;
  cacheSavingPerTurnUsd: number | null;
  cacheBreakEvenTurns: number | null;
}): CacheEffect | null {
  if (row.cacheInvalidatedTokens === null) return null;
  return {
    invalidatedTokens: row.cacheInvalidatedTokens,
    rewriteCostUsd: row.cacheRewriteCostUsd,
    savingPerTurnUsd: row.cacheSavingPerTurnUsd,
    breakEvenTurns: row.cacheBreakEvenTurns,
  };
}

/**
 * Records a completed compaction's cache effect, measured once its new size was. Null when the
 * row is no longer completed (a revert came first): it keeps what it recorded, nothing.
 */
export async function recordCompactionCache(
  db: DbOrTx,
  compactionId: string,
  effect: CacheEffect,
): Promise<CompactionRow | null> {
  const [row] = await db
    .update(compactions)
    .set(cacheColumns(effect))
    .where(and(eq(compactions.id, compactionId), eq(compactions.status, 'completed')))
    .returning();
  return row ?? null;
}

/** What a prune job did, as {@link insertPruneRun} records it. */
export interface PruneRunRecord {
  jobId: string;
  sessionPk: number;
  trigger: 'turn' | 'manual';
  parts: number;
  tokens: number;
  tokensBefore: number;
  tokensAfter: number;
  cache: CacheEffect;
  ranAt: Date;
}

export type PruneRunRow = typeof pruneRuns.$inferSelect;

/**
 * Records a prune job that ran. A retried job keeps the row its first run wrote (that run made
 * the marks; a retry finds them made): returns null then.
 */
export async function insertPruneRun(db: DbOrTx, run: PruneRunRecord): Promise<PruneRunRow | null> {
  const { cache, ...rest } = run;
  const [row] = await db
    .insert(pruneRuns)
    .values({
      ...rest,
      ...cacheColumns(cache),
      tenantId: sql`(select s.tenant_id from sessions s where s.pk = ${run.sessionPk})`,
    })
    .onConflictDoNothing()
    .returning();
  return row ?? null;
}

/** A session's prune runs, oldest first (tests, history). */
export async function listPruneRuns(db: DbOrTx, sessionPk: number): Promise<PruneRunRow[]> {
  return db.select().from(pruneRuns).where(eq(pruneRuns.sessionPk, sessionPk)).orderBy(pruneRuns.ranAt);
}
