import type { Usage } from '@compactor/core';
import type { Db } from '../client';
import { NotFoundError } from '../errors';
import type { CompactionRow } from '../mappers';
import { updateCompaction } from '../queries/compactions';
import { appendMessagesInTx } from './append-messages';
import type { NewMessage } from './new-message';

export interface CompactionOutcome {
  compactionId: string;
  sessionPk: number;
  /** The request marker and/or summary message(s) to write; empty for a truncate-only cut. */
  summaryMessages: NewMessage[];
  /** First kept seq: the context view shows the summary, then messages from here on. */
  boundarySeq: number;
  tokensBefore: number;
  tokensAfter: number;
  messagesBefore: number;
  messagesAfter: number;
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
    const written = await appendMessagesInTx(
      tx,
      outcome.sessionPk,
      outcome.summaryMessages.map((m) => ({ ...m, summary: true, compactionId: outcome.compactionId })),
    );
    const row = await updateCompaction(tx, outcome.compactionId, {
      status: 'completed',
      step: null,
      boundarySeq: outcome.boundarySeq,
      summaryMessageIds: written.map((m) => m.id),
      tokensBefore: outcome.tokensBefore,
      tokensAfter: outcome.tokensAfter,
      messagesBefore: outcome.messagesBefore,
      messagesAfter: outcome.messagesAfter,
      model: outcome.model ?? null,
      usageInput: outcome.usage?.input ?? null,
      usageOutput: outcome.usage?.output ?? null,
      costUsd: outcome.costUsd ?? null,
      ...(outcome.details ? { details: outcome.details } : {}),
      finishedAt: outcome.finishedAt,
    });
    if (!row) throw new NotFoundError(`compaction ${outcome.compactionId} not found`);
    return row;
  });
}
