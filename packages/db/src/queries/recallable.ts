import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import type { ToolPart } from '@compactor/core';
import { recallArgumentsOf } from './recall-arguments';
import {
  FLAG_DOCUMENT_BYTES,
  flagWithWords,
  RECALL_WORDS_BATCH_BYTES,
  type FlagCandidate,
} from './recall-flag';
import { INT4_MAX, viewBoundsCte } from './view-bounds';

/**
 * Messages (seqs) flagged per statement: a first compaction can put a 100,000-message history
 * behind its boundary, and each flagged part computes its words for the search index, so the
 * range goes in windows, each its own short transaction on a range of `parts_session_seq_idx`.
 */
export const RECALLABLE_WINDOW = 500;

/**
 * Flags the parts a compaction is about to put behind its boundary as `recallable` (searched by
 * recall, so indexed by `parts_recall_search_idx`): those from the current view's first kept seq
 * up to `boundarySeq`, in windows of {@link RECALLABLE_WINDOW} seqs. The compaction calls it before
 * its completion: a part flagged early is still in view until the boundary moves, and the recall
 * query checks visibility, so nothing shows early; a retry or a replan flags again and finds the
 * flagged parts already done (`not recallable`). Parts behind the current boundary were flagged
 * by the compaction that put them there (or migration 0016's backfill). Each window's tool calls
 * get their `recall_arguments` in the same update as their flag. `firstKept`: the current first
 * kept seq when the caller knows it (db `firstKeptOf`), else it is read. Returns the parts flagged.
 */
export async function markRecallableBehind(
  db: DbOrTx,
  sessionPk: number,
  boundarySeq: number,
  window: number = RECALLABLE_WINDOW,
  firstKept: number | null = null,
): Promise<number> {
  let from = firstKept;
  if (from === null) {
    const { rows } = await executePrepared<{ first_kept: number }>(
      db,
      sql`with bounds as (${viewBoundsCte(sessionPk)}) select first_kept from bounds`,
    );
    from = rows[0]?.first_kept ?? 0;
  }
  let flagged = 0;
  for (; from < boundarySeq; from += window) {
    const before = Math.min(from + window, boundarySeq);
    flagged += await flagSeqsWithArguments(db, sessionPk, from, before);
  }
  return flagged;
}

/**
 * The first kept seq of the view `latest` (the session's latest completed compaction, null
 * without one) leaves, as db `viewBoundsCte` computes it, when its row alone says: null for a
 * compaction without a boundary that wrote summaries (the seq after them is read).
 */
export function firstKeptOf(
  latest: { boundarySeq: number | null; summaryMessageIds: readonly string[] | null } | null,
): number | null {
  if (latest === null || latest.summaryMessageIds === null) return 0;
  if (latest.boundarySeq !== null) return latest.boundarySeq;
  return latest.summaryMessageIds.length === 0 ? INT4_MAX : null;
}

/** Seqs `first` through `last`, both included. */
export interface SeqRange {
  first: number;
  last: number;
}

/** A statement's `min(seq)`, `max(seq)` as a range; null when it had no rows. */
export function seqRange(first: number | null | undefined, last: number | null | undefined): SeqRange | null {
  return first === null || first === undefined || last === null || last === undefined
    ? null
    : { first: Number(first), last: Number(last) };
}

/**
 * Marks read per statement by {@link markPrunedRecallable}: each flagged output's text is read,
 * its words computed by the worker and written with their index entries (texts in batches of
 * db `RECALL_WORDS_BATCH_BYTES`), so a chunk is a few short statements however dense the marks.
 */
export const RECALLABLE_CHUNK = 500;

/**
 * How long {@link markPrunedRecallable} waits after a chunk that flipped flags, as a share of
 * the time the chunk took (at most {@link RECALLABLE_PAUSE_MAX_MS}): writing the words of
 * 100 MB of outputs is a minute of CPU on a loaded machine, and with a pause as long
 * as each chunk the job takes at most half of a core from the other tenants' statements. The
 * marks are served already; recall finds the outputs meanwhile (by call id, and by words the
 * newest marks, db `searchRecall`).
 */
export const RECALLABLE_YIELD = 1;
export const RECALLABLE_PAUSE_MAX_MS = 500;

