import { sql } from 'drizzle-orm';
import type { Usage } from '@compactor/core';
import type { DbOrTx } from '../client';

export interface ContextTokenStats {
  /** Stored tokens of everything in the context view (pruned outputs count as the placeholder). */
  contextTokens: number;
  /** Messages in the context view. */
  contextMessages: number;
  /** The newest usage report made after the latest compaction, if any. */
  lastUsage: { seq: number; usage: Usage } | null;
  /** Stored tokens of context messages after that report (what the hybrid estimate adds). */
  tokensAfterUsage: number;
  /** Non-summary messages appended after the latest completed compaction's summary. */
  messagesSinceCompaction: number;
}

/**
 * Everything the hybrid estimate needs, from stored counts, in one statement: no history is
 * re-read or re-tokenized. Usage reported before the latest compaction's summary is ignored
 * because it measured a prompt that no longer exists.
 */
export async function contextTokenStats(
  db: DbOrTx,
  sessionPk: number,
  { placeholderTokens }: { placeholderTokens: number },
): Promise<ContextTokenStats> {
  const result = await db.execute<{
    context_tokens: number;
    context_messages: number;
    usage_seq: number | null;
    usage_input: number | null;
    usage_output: number | null;
    usage_reasoning: number | null;
    usage_cache_read: number | null;
    usage_cache_write: number | null;
    tokens_after_usage: number;
    messages_since_compaction: number;
  }>(sql`
    with latest as (
      select boundary_seq, summary_message_ids from compactions
      where session_pk = ${sessionPk} and status = 'completed'
      order by finished_at desc, requested_at desc limit 1
    ),
    context_messages as (
      select m.pk, m.seq, m.summary from messages m left join latest l on true
      where m.session_pk = ${sessionPk}
        and ((not m.summary and m.seq >= coalesce(l.boundary_seq, 0))
             or m.id = any(coalesce(l.summary_message_ids, '{}'::text[])))
    ),
    context_parts as (
      select p.seq,
             case when p.compacted_at is not null
                  then p.tokens - p.output_tokens + ${placeholderTokens}
                  else p.tokens end as tokens
      from parts p join context_messages c on c.pk = p.message_pk
    ),
    summary_seq as (
      select coalesce(max(seq), 0) as seq from context_messages where summary
    ),
    last_usage as (
      select seq, usage_input, usage_output, usage_reasoning, usage_cache_read, usage_cache_write
      from messages
      where session_pk = ${sessionPk} and usage_input is not null
        and seq > (select seq from summary_seq)
      order by seq desc limit 1
    )
    select
      (select coalesce(sum(tokens), 0)::int from context_parts) as context_tokens,
      (select count(*)::int from context_messages) as context_messages,
      u.seq as usage_seq, u.usage_input, u.usage_output, u.usage_reasoning, u.usage_cache_read, u.usage_cache_write,
      (select coalesce(sum(tokens), 0)::int from context_parts where seq > coalesce(u.seq, 2147483647)) as tokens_after_usage,
      (select count(*)::int from context_messages where not summary and seq > (select seq from summary_seq)) as messages_since_compaction
    from (select 1) one left join last_usage u on true
  `);
  const row = result.rows[0];
  if (!row) throw new Error('context token stats returned no row');
  return {
    contextTokens: row.context_tokens,
    contextMessages: row.context_messages,
    lastUsage:
      row.usage_seq === null
        ? null
        : {
            seq: row.usage_seq,
            usage: {
              input: row.usage_input ?? 0,
              output: row.usage_output ?? 0,
              reasoning: row.usage_reasoning ?? 0,
              cacheRead: row.usage_cache_read ?? 0,
              cacheWrite: row.usage_cache_write ?? 0,
            },
          },
    tokensAfterUsage: row.tokens_after_usage,
    messagesSinceCompaction: row.messages_since_compaction,
  };
}
