import { sql, type SQL } from 'drizzle-orm';
import {
  CONTINUATION_METADATA_TYPE,
  INTERRUPTED_TOOL_RESULT_TOKENS,
  CHARS_PER_TOKEN,
  PRUNED_OUTPUT_MARKER_FIXED_CHARS,
  boundedEstimate,
  reportedContextTokens,
  type EstimateMode,
  type Finish,
  type UnprunedOutputs,
  type Usage,
  type ViewImage,
  mediaBudgetSavings,
  type MediaBudget,
} from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { clampJoin, shownOutputTokens } from './parts';
import { viewBoundsCte, viewMessagesSql, type SessionRef } from './view-bounds';

/**
 * A character that JavaScript's `String.prototype.trim` keeps (core `startsStep`: text that is
 * not blank starts a step). Spelled out because `[[:space:]]` follows the server's locale, where
 * a no-break space, for one, is not a space.
 */
const NOT_JS_WHITESPACE = sql.raw(
  String.raw`'[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]'`,
);

/**
 * A text's length in UTF-16 code units, as JavaScript's `.length` counts it (core's estimates
 * divide that by four): Postgres' `length` counts code points, one fewer for each character
 * outside the Basic Multilingual Plane (emoji among them).
 */
function utf16Length(text: SQL): SQL {
  const astral = sql.raw(String.raw`'[\U00010000-\U0010FFFF]'`);
  return sql`(length(${text}) + length(${text}) - length(regexp_replace(${text}, ${astral}, '', 'g')))`;
}

/**
 * Tokens of the marker of a pruned output whose call id is `callId`: core
 * `prunedOutputMarkerTokens`, `(fixed characters + UTF-8 bytes of the id + 3) / 4` in integer
 * arithmetic (`octet_length` counts the bytes core's `utf8ByteLength` counts).
 */
export function prunedMarkerTokensSql(callId: SQL): SQL {
  const fixed = PRUNED_OUTPUT_MARKER_FIXED_CHARS + CHARS_PER_TOKEN - 1;
  return sql`((${sql.raw(String(fixed))} + coalesce(octet_length(${callId}), 0)) / ${sql.raw(String(CHARS_PER_TOKEN))})`;
}

/**
 * The parts of view message `v` (lateral, as `p`), each with its clamp's counts and the column
 * `mark` of its prune mark (`compacted_at`, or `compacted_by`: which compaction or prune job).
 * Read per view message with an index lookup each: the subquery's `offset 0` keeps the planner
 * from flattening it into a hash join over the whole parts table, which it picks whenever it
 * cannot know how short the view is (the boundary is only known at run time).
 */
export function viewPartsLateral(sessionPk: SessionRef, mark: 'compacted_at' | 'compacted_by'): SQL {
  const column = sql.raw(mark);
  return sql`cross join lateral (
        select q.idx, q.type, q.tool_status, q.call_id, coalesce(c.tokens, q.tokens) as tokens,
               coalesce(c.output_tokens, q.output_tokens) as output_tokens,
               (select pp.${column} from part_prunes pp
                where pp.session_pk = ${sessionPk} and pp.seq = q.seq and pp.idx = q.idx) as ${column}
        from parts q ${clampJoin(sql`q`)}
        where q.message_pk = v.pk offset 0
      ) p`;
}

/**
 * Tokens of part `p` of {@link viewPartsLateral} as the model sees it (core renderToolPart): an
 * unfinished call carries the interrupted result, a pruned output (its `mark` set) the marker
 * naming its call, a clamped part its clamp's count.
 */
export function servedPartTokensSql(mark: 'compacted_at' | 'compacted_by'): SQL {
  return sql`case when p.tool_status in ('pending', 'running') then p.tokens + ${INTERRUPTED_TOOL_RESULT_TOKENS}
                  when p.${sql.raw(mark)} is not null
                    then greatest(0, p.tokens - p.output_tokens) + ${prunedMarkerTokensSql(sql`p.call_id`)}
                  else p.tokens end::bigint`;
}

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
  /** When the reporting message was stored: the provider's prompt cache was last used then. */
  createdAt: Date;
}

