import { sql, type SQL } from 'drizzle-orm';
import { INTERRUPTED_TOOL_RESULT_TOKENS, type AppendedWhileRunning } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';

/**
 * What was appended to a session after `seq`, summaries excluded: the newest seq and the stored
 * tokens (an unfinished tool call counted with its interrupted result, as the view shows it).
 * After a compaction completed, with its covered range's last seq: what arrived while it ran
 * (core `evaluateFollowUp`). A part pruned or clamped since counts in full: the error can only
 * call for a follow-up, never hold one back. A few messages by the session's seq index.
 */
export async function appendedAfter(
  db: DbOrTx,
  sessionPk: number,
  seq: number,
): Promise<AppendedWhileRunning> {
  return appendedOf(await executePrepared(db, appendedAfterSql(sessionPk, seq)));
}

/**
 * The statement of {@link appendedAfter}, for a caller that sends it with others (a completion,
 * deciding its follow-up in its own transaction); read its result with {@link appendedOf}.
 */
export function appendedAfterSql(sessionPk: number, seq: number): SQL {
  return sql`select max(m.seq) as newest_seq,
               coalesce(sum(p.tokens + case when p.tool_status in ('pending', 'running')
                                            then ${INTERRUPTED_TOOL_RESULT_TOKENS}::int else 0 end), 0) as tokens
        from messages m
        left join parts p on p.message_pk = m.pk
        where m.session_pk = ${sessionPk} and m.seq > ${seq}::int and not m.summary`;
}

/** What {@link appendedAfterSql} returned. */
export function appendedOf(result: { rows: Record<string, unknown>[] }): AppendedWhileRunning {
  const row = result.rows[0];
  const newest = row?.newest_seq;
  return {
    newestSeq: newest === null || newest === undefined ? null : Number(newest),
    tokens: Number(row?.tokens ?? 0),
  };
}
