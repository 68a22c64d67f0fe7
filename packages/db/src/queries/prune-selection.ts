import { sql, type SQL } from 'drizzle-orm';
import type { PrunablePart, PruneBudgets, PruneSelection } from '@compactor/core';
import type { Db, DbOrTx } from '../client';
import { prunedMarkerTokensSql } from './context-tokens';
import { shownOutputTokens } from './parts';
import { seqRange, type SeqRange } from './recallable';
import { viewBoundsCte } from './view-bounds';
import { executePrepared } from '../prepared';

/**
 * OpenCode's prune as set-based SQL: core `selectPrunableParts` (the reference, held to it by a
 * property test) computed where the parts are, so no output, text or input ever reaches Node.
 *
 * Core walks the context view backwards: [pinned system messages before the first kept seq,
 * the summary messages, the kept non-summary messages]. It skips messages until the
 * `protectUserTurns`-th user message from the end, breaks at the first summary message and at
 * the first already-pruned eligible output, and makes every eligible output a candidate once the
 * running sum of output tokens passes `protectTokens`. In SQL that is:
 *  - the walk set: kept non-summary messages (`first_kept <= seq <= coversThroughSeq`), plus the
 *    pinned system messages before `first_kept` only when the view has no summary message (with
 *    one, core breaks there before reaching them). Summary messages inside the kept seq range
 *    (the latest one is written after the range it covers) are left out by their flag;
 *  - the user-turn cutoff: the seq of the `protectUserTurns`-th newest user message of the kept
 *    messages (pinned messages are system messages, and once the walk reaches the summaries
 *    nothing more is walked, so no other message can count);
 *  - the stop: the newest pruned output the walk would reach (walked region, completed, tool not
 *    protected), found by a backward scan of `part_prunes`' primary key, first match. Emergency
 *    pruning marks outputs in the protected tail and policies change their protected tools, so
 *    the newest mark is not always the stop;
 *  - the walk: eligible parts newer than the stop up to the cutoff, read by the
 *    `parts_session_seq_idx` range (narrow columns only) with a window sum for the running total.
 *
 * Everything is bounded by the view and the stop: index range scans, never the history.
 */

/** Where a prune looks and what it spares. */
export interface PruneSelectionOptions {
  /**
   * The last seq it may touch: a compaction's covered range (`covers_through_seq`), or the
   * session's last seq for a standalone prune. Messages after it are not walked at all, and do
   * not count as user turns either (core walks the covered view only).
   */
  coversThroughSeq: number;
  /** The policy's `pinSystemMessages`: whether pinned system messages are in the view at all. */
  pinSystemMessages: boolean;
  pruning: PruneBudgets;
}

/**
 * The walk's CTEs, from `bounds` to `totals`: `scored` holds every walked output (`seq`, `idx`,
 * `output_tokens`, `running`: the running sum newest first, this output included); a candidate
 * is a row with `running > protectTokens`. `totals` is one row: `candidate_tokens`,
 * `scanned_tokens`. Rows stay narrow (four numbers: the callers join for
 * anything else) so that 50,000 of them sort in memory.
 */
