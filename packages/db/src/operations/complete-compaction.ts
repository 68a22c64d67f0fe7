import type { EstimateMode, Usage } from '@compactor/core';
import type { Db } from '../client';
import { eq } from 'drizzle-orm';
import { NotFoundError, StaleAttemptError } from '../errors';
import { compactions } from '../schema';
import type { CompactionRow } from '../mappers';
import { updateCompaction } from '../queries/compactions';
import { contextTokenStats, estimateFromStats } from '../queries/context-tokens';
import { appendMessagesInTx } from './append-messages';
import type { NewMessage } from './new-message';

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
}

/**
 * Makes a compaction visible: its summary messages, its boundary and `status = completed` are
 * written in ONE transaction, so a context reader sees the old view or the new one, never half.
 * Summary messages get seqs after everything appended meanwhile; the context view puts them first.
 */
export async function completeCompaction(db: Db, outcome: CompactionOutcome): Promise<CompactionRow> {
  return db.transaction(async (tx) => {
    if (outcome.fence !== undefined) {
      // Lock the row and check the attempt still owns it before writing anything.
      const [current] = await tx
        .select({ fence: compactions.fence, status: compactions.status })
        .from(compactions)
        .where(eq(compactions.id, outcome.compactionId))
        .for('update');
      if (!current || current.status !== 'running' || current.fence !== outcome.fence) {
        throw new StaleAttemptError(outcome.compactionId, outcome.fence, current?.fence ?? null);
      }
    }
    const written = await appendMessagesInTx(
      tx,
      outcome.sessionPk,
      outcome.summaryMessages.map((m) => ({ ...m, summary: true, compactionId: outcome.compactionId })),
    );
    const completed = await updateCompaction(tx, outcome.compactionId, {
      status: 'completed',
      step: null,
      boundarySeq: outcome.boundarySeq,
      summaryMessageIds: written.map((m) => m.id),
      tokensBefore: outcome.tokensBefore,
      messagesBefore: outcome.messagesBefore,
      model: outcome.model ?? null,
      usageInput: outcome.usage?.input ?? null,
      usageOutput: outcome.usage?.output ?? null,
      costUsd: outcome.costUsd ?? null,
      ...(outcome.details ? { details: outcome.details } : {}),
      finishedAt: outcome.finishedAt,
    });
    if (!completed) throw new NotFoundError(`compaction ${outcome.compactionId} not found`);
    // The new view's size, read inside this transaction once the boundary is in place: exactly
    // what the session status shows next.
    const after = await contextTokenStats(tx, outcome.sessionPk, {
      pinSystemMessages: outcome.pinSystemMessages ?? true,
    });
    const row = await updateCompaction(tx, outcome.compactionId, {
      tokensAfter: estimateFromStats(after, outcome.estimate),
      messagesAfter: after.contextMessages,
    });
    return row ?? completed;
  });
}
