import { buildSummaryMessages, type Message } from '@compactor/core';
import { completeCompaction, contentHash, type CompactionRow, type NewMessage } from '@compactor/db';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import type { Attempt } from '../attempt';
import type { WorkflowResources } from '../resources';
import type { SummarizeOutcome } from './summary-writing';

/**
 * Writes the summary message(s), the boundary and `completed` in one fenced transaction, which
 * also closes the attempt's finalize `step` record. The message ids are derived from the
 * compaction id, so a retried finalize writes the same rows.
 */
export async function finalizeStep(
  resources: WorkflowResources,
  attempt: Attempt,
  outcome: Extract<SummarizeOutcome, { kind: 'summary' }>,
  step?: { pk: number; at: Date },
): Promise<CompactionRow> {
  const { compaction, policy } = attempt;
  const now = resources.clock();
  const tokenizer =
    resources.tokenizerFor?.(attempt.model.id) ?? getTokenizer(encodingForModel(attempt.model.id));
  const summaryMessages =
    outcome.summaryText === null
      ? []
      : buildSummaryMessages({
          style: policy.summaryMessage,
          summaryText: outcome.summaryText,
          compactionId: compaction.id,
          auto: compaction.reason !== 'manual',
          messagesCompacted: outcome.messagesCompacted,
          fileOps: outcome.fileOps,
          createdAt: now.toISOString(),
          countTokens: (text) => tokenizer.countSync(text),
        }).map(toStoredMessage);
  return completeCompaction(resources.db, {
    compactionId: compaction.id,
    fence: attempt.fence,
    sessionPk: attempt.session.pk,
    summaryMessages,
    boundarySeq: outcome.boundarySeq,
    tokensBefore: compaction.tokensBefore ?? 0,
    messagesBefore: compaction.messagesBefore ?? 0,
    model: outcome.llm?.model ?? null,
    usage: outcome.llm?.usage ?? null,
    costUsd: outcome.llm?.costUsd ?? null,
    // How the compaction went, for analysts: the cut or topic decision, who wrote the summary,
    // a fallback and an emergency prune when they happened.
    details: {
      ...outcome.detail,
      writtenBy: outcome.writtenBy,
      messagesCompacted: outcome.messagesCompacted,
      ...(outcome.fallback ? { fallback: outcome.fallback } : {}),
      ...(outcome.emergencyPruned.parts > 0 ? { emergencyPruned: outcome.emergencyPruned } : {}),
    },
    estimate: policy.estimate,
    pinSystemMessages: policy.pinSystemMessages,
    finishedAt: now,
    ...(step ? { step } : {}),
  });
}

function toStoredMessage(message: Omit<Message, 'seq'>): NewMessage {
  const { id, createdAt, ...content } = message;
  return { ...content, id, createdAt: new Date(createdAt), contentHash: contentHash(content) };
}