/** Sums over a session's context view; {@link estimateFromStats} turns them into core's estimate. */
export interface ContextTokenStats {
  /** Sum of stored counts of the context view (a pruned output counts as its marker). */
  storedTokens: number;
  /** The part of it in pinned system messages (never compacted). */
  pinnedTokens: number;
  /** The part of it in the latest compaction's summary messages (no prune touches them). */
  summaryTokens: number;
  contextMessages: number;
  /** The newest usable usage report (see core `latestUsageReport`), or null. */
  report: UsageReportStats | null;
  /** Non-summary messages after the latest compaction. */
  messagesSinceCompaction: number;
  /** Seq of the newest message of the view, and whether a compaction wrote it (loop guard). */
  newestSeq: number | null;
  newestIsSummary: boolean;
  /** The view's completed tool outputs not pruned yet (core `pruneCouldSelect`). */
  unprunedOutputs: UnprunedOutputs;
  /**
   * The view's images, newest first, with what their markers name: the status counts the view
   * as served, past the media budget (core `mediaBudgetSavings`), without loading it.
   */
  images: ViewImage[];
}

/**
 * Everything core's hybrid estimate needs, summed in SQL from stored counts in one statement:
 * no history is re-read or re-tokenized. It mirrors core `estimateContextTokens` exactly (a
 * property test holds the two together): the newest report from an assistant turn that is not
 * a summary, did not fail and came after the latest compaction, then what was added since. One
 * rule core does not know, as it has no revert: a report measured on the view of a compaction
 * that was reverted since does not count (db `revertCompaction`).
 */
export async function contextTokenStats(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages = true }: { pinSystemMessages?: boolean } = {},
): Promise<ContextTokenStats> {
  const result = await executePrepared<StatsRow>(db, contextTokenStatsSql(sessionPk, pinSystemMessages));
  const row = result.rows[0];
  if (!row) throw new Error('context token stats returned no row');
  return statsFromRow(row);
}

/** A row of {@link contextTokenStatsSql}. */
export type StatsRow = Record<string, unknown>;

/** A completed tool output no prune has cleared yet, among `view_parts p`. */
const UNPRUNED_OUTPUT = sql.raw(`p.type = 'tool' and p.tool_status = 'completed' and p.compacted_at is null`);

