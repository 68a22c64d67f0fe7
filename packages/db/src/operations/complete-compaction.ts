import type { AppendedWhileRunning, EstimateMode, Usage } from '@compactor/core';
import type { Db, DbOrTx } from '../client';
import { eq, sql, type SQL } from 'drizzle-orm';
import { CoveredMessageChangedError, NotFoundError, StaleAttemptError } from '../errors';
import { clampPartsSql, type StoredClamp } from './clamp-parts';
import { compactions } from '../schema';
import type { CompactionRow } from '../mappers';
import { selectList } from '../queries/raw-rows';
import { INT4_MAX } from '../queries/view-bounds';
import {
  compactionFromRow,
  compactionWithOutboxOf,
  insertCompactionWithOutbox,
  insertCompactionWithOutboxSql,
  type CompactionRequestRow,
  type CompactionWithOutbox,
} from '../queries/compactions';
import { appendedAfter, appendedAfterSql, appendedOf } from '../queries/appended-after';
import { contextTokenStats, contextTokenStatsSql, estimateFromStats } from '../queries/context-tokens';
import { upsertCompactionLedgerSql, type LedgerEntry } from '../queries/compaction-ledgers';
import { newMessagesAfterSql } from './append-messages';
import type { NewMessage } from './new-message';
import { executePrepared } from '../prepared';
import { executePipelined } from '../pipeline';
import { pipelinedTransaction } from '../pipelined-transaction';

/** What {@link completeCompaction} writes; `tokensAfter` is measured there, in the same transaction. */
export interface CompactionOutcome {
  compactionId: string;
  /** The attempt's fence (see `claimCompaction`); omitted only by tests writing rows directly. */
  fence?: number;
  sessionPk: number;
  /** The request marker and/or summary message(s) to write; empty for a truncate-only cut. */
  summaryMessages: NewMessage[];
  /** First kept seq: the context view shows the summary, then messages from here on. */
  boundarySeq: number;
  tokensBefore: number;
  messagesBefore: number;
  /** How the after-size is estimated (the session policy's `estimate` and `pinSystemMessages`). */
  estimate?: EstimateMode;
  /**
   * The most a usage report appended while the compaction ran may add to a truncation's
   * after-size (core `usageCalibrationCap`). Default 0: the stored sum, as a summary's size is
   * (no report follows a summary), never more than the status shows.
   */
  calibrationCap?: number;
  pinSystemMessages?: boolean;
  model?: string | null;
  usage?: Pick<Usage, 'input' | 'output'> | null;
  costUsd?: number | null;
  details?: Record<string, unknown>;
  /** Set when the truncate fallback wrote the summary: the summarizer's final failure. */
  fallback?: { code: string; message: string } | null;
  finishedAt: Date;
  /** The attempt's open finalize step record, closed in the same transaction. */
  step?: { pk: number; at: Date };
  /** Parts the view shows clamped from now on (core fit.ts), written in the same transaction. */
  clamps?: readonly StoredClamp[];
  /** The ledger the compaction leaves in force, stored with the completion (and only with it). */
  ledger?: LedgerEntry;
}

/**
 * Makes a compaction visible: its summary messages, its boundary and `status = completed` are
 * written in ONE transaction, so a context reader sees the old view or the new one, never half.
 * Summary messages get seqs after everything appended meanwhile; the context view puts them first.
 * The summary draft is cleared: the summary message holds it now. With `step`, the attempt's
 * finalize record is closed in the same transaction, with the new view's size as its detail.
 *
 * A covered message that changed while the compaction ran (`changed_seq`, set by a PATCH) at or
 * after the boundary is fine: it is kept. One before it means the summary was written without
 * what the message holds now: nothing is written, and {@link CoveredMessageChangedError} says
 * to summarise again. Clamps (core fit.ts) and the ledger are written right after the completion.
 *
 * Two statements: the fenced completion with the messages, then the new view's size, read once
 * the boundary is in place (exactly what the session status shows next). With summary messages
 * both go in one round trip (`executePipelined`: one implicit transaction, the size statement
 * sees the completion and the session lock it took); a truncation that writes none reads the
 * size first and calibrates it in JS, so it keeps an explicit transaction.
 */
export async function completeCompaction(db: Db, outcome: CompactionOutcome): Promise<CompactionRow> {
  return (await completeCompactionFollowedUp(db, outcome)).completed;
}

/** What a completion measured in its transaction, for deciding there whether another must follow. */
export interface CompletionMeasured {
  /** The completed row, sized. */
  completed: CompactionRow;
  /** The tokens of pinned system messages in its size (0 when the policy pins none). */
  pinnedTokens: number;
  /** What was appended after its covered range (while it ran), its own summaries excluded. */
  appended: AppendedWhileRunning;
}

