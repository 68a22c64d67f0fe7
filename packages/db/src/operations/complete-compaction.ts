import type { EstimateMode, Usage } from '@compactor/core';
import type { Db } from '../client';
import { and, eq, sql } from 'drizzle-orm';
import { NotFoundError, StaleAttemptError } from '../errors';
import { compactions } from '../schema';
import type { CompactionRow } from '../mappers';
import { selectList } from '../queries/raw-rows';
import { compactionFromRow } from '../queries/compactions';
import { contextTokenStats, estimateFromStats } from '../queries/context-tokens';
import { insertNewMessages } from './append-messages';
import type { NewMessage } from './new-message';
import { executePrepared } from '../prepared';

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
  pinSystemMessages?: boolean;
  model?: string | null;
  usage?: Pick<Usage, 'input' | 'output'> | null;
  costUsd?: number | null;
  details?: Record<string, unknown>;
  finishedAt: Date;
  /** The attempt's open finalize step record, closed in the same transaction. */
  step?: { pk: number; at: Date };
}

/**
 * Makes a compaction visible: its summary messages, its boundary and `status = completed` are
 * written in ONE transaction, so a context reader sees the old view or the new one, never half.
 * Summary messages get seqs after everything appended meanwhile; the context view puts them first.
 * The summary draft is cleared: the summary message holds it now. With `step`, the attempt's
 * finalize record is closed in the same transaction, with the new view's size as its detail.
 */
export async function completeCompaction(db: Db, outcome: CompactionOutcome): Promise<CompactionRow> {
  return db.transaction(async (tx) => {
    // First, so it takes the row lock and proves the attempt still owns the row before anything
    // else is written (the transaction makes the order invisible to readers).
    const fenced =
      outcome.fence === undefined
        ? eq(compactions.id, outcome.compactionId)
        : and(
            eq(compactions.id, outcome.compactionId),
            eq(compactions.fence, outcome.fence),
            eq(compactions.status, 'running'),
          );
    const [completed] = await tx
      .update(compactions)
      .set({
        status: 'completed',
        step: null,
        boundarySeq: outcome.boundarySeq,
        summaryMessageIds: outcome.summaryMessages.map((m) => m.id),
        tokensBefore: outcome.tokensBefore,
        messagesBefore: outcome.messagesBefore,
        model: outcome.model ?? null,
        usageInput: outcome.usage?.input ?? null,
        usageOutput: outcome.usage?.output ?? null,
        costUsd: outcome.costUsd ?? null,
        summaryDraft: null,
        ...(outcome.details ? { details: outcome.details } : {}),
        finishedAt: outcome.finishedAt,
      })
      .where(fenced)
      .returning({ id: compactions.id });
    if (!completed) {
      if (outcome.fence === undefined)
        throw new NotFoundError(`compaction ${outcome.compactionId} not found`);
      const [current] = await tx
        .select({ fence: compactions.fence })
        .from(compactions)
        .where(eq(compactions.id, outcome.compactionId));
      throw new StaleAttemptError(outcome.compactionId, outcome.fence, current?.fence ?? null);
    }
    // The ids derive from the compaction id and this attempt owns the unfinished row, so none
    // is stored yet: an earlier attempt's finalize either committed (the row would be completed)
    // or rolled back.
    await insertNewMessages(
      tx,
      outcome.sessionPk,
      outcome.summaryMessages.map((m) => ({ ...m, summary: true, compactionId: outcome.compactionId })),
    );
    // The new view's size, read inside this transaction once the boundary is in place: exactly
    // what the session status shows next.
    const after = await contextTokenStats(tx, outcome.sessionPk, {
      pinSystemMessages: outcome.pinSystemMessages ?? true,
    });
    const tokensAfter = estimateFromStats(after, outcome.estimate);
    const messagesAfter = after.contextMessages;
    const closeStep = outcome.step
      ? sql`, step_closed as (
          update compaction_steps
          set status = 'completed', error_message = null, finished_at = ${outcome.step.at},
              detail = ${JSON.stringify({ boundarySeq: outcome.boundarySeq, summaryMessages: outcome.summaryMessages.length, tokensAfter, messagesAfter })}::jsonb
          where pk = ${outcome.step.pk}
        )`
      : sql``;
    const result = await executePrepared<Record<string, unknown>>(
      tx,
      sql`
      with sized as (
        update compactions set tokens_after = ${tokensAfter}, messages_after = ${messagesAfter}
        where id = ${outcome.compactionId}
        returning *
      )${closeStep}
      select ${selectList(compactions, 'sized', '')} from sized`,
    );
    const [row] = result.rows;
    if (!row) throw new NotFoundError(`compaction ${outcome.compactionId} not found`);
    return compactionFromRow(row);
  });
}
