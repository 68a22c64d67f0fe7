import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { viewBoundsCte } from './view-bounds';

/**
 * Records that the message at `seq` changed, on the session's active compaction when it covers
 * that message or has not fixed its range yet (`compactions.changed_seq`, the lowest such seq).
 * The update takes the compaction's row lock, which orders it with the summarize step's start
 * (which clears the mark and then reads the view: it waits for this transaction, and sees the
 * change) and with the completion (which refuses to move the boundary past a marked message).
 * The session's prepared summary is marked the same way, in the same statement: a draft whose
 * summarised messages changed no longer serves (core `preparedDraftUsable`).
 */
export async function markCoveredChange(db: DbOrTx, sessionPk: number, seq: number): Promise<void> {
  await executePrepared(db, markCoveredChangeSql(sessionPk, seq));
}

/** {@link markCoveredChange}'s statement, for a caller that pipelines it. */
export function markCoveredChangeSql(sessionPk: number, seq: number): SQL {
  return sql`with draft as (
      update prepared_summaries set changed_seq = least(coalesce(changed_seq, ${seq}::int), ${seq}::int)
      where session_pk = ${sessionPk}
    )
    update compactions set changed_seq = least(coalesce(changed_seq, ${seq}::int), ${seq}::int)
    where session_pk = ${sessionPk} and status in ('pending', 'running')
      and (covers_through_seq is null or covers_through_seq >= ${seq}::int)`;
}

/** The first seq the context view keeps (its boundary; 0 before any compaction). */
export async function firstKeptSeq(db: DbOrTx, sessionPk: number): Promise<number> {
  return firstKeptSeqOf(
    (await executePrepared<Record<string, unknown>>(db, firstKeptSeqSql(sessionPk))).rows,
  );
}

/** {@link firstKeptSeq}'s statement, for a caller that pipelines it; {@link firstKeptSeqOf} reads its rows. */
export function firstKeptSeqSql(sessionPk: number): SQL {
  return sql`with bounds as (${viewBoundsCte(sessionPk)}) select first_kept from bounds`;
}

export function firstKeptSeqOf(rows: readonly Record<string, unknown>[]): number {
  return Number(rows[0]?.['first_kept'] ?? 0);
}