/** The statement of {@link contextTokenStats}: one row; other statements embed it (session status). */
export function contextTokenStatsSql(sessionPk: SessionRef, pinSystemMessages: boolean): SQL {
  const interrupted = INTERRUPTED_TOOL_RESULT_TOKENS;
  return sql`
    with bounds as (${viewBoundsCte(sessionPk)}),
    -- The same view as selectContextRows, narrow: no text is read.
    view as materialized (${viewMessagesSql(
      sessionPk,
      pinSystemMessages,
      sql`m.pk, m.seq, m.role, m.summary, m.error is null as ok, m.finish, m.created_at, m.usage_input,
          m.usage_output, m.usage_reasoning, m.usage_cache_read, m.usage_cache_write`,
    )}),
    -- Tokens as the model sees each part, read per view message (viewPartsLateral).
    view_parts as materialized (
      select v.pk as message_pk, v.seq, v.summary,
             ${pinSystemMessages}::boolean and v.role = 'system' and not v.summary as pinned, p.idx, p.type, p.tool_status, p.output_tokens,
             p.compacted_at, ${prunedMarkerTokensSql(sql`p.call_id`)} as marker_tokens,
             ${servedPartTokensSql('compacted_at')} as effective
      from view v
      ${viewPartsLateral(sessionPk, 'compacted_at')}
    ),
    stale as (
      select coalesce((select max(seq) from view where summary), (select covers_through_seq from bounds)) as seq
    ),
    -- The session's newest revert (one probe of a partial index; none for most sessions): the
    -- reports after its compaction completed and before the revert measured the view it undid.
    -- An older revert's range lies before it or behind a later boundary: only the newest counts.
    reverted as (
      select c.served_from_seq, c.reverted_seq from compactions c
      where c.session_pk = ${sessionPk} and c.status = 'reverted'
      order by c.reverted_seq desc nulls last, c.served_from_seq limit 1
    ),
    report as (
      select v.* from view v, stale s
      where v.role = 'assistant' and not v.summary and v.ok and v.usage_input is not null
        and v.usage_input::bigint + coalesce(v.usage_cache_read, 0) + coalesce(v.usage_cache_write, 0) > 0
        and (s.seq is null or v.seq > s.seq)
        and not exists (select 1 from reverted r where v.seq > r.served_from_seq and v.seq <= r.reverted_seq)
      order by v.seq desc limit 1
    ),
    -- The view's images, newest first, and the call each names (a tool result's own, in a file
    -- part's text column; else core callBefore: the nearest earlier tool part, unless a text that
    -- is not blank stands between): their markers' words.
    images as (
      select p.seq, p.idx, p.effective as tokens, q.mime, q.filename, q.url, m.id as message_id,
             coalesce(q.text, (select case when b.type = 'tool' then b.call_id end from parts b
              where b.message_pk = p.message_pk and b.idx < p.idx
                and (b.type = 'tool' or (b.type = 'text' and b.text ~ ${NOT_JS_WHITESPACE}))
              order by b.idx desc limit 1)) as call_id
      from view_parts p
      join parts q on q.message_pk = p.message_pk and q.idx = p.idx
      join messages m on m.pk = p.message_pk
      where p.type = 'file' and lower(q.mime) like 'image/%'
    ),
    -- One pass over the parts: the unpruned outputs, and the summaries' tokens (no prune touches them).
    unpruned as (
      select coalesce(sum(p.output_tokens) filter (where ${UNPRUNED_OUTPUT}), 0) as total,
             coalesce(max(p.output_tokens) filter (where ${UNPRUNED_OUTPUT}), 0) as largest,
             coalesce(sum(p.effective) filter (where p.summary), 0) as summary_tokens
      from view_parts p
    )
    select
      (select coalesce(sum(effective), 0) from view_parts) as stored_tokens,
      (select coalesce(sum(effective), 0) from view_parts where pinned) as pinned_tokens,
      (select count(*) from view) as context_messages,
      (select count(*) from view v, stale s where not v.summary and (s.seq is null or v.seq > s.seq))
        as messages_since_compaction,
      (select max(seq) from view) as newest_seq,
      -- core triggerStatsOf: a summary, or the synthetic continuation appended after one. The
      -- newest message is found in the view first and its metadata read by key: a join of the
      -- view with messages is planned on the view's estimate (tens of thousands of rows) as a
      -- hash join over the whole messages table, every tenant's rows (114 ms at 100k).
      coalesce((select n.summary or (n.role = 'user' and coalesce(
                  (select m.metadata->>'type' from messages m where m.pk = n.pk) = ${CONTINUATION_METADATA_TYPE}, false))
                from (select v.pk, v.summary, v.role from view v order by v.seq desc limit 1) n), false)
        as newest_is_summary,
      r.seq as report_seq, r.finish as report_finish, r.usage_input, r.usage_output, r.usage_reasoning,
      r.usage_cache_read, r.usage_cache_write, r.created_at as report_created_at,
      -- Results of the report's last step only (core lastStepStart): a tool part counts when no
      -- later part of the message starts a step (non-blank text, a file or a compaction note).
      (select coalesce(sum(case when p.tool_status = 'completed'
                                then case when pp.compacted_at is not null then ${prunedMarkerTokensSql(sql`p.call_id`)}
                                          else ${shownOutputTokens()} end
                                when p.tool_status = 'error' then round(${utf16Length(sql`coalesce(p.tool_error, '')`)} / 4.0)
                                else ${interrupted} end), 0)
         from parts p
         left join part_prunes pp on pp.session_pk = ${sessionPk} and pp.seq = p.seq and pp.idx = p.idx
         where p.message_pk = r.pk and p.type = 'tool'
           and not exists (select 1 from parts q where q.message_pk = r.pk and q.idx > p.idx
                             and ((q.type = 'text' and q.text ~ ${NOT_JS_WHITESPACE}) or q.type in ('file', 'compaction'))))
        as report_tool_results,
      (select coalesce(sum(effective), 0) from view_parts p where p.seq > r.seq) as tokens_after,
      (select coalesce(sum(greatest(0, p.output_tokens - p.marker_tokens)), 0)
         from view_parts p
         where (p.seq < r.seq or p.summary) and p.type = 'tool' and p.tool_status = 'completed'
           and p.compacted_at > r.created_at) as pruned_since,
      u.total as unpruned_output_tokens, u.largest as largest_unpruned_output, u.summary_tokens,
      (select coalesce(json_agg(json_build_object('seq', i.seq, 'tokens', i.tokens, 'mime', i.mime,
                'filename', i.filename, 'url', i.url, 'messageId', i.message_id, 'callId', i.call_id)
              order by i.seq desc, i.idx desc), '[]'::json) from images i) as view_images
    from unpruned u left join report r on true
  `;
}

