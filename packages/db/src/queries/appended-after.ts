import { sql } from 'drizzle-orm';
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
  const { rows } = await executePrepared<{ newest_seq: number | null; tokens: string | number }>(
    db,
    sql`select max(m.seq) as newest_seq,
               coalesce(sum(p.tokens + case when p.tool_status in ('pending', 'running')
                                            then ${INTERRUPTED_TOOL_RESULT_TOKENS}::int else 0 end), 0) as tokens
        from messages m
        left join parts p on p.message_pk = m.pk
        where m.session_pk = ${sessionPk} and m.seq > ${seq}::int and not m.summary`,
  );
  const row = rows[0];
  return {
    newestSeq: row?.newest_seq === null || row?.newest_seq === undefined ? null : Number(row.newest_seq),
    tokens: Number(row?.tokens ?? 0),
  };
}
