import { sql } from 'drizzle-orm';
import {
  INTERRUPTED_TOOL_RESULT_TOKENS,
  PRUNED_OUTPUT_PLACEHOLDER_TOKENS,
  reportedContextTokens,
  type EstimateMode,
  type Finish,
  type Usage,
} from '@compactor/core';
import type { DbOrTx } from '../client';

/** The usage report the hybrid estimate is calibrated on, with the sums around it. */
export interface UsageReportStats {
  seq: number;
  usage: Usage;
  finish: Finish | null;
  /** Results of the reporting turn's tool calls, which arrived after the report. */
  toolResultTokens: number;
  /** Stored tokens of context messages after the report. */
  tokensAfter: number;
  /** Outputs before the report that were pruned after it (the report still counted them). */
  prunedSince: number;
}

/** Sums over a session's context view; {@link estimateFromStats} turns them into core's estimate. */
export interface ContextTokenStats {
  /** Sum of stored counts of the context view (a pruned output counts as the placeholder). */
  storedTokens: number;
  contextMessages: number;
  /** The newest usable usage report (see core `latestUsageReport`), or null. */
  report: UsageReportStats | null;
  /** Non-summary messages after the latest compaction. */
  messagesSinceCompaction: number;
  /** Seq of the newest message of the view, and whether a compaction wrote it (loop guard). */
  newestSeq: number | null;
  newestIsSummary: boolean;
}

/**
 * Everything core's hybrid estimate needs, summed in SQL from stored counts in one statement:
 * no history is re-read or re-tokenized. It mirrors core `estimateContextTokens` exactly (a
 * property test holds the two together): the newest report from an assistant turn that is not
 * a summary, did not fail and came after the latest compaction, then what was added since.
 */
export async function contextTokenStats(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages = true }: { pinSystemMessages?: boolean } = {},
): Promise<ContextTokenStats> {
  const placeholder = PRUNED_OUTPUT_PLACEHOLDER_TOKENS;
  const interrupted = INTERRUPTED_TOOL_RESULT_TOKENS;
  const result = await db.execute<Record<string, number | string | boolean | null>>(sql`
    with latest as (
      select boundary_seq, summary_message_ids, covers_through_seq from compactions
      where session_pk = ${sessionPk} and status = 'completed'
      order by finished_at desc, requested_at desc limit 1
    ),
    -- The same view as listContextMessages (first kept seq, summaries, pinned system messages).
    view as (
      select m.* from messages m left join latest l on true
      where m.session_pk = ${sessionPk}
        and ((not m.summary and m.seq >= coalesce(l.boundary_seq,
                (select max(s.seq) + 1 from messages s where s.session_pk = ${sessionPk} and s.id = any(l.summary_message_ids)), 0))
             or m.id = any(coalesce(l.summary_message_ids, '{}'::text[]))
             or (${pinSystemMessages}::boolean and not m.summary and m.role = 'system'))
    ),
    -- Tokens as the model sees each part (core renderToolPart): an unfinished call carries the
    -- interrupted result, a pruned output the placeholder.
    view_parts as (
      select p.*, case when p.tool_status in ('pending', 'running') then p.tokens + ${interrupted}
                       when p.compacted_at is not null then greatest(0, p.tokens - p.output_tokens) + ${placeholder}
                       else p.tokens end as effective
      from parts p join view v on v.pk = p.message_pk
    ),
    stale as (
      select coalesce((select max(seq) from view where summary), (select covers_through_seq from latest)) as seq
    ),
    report as (
      select v.* from view v, stale s
      where v.role = 'assistant' and not v.summary and v.error is null and v.usage_input is not null
        and v.usage_input + coalesce(v.usage_cache_read, 0) + coalesce(v.usage_cache_write, 0) > 0
        and (s.seq is null or v.seq > s.seq)
      order by v.seq desc limit 1
    )
    select
      (select coalesce(sum(effective), 0)::int from view_parts) as stored_tokens,
      (select count(*)::int from view) as context_messages,
      (select count(*)::int from view v, stale s where not v.summary and (s.seq is null or v.seq > s.seq))
        as messages_since_compaction,
      (select max(seq) from view) as newest_seq,
      coalesce((select summary from view order by seq desc limit 1), false) as newest_is_summary,
      r.seq as report_seq, r.finish as report_finish, r.usage_input, r.usage_output, r.usage_reasoning,
      r.usage_cache_read, r.usage_cache_write,
      -- Results of the report's last step only (core lastStepStart): a tool part counts when no
      -- later part of the message starts a step (non-blank text, a file or a compaction note).
      (select coalesce(sum(case when p.tool_status = 'completed'
                                then case when p.compacted_at is not null then ${placeholder} else p.output_tokens end
                                when p.tool_status = 'error' then round(length(coalesce(p.tool_error, '')) / 4.0)
                                else ${interrupted} end), 0)::int
         from view_parts p
         where p.message_pk = r.pk and p.type = 'tool'
           and not exists (select 1 from parts q where q.message_pk = r.pk and q.idx > p.idx
                             and ((q.type = 'text' and q.text ~ '[^[:space:]]') or q.type in ('file', 'compaction'))))
        as report_tool_results,
      (select coalesce(sum(effective), 0)::int from view_parts p where p.seq > r.seq) as tokens_after,
      (select coalesce(sum(greatest(0, p.output_tokens - ${placeholder})), 0)::int
         from view_parts p join view v on v.pk = p.message_pk
         where (v.seq < r.seq or v.summary) and p.type = 'tool' and p.tool_status = 'completed'
           and p.compacted_at > r.created_at) as pruned_since
    from (select 1) one left join report r on true
  `);
  const row = result.rows[0];
  if (!row) throw new Error('context token stats returned no row');
  const int = (key: string) => Number(row[key] ?? 0);
  return {
    storedTokens: int('stored_tokens'),
    contextMessages: int('context_messages'),
    messagesSinceCompaction: int('messages_since_compaction'),
    newestSeq: row.newest_seq === null ? null : int('newest_seq'),
    newestIsSummary: row.newest_is_summary === true,
    report:
      row.report_seq === null
        ? null
        : {
            seq: int('report_seq'),
            finish: (row.report_finish as Finish | null) ?? null,
            usage: {
              input: int('usage_input'),
              output: int('usage_output'),
              reasoning: int('usage_reasoning'),
              cacheRead: int('usage_cache_read'),
              cacheWrite: int('usage_cache_write'),
            },
            toolResultTokens: int('report_tool_results'),
            tokensAfter: int('tokens_after'),
            prunedSince: int('pruned_since'),
          },
  };
}

/**
 * The context size from the stats: core's hybrid formula (report + its tool results + what came
 * after − what was pruned since), or the stored sum with no report or in `exact` mode.
 */
export function estimateFromStats(stats: ContextTokenStats, mode: EstimateMode = 'hybrid'): number {
  const report = stats.report;
  if (!report || mode === 'exact') return stats.storedTokens;
  return Math.max(
    0,
    reportedContextTokens(report.usage) + report.toolResultTokens + report.tokensAfter - report.prunedSince,
  );
}
