import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { viewBoundsCte } from './view-bounds';

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
 * by the compaction that put them there (or migration 0016's backfill). Returns the parts flagged.
 */
export async function markRecallableBehind(
  db: DbOrTx,
  sessionPk: number,
  boundarySeq: number,
  window: number = RECALLABLE_WINDOW,
): Promise<number> {
  const { rows } = await executePrepared<{ first_kept: number }>(
    db,
    sql`with bounds as (${viewBoundsCte(sessionPk)}) select first_kept from bounds`,
  );
  let flagged = 0;
  for (let from = rows[0]?.first_kept ?? 0; from < boundarySeq; from += window) {
    flagged += await markRecallableSeqs(db, sessionPk, from, Math.min(from + window, boundarySeq));
  }
  return flagged;
}

/**
 * Flags the outputs `by` (a prune job or a compaction) marked pruned as `recallable`, in windows
 * of {@link RECALLABLE_WINDOW} seqs. Not in the prune's own statement: each flagged output
 * computes its words for the search index, which for a prune of 50,000 outputs (110 MB of text)
 * takes tens of seconds, and the marks must not wait for it (nor run into the statement timeout).
 * A crash between the marks and this leaves those outputs unsearchable (recall by call id still
 * finds them); the next prune or compaction of the same parts does not redo it. Returns the parts
 * flagged.
 */
export async function markPrunedRecallable(
  db: DbOrTx,
  sessionPk: number,
  by: string,
  window: number = RECALLABLE_WINDOW,
): Promise<number> {
  const { rows } = await executePrepared<{ first: number | null; last: number | null }>(
    db,
    sql`select min(seq) as first, max(seq) as last from part_prunes
        where session_pk = ${sessionPk} and compacted_by = ${by}`,
  );
  const first = rows[0]?.first ?? null;
  const last = rows[0]?.last ?? null;
  if (first === null || last === null) return 0;
  let flagged = 0;
  for (let from = Number(first); from <= Number(last); from += window) {
    const { rows: done } = await executePrepared<{ flagged: string }>(
      db,
      sql`with flagged as (
            update parts p set recallable = true
            from part_prunes pp
            where pp.session_pk = ${sessionPk} and pp.seq >= ${from}::int and pp.seq < ${from + window}::int
              and pp.compacted_by = ${by}
              and p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx and not p.recallable
            returning 1
          )
          select count(*) as flagged from flagged`,
    );
    flagged += Number(done[0]?.flagged ?? 0);
  }
  return flagged;
}

/** Flags the searchable parts of seqs [from, before) of the session; how many it flagged. */
async function markRecallableSeqs(
  db: DbOrTx,
  sessionPk: number,
  from: number,
  before: number,
): Promise<number> {
  const { rows } = await executePrepared<{ flagged: string }>(
    db,
    sql`with flagged as (
          update parts set recallable = true
          where session_pk = ${sessionPk} and seq >= ${from}::int and seq < ${before}::int
            and type in ('text', 'reasoning', 'tool') and not recallable
          returning 1
        )
        select count(*) as flagged from flagged`,
  );
  return Number(rows[0]?.flagged ?? 0);
}