/**
 * Flags the outputs `by` (a prune job or a compaction) marked pruned within `seqs` as
 * `recallable`, {@link RECALLABLE_CHUNK} marks a statement: the next marks of the range by
 * `part_prunes_pk`, from the last one read (other writers' marks in the range are read and
 * skipped), each of `by`'s parts by `parts_session_seq_idx`. The caller knows where the marks
 * lie (a prune: the first and last seq its statement marked; a compaction: its kept range), so
 * nothing outside that range is read. The outputs' words are Postgres's parser's (db
 * `flagWithWords` with `words: false`), unlike a compaction's: a first prune can flag 100 MB of
 * outputs, and reading them into the worker to compute their words left ~260 MiB of garbage in
 * its heap (the scale bench's prune, 22 MiB without), where a compaction's window is bounded;
 * the pauses below keep the parser to half a core. Not in the prune's own statement: a prune of
 * 50,000 outputs (100 MB of text) takes tens of seconds to index, and the marks must not wait
 * for it (nor run into the statement timeout). A crash between the marks and this is mended by the
 * prune job's retry (workflow `pruneSession`, `retry`: over the view's kept range); recall by
 * call id finds those outputs meanwhile (and by words the session's newest marks, up to the first
 * flagged one: db `searchRecall`). After a chunk that flipped flags it pauses
 * ({@link RECALLABLE_YIELD}). Returns the parts flagged.
 */
export async function markPrunedRecallable(
  db: DbOrTx,
  sessionPk: number,
  by: string,
  seqs: SeqRange,
  chunk: number = RECALLABLE_CHUNK,
  { yieldRatio = RECALLABLE_YIELD }: { yieldRatio?: number } = {},
): Promise<number> {
  let flagged = 0;
  // After (seq, idx): idx is never negative, so (first, -1) starts at the first seq's first part.
  let after = { seq: seqs.first, idx: -1 };
  while (after.seq <= seqs.last) {
    const started = performance.now();
    const { rows } = await executePrepared<{
      marks: string;
      last_seq: number | null;
      last_idx: number | null;
      pk: string | null;
      tool: string | null;
      tool_status: string | null;
      bytes: number | null;
      needs_arguments: boolean | null;
      tool_input: unknown;
    }>(
      db,
      // The chunk is the next marks of the range whoever wrote them, filtered after: with the
      // writer in the scan, the planner expects to read far for the limit and, for a chunk at the
      // start of a long range, reads and sorts the whole range (a bitmap scan) instead. One row
      // per output of `by` still to flag (none: one row of the chunk's size and end only).
      sql`with chunk as materialized (
            select pp.seq, pp.idx, pp.compacted_by from part_prunes pp
            where pp.session_pk = ${sessionPk}
              and (pp.seq, pp.idx) > (${after.seq}::int, ${after.idx}::int) and pp.seq <= ${seqs.last}::int
            order by pp.seq, pp.idx
            limit ${chunk}::int
          )
          select (select count(*) from chunk) as marks, l.seq as last_seq, l.idx as last_idx,
                 f.pk, f.tool, f.tool_status, f.needs_arguments, f.tool_input
          from (select 1) one
          left join lateral (select c.seq, c.idx from chunk c order by c.seq desc, c.idx desc limit 1) l on true
          left join lateral (
            select p.pk, p.tool, p.tool_status, ${FLAG_DOCUMENT_BYTES} as bytes,
                   p.type = 'tool' and p.recall_arguments is null as needs_arguments,
                   case when p.type = 'tool' and p.recall_arguments is null then p.tool_input end as tool_input
            from chunk c
            join parts p on p.session_pk = ${sessionPk} and p.seq = c.seq and p.idx = c.idx
            where c.compacted_by = ${by} and not p.recallable
          ) f on true`,
    );
    const row = rows[0];
    const flips = rows.filter((r) => r.pk !== null);
    const flipped =
      flips.length === 0
        ? 0
        : await flagWithWords(
            db,
            sessionPk,
            flips.map((part) => ({
              pk: Number(part.pk),
              status: part.tool_status,
              flagged: false,
              bytes: Number(part.bytes ?? 0),
              doc: null,
              args:
                part.needs_arguments === true && part.tool !== null
                  ? recallArgumentsOf({
                      tool: part.tool,
                      status: part.tool_status as ToolPart['status'],
                      input: part.tool_input,
                    })
                  : null,
            })),
            { words: false },
          );
    flagged += flipped;
    if (flipped > 0 && yieldRatio > 0) {
      await sleep(Math.min(RECALLABLE_PAUSE_MAX_MS, (performance.now() - started) * yieldRatio));
    }
    if (Number(row?.marks ?? 0) < chunk || row?.last_seq == null || row.last_idx == null) break;
    after = { seq: row.last_seq, idx: row.last_idx };
  }
  return flagged;
}