/** The stats of a {@link contextTokenStatsSql} row. */
export function statsFromRow(row: StatsRow): ContextTokenStats {
  const int = (key: string) => Number(row[key] ?? 0);
  return {
    storedTokens: int('stored_tokens'),
    pinnedTokens: int('pinned_tokens'),
    summaryTokens: int('summary_tokens'),
    contextMessages: int('context_messages'),
    messagesSinceCompaction: int('messages_since_compaction'),
    newestSeq: row.newest_seq === null ? null : int('newest_seq'),
    newestIsSummary: row.newest_is_summary === true,
    unprunedOutputs: { total: int('unpruned_output_tokens'), largest: int('largest_unpruned_output') },
    images: viewImagesOf(row.view_images),
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
            createdAt: new Date(row.report_created_at as string | Date),
          },
  };
}

/** A row's `view_images` (a JSON array: the driver parses it), as core's view images. */
function viewImagesOf(value: unknown): ViewImage[] {
  if (!Array.isArray(value)) return [];
  return (value as Array<Record<string, unknown>>).map((image) => ({
    seq: Number(image.seq),
    messageId: String(image.messageId),
    callId: typeof image.callId === 'string' ? image.callId : null,
    part: {
      type: 'file',
      mime: String(image.mime),
      filename: typeof image.filename === 'string' ? image.filename : null,
      url: String(image.url ?? ''),
      tokens: Number(image.tokens),
    },
  }));
}

/** How {@link estimateFromStats} estimates: the policy's mode and the report's calibration cap. */
export interface EstimateFromStatsOptions {
  mode?: EstimateMode;
  /** The most a report may add over the stored count (core `usageCalibrationCap`). */
  calibrationCap: number;
  /**
   * The session's media budget (core `mediaBudgetOf(policy, usable)`): the images past it count
   * as their markers, as the context read serves them. Omitted: every image in full.
   */
  media?: MediaBudget | undefined;
}

/**
 * The context size from the stats: core's hybrid formula (report + its tool results + what came
 * after − what was pruned since) held between the stored sum and the stored sum plus the cap
 * (core `boundedEstimate`), or the stored sum with no report or in `exact` mode.
 */
export function estimateFromStats(
  stats: ContextTokenStats,
  { mode = 'hybrid', calibrationCap, media }: EstimateFromStatsOptions,
): number {
  const report = stats.report;
  // Core's estimate of the view as served (`estimateContextTokens` after `applyMediaBudget`):
  // the stored sum less the budget's saving, what came after the report less its part of it.
  const saved = media
    ? mediaBudgetSavings(stats.images, media, report?.seq ?? null)
    : { savedTokens: 0, savedAfter: 0 };
  const stored = stats.storedTokens - saved.savedTokens;
  if (!report || mode === 'exact') return stored;
  const reported =
    reportedContextTokens(report.usage) +
    report.toolResultTokens +
    report.tokensAfter -
    saved.savedAfter -
    report.prunedSince;
  return boundedEstimate(reported, stored, calibrationCap);
}