function selectionCtes(sessionPk: number, options: PruneSelectionOptions): SQL {
  const { coversThroughSeq, pinSystemMessages, pruning } = options;
  // One array parameter, whatever the number of tools.
  const protectedTools = sql`${sql.param([...pruning.protectedTools])}::text[]`;
  const eligible = (p: SQL) =>
    sql`${p}.type = 'tool' and ${p}.tool_status = 'completed' and ${p}.tool <> all(${protectedTools})`;
  return sql`
    bounds as (${viewBoundsCte(sessionPk)}),
    walk as (
      select
        b.first_kept,
        -- Summary messages inside the kept seq range: the latest compaction's (written after the
        -- range it covered) and hidden older ones. A handful, read by the partial summary index.
        array(
          select s.seq from messages s
          where s.session_pk = ${sessionPk} and s.summary
            and s.seq >= b.first_kept and s.seq <= ${coversThroughSeq}::int
        ) as summary_seqs,
        -- Core breaks at the first summary message it walks, before any pinned message.
        ${pinSystemMessages}::boolean and not exists (
          select 1 from messages s
          where s.session_pk = ${sessionPk} and s.id = any(b.summary_ids) and s.summary
        ) as walks_pinned,
        -- The newest seq walked: core counts user messages before it checks the protection, so
        -- the message where the count reaches protectUserTurns is walked. Null: too few turns.
        case when ${pruning.protectUserTurns}::int = 0 then ${coversThroughSeq}::int
             else (select u.seq from messages u
                   where u.session_pk = ${sessionPk}
                     and u.seq >= b.first_kept and u.seq <= ${coversThroughSeq}::int
                     and u.role = 'user' and not u.summary
                   order by u.seq desc
                   offset ${pruning.protectUserTurns}::int - 1 limit 1)
        end as last_seq
      from bounds b
    ),
    stop as (
      select w.*, st.seq as stop_seq, st.idx as stop_idx
      from walk w
      left join lateral (
        -- Kept messages first; Append stops at the first row, so the pinned branch runs only
        -- when no kept output was pruned before.
        (select pp.seq, pp.idx from part_prunes pp
         join parts p on p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx
         where pp.session_pk = ${sessionPk}
           and pp.seq >= w.first_kept and pp.seq <= w.last_seq
           and pp.seq <> all(w.summary_seqs)
           and ${eligible(sql`p`)}
         order by pp.seq desc, pp.idx desc
         limit 1)
        union all
        (select pp.seq, pp.idx from messages m
         join part_prunes pp on pp.session_pk = m.session_pk and pp.seq = m.seq
         join parts p on p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx
         where w.walks_pinned and m.session_pk = ${sessionPk}
           and m.role = 'system' and not m.summary
           and m.seq < w.first_kept and m.seq <= w.last_seq
           and ${eligible(sql`p`)}
         order by pp.seq desc, pp.idx desc
         limit 1)
        limit 1
      ) st on true
    ),
    walked as (
      select p.seq, p.idx, ${shownOutputTokens()} as output_tokens, ${savedTokens()} as saved
      from stop s
      join parts p on p.session_pk = ${sessionPk}
        and p.seq >= greatest(s.first_kept, s.stop_seq) and p.seq <= s.last_seq
      where p.seq <> all(s.summary_seqs)
        and ${eligible(sql`p`)}
        and (s.stop_seq is null or (p.seq, p.idx) > (s.stop_seq, s.stop_idx))
      union all
      select p.seq, p.idx, ${shownOutputTokens()} as output_tokens, ${savedTokens()} as saved
      from stop s
      join messages m on m.session_pk = ${sessionPk} and s.walks_pinned
        and m.role = 'system' and not m.summary
        and m.seq < s.first_kept and m.seq <= s.last_seq
      join parts p on p.session_pk = ${sessionPk} and p.seq = m.seq
      where ${eligible(sql`p`)}
        and (s.stop_seq is null or (p.seq, p.idx) > (s.stop_seq, s.stop_idx))
    ),
    scored as (
      select w.*,
             sum(w.output_tokens) over (order by w.seq desc, w.idx desc rows unbounded preceding) as running
      from walked w
    ),
    totals as (
      select coalesce(sum(output_tokens) filter (where running > ${pruning.protectTokens}), 0) as candidate_tokens,
             coalesce(sum(output_tokens), 0) as scanned_tokens,
             coalesce(sum(saved) filter (where running > ${pruning.protectTokens}), 0) as saved_tokens
      from scored
    )`;
}

/**
 * What the view serves less once output `p` is pruned (a pruned output is served as its marker):
 * its stored tokens, or its clamp's, less what stays of them and the marker. Summed over the
 * marks by the prune statement itself, so its cache effect needs no second read of them.
 */
function savedTokens(): SQL {
  const tokens = sql`case when p.clamped then (select c.tokens from part_clamps c where c.part_pk = p.pk) else p.tokens end`;
  return sql`(least(${tokens}, ${shownOutputTokens()}) - ${prunedMarkerTokensSql(sql`p.call_id`)})::int`;
}

/** A candidate of `scored` (see {@link selectionCtes}) that is pruned: past the protection, and the total worth it. */
function prunedCandidate(pruning: PruneBudgets): SQL {
  return sql`c.running > ${pruning.protectTokens} and t.candidate_tokens > ${pruning.minimumTokens}`;
}

/**
 * Core `selectPrunableParts` over the session's context view, computed in the database (see the
 * module comment for how): the same parts (oldest first) and totals. For tests and for callers
 * that want to inspect a prune before making it; {@link pruneToolOutputs} selects and marks in
 * one statement.
 */