/**
 * The seqs of the session's summary messages in [from, before), as an array computed once per
 * statement from `messages_session_summary_idx` (a handful of entries), rather than a lookup of
 * each part's message.
 */
const summarySeqs = (sessionPk: number, from: number, before: number) =>
  sql`array(select m.seq from messages m where m.session_pk = ${sessionPk} and m.summary
             and m.seq >= ${from}::int and m.seq < ${before}::int)`;

/**
 * Flags the searchable parts of seqs [from, before) of the session with their words, and gives
 * their tool calls without `recall_arguments` theirs (db `recallArgumentsOf`), in one update:
 * each update of a part writes a new row version and new entries in every index of `parts`, so
 * flag, words and arguments are written together. The words are computed here (db
 * `flagWithWords`, core `recallVectorOf`) and sent as tsvector literals: Postgres's parser was
 * most of a compaction's Postgres CPU (migration 0030). One read brings the parts, the calls'
 * tool, status and input (only those still without arguments) and the texts of the window's
 * first {@link RECALL_WORDS_BATCH_BYTES} (a window's usual all); larger windows' texts are read
 * batch by batch. Summary messages' parts are left unflagged: recall never returns a summary
 * (db `searchRecall`: only a pruned output of one could be, and a summary has no tool parts),
 * and a later compaction's window holds the previous summaries (they follow what their
 * compaction covered), whose words would cost as much as any text. Returns the parts flagged.
 */
async function flagSeqsWithArguments(
  db: DbOrTx,
  sessionPk: number,
  from: number,
  before: number,
): Promise<number> {
  const { rows } = await executePrepared<{
    pk: number;
    status: string | null;
    flagged: boolean;
    bytes: number;
    doc: string | null;
    tool: string | null;
    tool_input: unknown;
  }>(
    db,
    sql`select d.pk, d.status, d.flagged, d.bytes, d.tool, d.tool_input,
               case when not d.flagged and d.running <= ${RECALL_WORDS_BATCH_BYTES}::int
                    then left(d.text, 100000) end as doc
        from (
          -- The text column as stored (a TOAST pointer is not read until the outer select needs it).
          select p.pk, p.tool_status as status, p.recallable as flagged, coalesce(p.text, p.tool_output, p.tool_error, '') as text,
                 case when p.recallable then 0 else ${FLAG_DOCUMENT_BYTES} end as bytes,
                 sum(case when p.recallable then 0 else ${FLAG_DOCUMENT_BYTES} end) over (order by p.seq, p.idx) as running,
                 case when p.type = 'tool' and p.recall_arguments is null then p.tool end as tool,
                 case when p.type = 'tool' and p.recall_arguments is null then p.tool_input end as tool_input
          from parts p
          where p.session_pk = ${sessionPk} and p.seq >= ${from}::int and p.seq < ${before}::int
            and p.type in ('text', 'reasoning', 'tool')
            and (not p.recallable or (p.type = 'tool' and p.recall_arguments is null))
            and p.seq <> all (${summarySeqs(sessionPk, from, before)})
        ) d
        order by d.running, d.pk`,
  );
  const candidates = rows.flatMap((row): FlagCandidate[] => {
    const args =
      row.tool === null
        ? null
        : recallArgumentsOf({
            tool: row.tool,
            status: row.status as ToolPart['status'],
            input: row.tool_input,
          });
    // A flagged call with nothing to name: nothing to write.
    if (row.flagged && args === null) return [];
    return [
      {
        pk: Number(row.pk),
        status: row.status,
        flagged: row.flagged,
        bytes: Number(row.bytes),
        doc: row.doc,
        args,
      },
    ];
  });
  return candidates.length === 0 ? 0 : flagWithWords(db, sessionPk, candidates);
}