/**
 * The next compaction a completion may request in its own transaction (workflow follow-up.ts):
 * `decide` sees what the completion measured and names the row to insert with its job's outbox
 * entry, or null. It runs between two round trips of the transaction, with the session locked:
 * it must be quick and must not throw.
 */
export interface CompletionFollowUp {
  /** The last seq the compaction covers: what came after it was appended while it ran. */
  coversThroughSeq: number;
  decide(measured: CompletionMeasured): { row: CompactionRequestRow; jobName: string } | null;
}

/**
 * {@link completeCompaction}, and with `followUp` the next compaction requested in the same
 * transaction when it decides so: the commit that makes this compaction `completed` makes the
 * next one `pending`, so no reader sees the first completed with nothing active while the
 * appends that outran it leave the view over its trigger. That costs one round trip more (the
 * decision is core's, made in JS between them), and one bounded read (what was appended after
 * the covered range, by the seq index). `followUp` is null when none was requested, or when the
 * insert found another compaction of the session active.
 */
export async function completeCompactionFollowedUp(
  db: Db,
  outcome: CompactionOutcome,
  followUp?: CompletionFollowUp,
): Promise<{
  completed: CompactionRow;
  followUp: CompactionWithOutbox | null;
  measured: CompletionMeasured | null;
}> {
  const clamps = outcome.clamps?.length
    ? clampPartsSql({ ...outcome, clamps: outcome.clamps, at: outcome.finishedAt })
    : null;
  const ledger = outcome.ledger ? upsertCompactionLedgerSql(outcome.ledger, outcome.fence ?? null) : null;
  if (outcome.summaryMessages.length === 0) {
    return db.transaction(async (tx) => {
      const { rows } = await executePrepared(tx, completionSql(outcome));
      if (rows.length === 0) throw await notCompleted(tx, outcome);
      if (clamps) await executePrepared(tx, clamps);
      if (ledger) await executePrepared(tx, ledger);
      const after = await contextTokenStats(tx, outcome.sessionPk, {
        pinSystemMessages: outcome.pinSystemMessages ?? true,
      });
      const size = {
        tokens: sql`${estimateFromStats(after, { mode: outcome.estimate, calibrationCap: outcome.calibrationCap ?? 0 })}`,
        messages: sql`${after.contextMessages}`,
      };
      const completed = sizedRow(await executePrepared(tx, sizeAfterSql(outcome, sql``, size)));
      if (!followUp) return { completed, followUp: null, measured: null };
      const appended = await appendedAfter(tx, outcome.sessionPk, followUp.coversThroughSeq);
      const measured = { completed, pinnedTokens: after.pinnedTokens, appended };
      const next = followUp.decide(measured);
      const inserted = next ? await insertCompactionWithOutbox(tx, next.row, next.jobName) : null;
      return { completed, followUp: inserted, measured };
    });
  }
  const statements = [
    completionSql(outcome),
    ...(clamps ? [clamps] : []),
    ...(ledger ? [ledger] : []),
    measuredSizeSql(outcome),
  ];
  if (!followUp) {
    const results = await executePipelined(db, statements);
    if (results[0]!.rows.length === 0) throw await notCompleted(db, outcome);
    return { completed: sizedRow(results.at(-1)!), followUp: null, measured: null };
  }
  const done = await pipelinedTransaction(db, async (send) => {
    const results = await send([
      ...statements,
      appendedAfterSql(outcome.sessionPk, followUp.coversThroughSeq),
    ]);
    // Fenced: a stale attempt wrote nothing, and requests nothing (the commit is empty).
    if (results[0]!.rows.length === 0) return null;
    const sized = results.at(-2)!;
    const measured = {
      completed: sizedRow(sized),
      pinnedTokens: Number(sized.rows[0]!.pinned_tokens),
      appended: appendedOf(results.at(-1)!),
    };
    const next = followUp.decide(measured);
    if (!next) return { completed: measured.completed, followUp: null, measured };
    const [inserted] = await send([insertCompactionWithOutboxSql(next.row, next.jobName)], { commit: true });
    return { completed: measured.completed, followUp: compactionWithOutboxOf(inserted!), measured };
  });
  if (!done) throw await notCompleted(db, outcome);
  return done;
}

/**
 * The size statement of a completion with summary messages (exported for the plan tests). The
 * size is the view's stored sum, measured in the statement that records it: the summaries are
 * the session's newest messages, so no usage report comes after them and core's estimate is that
 * sum in either mode.
 */
export function measuredSizeSql(outcome: CompactionOutcome): SQL {
  const stats = sql`st as materialized (${contextTokenStatsSql(outcome.sessionPk, outcome.pinSystemMessages ?? true)}),`;
  return sizeAfterSql(outcome, stats, {
    tokens: sql`(select stored_tokens from st)`,
    messages: sql`(select context_messages from st)`,
    pinned: sql`(select pinned_tokens from st)`,
  });
}