export async function selectPrunablePartsInSql(
  db: DbOrTx,
  sessionPk: number,
  options: PruneSelectionOptions,
): Promise<PruneSelection> {
  const result = await executePrepared<{
    candidate_tokens: string;
    scanned_tokens: string;
    message_id: string | null;
    seq: number | null;
    call_id: string | null;
    tool: string | null;
    output_tokens: number | null;
  }>(
    db,
    sql`
    with ${selectionCtes(sessionPk, options)}
    select t.candidate_tokens, t.scanned_tokens,
           m.id as message_id, c.seq, p.call_id, p.tool, c.output_tokens
    from totals t
    left join (scored c
               join messages m on m.session_pk = ${sessionPk} and m.seq = c.seq
               join parts p on p.session_pk = ${sessionPk} and p.seq = c.seq and p.idx = c.idx)
      on ${prunedCandidate(options.pruning)}
    order by c.seq, c.idx`,
  );
  const first = result.rows[0];
  const candidateTokens = Number(first?.candidate_tokens ?? 0);
  const parts: PrunablePart[] = result.rows.flatMap((row) =>
    row.seq === null
      ? []
      : [
          {
            messageId: row.message_id ?? '',
            seq: row.seq,
            callId: row.call_id ?? '',
            tool: row.tool ?? '',
            outputTokens: row.output_tokens ?? 0,
          },
        ],
  );
  return {
    parts,
    prunedTokens: parts.length > 0 ? candidateTokens : 0,
    candidateTokens,
    scannedTokens: Number(first?.scanned_tokens ?? 0),
  };
}

/** What {@link pruneToolOutputs} marked, in parts and output tokens. */
export interface PruneToolOutputsResult {
  /** Outputs this call marked pruned (not those a concurrent prune marked first). */
  parts: number;
  /** Their output tokens: what no longer reaches the model because of this call. */
  tokens: number;
  /** Output tokens of every candidate; when `parts` is 0 this says why (at most the minimum). */
  candidateTokens: number;
  /**
   * The seqs of the first and the last output this call marked (null when it marked none): where
   * `markPrunedRecallable` finds its marks without reading the session's others.
   */
  markedSeqs: SeqRange | null;
  /** What the view serves less because of this call's marks (their tokens less their markers). */
  savedTokens: number;
}

/**
 * OpenCode's prune in ONE statement: selects like {@link selectPrunablePartsInSql} and inserts
 * the marks into `part_prunes` (lazy deletion: outputs stay stored), so nothing is shipped to
 * Node (`markPrunedRecallable` makes the marked outputs searchable after, in chunks, within the
 * `markedSeqs` this returns). Idempotent: a repeat stops at the marks it wrote.
 *
 * A plain INSERT, not `on conflict do nothing`: the selection never picks a marked part (the
 * walk stops at the newest mark), so only a concurrent prune of the same session can collide,
 * and speculative insertion cost 60–70 ms more at 50,000 marks. On that collision (a unique
 * violation, after waiting for the other prune to commit) the statement runs again in a new
 * snapshot, which sees the other prune's marks and stops there: nothing is counted twice.
 * Marks go in key order, so two prunes queue behind each other instead of deadlocking.
 */
export async function pruneToolOutputs(
  db: Db,
  sessionPk: number,
  options: PruneSelectionOptions & { at: Date; by: string },
): Promise<PruneToolOutputsResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      // One statement, atomic on its own: no transaction round trips around it.
      return await pruneOnce(db, sessionPk, options);
    } catch (error) {
      if (attempt >= MAX_PRUNE_COLLISIONS || !isUniqueViolation(error)) throw error;
    }
  }
}

/** Concurrent prunes of one session a prune outlasts before it gives up (the job retries). */
const MAX_PRUNE_COLLISIONS = 3;

function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}

async function pruneOnce(
  db: DbOrTx,
  sessionPk: number,
  options: PruneSelectionOptions & { at: Date; by: string },
): Promise<PruneToolOutputsResult> {
  const result = await executePrepared<{
    parts: string;
    tokens: string;
    candidate_tokens: string;
    first_seq: number | null;
    last_seq: number | null;
    saved_tokens: string;
  }>(
    db,
    sql`
    with ${selectionCtes(sessionPk, options)},
    marked as (
      insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
      select ${sessionPk}, c.seq, c.idx, ${options.at.toISOString()}::timestamptz, ${options.by}
      from scored c cross join totals t
      where ${prunedCandidate(options.pruning)}
      order by c.seq, c.idx
      returning seq, idx
    )
    select m.parts, case when m.parts = 0 then 0 else t.candidate_tokens end as tokens,
           t.candidate_tokens, m.first_seq, m.last_seq,
           case when m.parts = 0 then 0 else t.saved_tokens end as saved_tokens
    from totals t
    cross join (select count(*) as parts, min(seq) as first_seq, max(seq) as last_seq from marked) m`,
  );
  const row = result.rows[0];
  return {
    parts: Number(row?.parts ?? 0),
    tokens: Number(row?.tokens ?? 0),
    candidateTokens: Number(row?.candidate_tokens ?? 0),
    markedSeqs: seqRange(row?.first_seq, row?.last_seq),
    savedTokens: Number(row?.saved_tokens ?? 0),
  };
}