/**
 * The fenced completion and its summary messages, in one statement. The fenced update comes
 * first: it takes the row lock and proves the attempt still owns the row, and the messages are
 * written only for the row it returns. No rows when it wrote none.
 */
function completionSql(outcome: CompactionOutcome): SQL {
  const fence =
    outcome.fence === undefined
      ? sql``
      : sql` and c.fence = ${outcome.fence} and c.status = 'running'
             and coalesce(c.changed_seq, ${INT4_MAX}) >= ${outcome.boundarySeq}`;
  const details =
    outcome.details === undefined ? sql`c.details` : sql`${JSON.stringify(outcome.details)}::jsonb`;
  return newMessagesAfterSql(
    sql`update compactions c
          set status = 'completed', step = null, boundary_seq = ${outcome.boundarySeq},
              summary_message_ids = ${sql.param(outcome.summaryMessages.map((m) => m.id))}::text[],
              tokens_before = ${outcome.tokensBefore}, messages_before = ${outcome.messagesBefore},
              model = ${outcome.model ?? null}::text, usage_input = ${outcome.usage?.input ?? null}::int,
              usage_output = ${outcome.usage?.output ?? null}::int, cost_usd = ${outcome.costUsd ?? null}::numeric,
              summary_draft = null, details = ${details}, finished_at = ${outcome.finishedAt},
              fallback_code = ${outcome.fallback?.code ?? null}::text,
              fallback_message = ${outcome.fallback?.message ?? null}::text,
              tokens_after = null, messages_after = null
          where c.id = ${outcome.compactionId}${fence}
          returning c.session_pk`,
    // The ids derive from the compaction id and this attempt owns the unfinished row, so none
    // is stored yet: an earlier attempt's finalize either committed (the row would be
    // completed) or rolled back.
    outcome.summaryMessages.map((m) => ({ ...m, summary: true, compactionId: outcome.compactionId })),
  );
}

/**
 * Why the completion wrote nothing: the row is gone, a newer attempt owns it, or a message it
 * would compact changed meanwhile.
 */
async function notCompleted(db: DbOrTx, outcome: CompactionOutcome): Promise<Error> {
  if (outcome.fence === undefined) return new NotFoundError(`compaction ${outcome.compactionId} not found`);
  const [current] = await db
    .select({ fence: compactions.fence, status: compactions.status, changedSeq: compactions.changedSeq })
    .from(compactions)
    .where(eq(compactions.id, outcome.compactionId));
  if (
    current?.fence === outcome.fence &&
    current.status === 'running' &&
    current.changedSeq !== null &&
    current.changedSeq < outcome.boundarySeq
  )
    return new CoveredMessageChangedError(outcome.compactionId, current.changedSeq);
  return new StaleAttemptError(outcome.compactionId, outcome.fence, current?.fence ?? null);
}

/**
 * Records the new view's size (and closes the finalize step record) on the row the completion
 * just wrote. In a pipeline it runs even when the completion wrote nothing, so it matches only
 * a row completed and not sized yet (the completion clears the size; nothing else leaves a
 * completed row unsized past its own transaction) at this attempt's fence.
 */
function sizeAfterSql(
  outcome: CompactionOutcome,
  stats: SQL,
  size: { tokens: SQL; messages: SQL; pinned?: SQL },
): SQL {
  const fence = outcome.fence === undefined ? sql`` : sql` and fence = ${outcome.fence}`;
  const closeStep = outcome.step
    ? sql`, step_closed as (
        update compaction_steps
        set status = 'completed', error_message = null, finished_at = ${outcome.step.at},
            detail = jsonb_build_object('boundarySeq', ${outcome.boundarySeq}::int,
                                        'summaryMessages', ${outcome.summaryMessages.length}::int,
                                        'tokensAfter', ${size.tokens}::int, 'messagesAfter', ${size.messages}::int)
        where pk = ${outcome.step.pk} and exists (select 1 from sized)
      )`
    : sql``;
  return sql`
    with ${stats}
    sized as (
      update compactions set tokens_after = ${size.tokens}::int, messages_after = ${size.messages}::int
      -- Found by its key only: written as a plain condition, status = 'completed' made the
      -- partial index of completed compactions a candidate, and a generic plan made on a new
      -- database read every completed compaction of the session through it (268 at 6,000 messages).
      where id = ${outcome.compactionId}${fence}
        and case when status = 'completed' then tokens_after is null else false end
      returning *
    )${closeStep}
    select ${selectList(compactions, 'sized', '')}${size.pinned ? sql`, ${size.pinned}::int as pinned_tokens` : sql``} from sized`;
}

function sizedRow(result: { rows: Record<string, unknown>[] }): CompactionRow {
  const [row] = result.rows;
  if (!row) throw new Error('the completed compaction was not found to record its size');
  return compactionFromRow(row);
}
