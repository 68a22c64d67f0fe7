import { buildSummaryMessages, type Message } from '@compactor/core';
import { completeCompaction, contentHash, type CompactionRow, type NewMessage } from '@compactor/db';
import { encodingForModel, getTokenizer, type Tokenizer } from '@compactor/tokenizer';
import type { Attempt } from '../attempt';
import type { WorkflowResources } from '../resources';
import type { SummarizeOutcome, SummaryOutcome } from './summary-writing';

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
  const summaryMessages = summaryMessagesFor(attempt, outcome, tokenizerFor(resources, attempt), now).map(
    toStoredMessage,
  );
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
    // a fallback and the clamps when they happened.
    details: {
      ...outcome.detail,
      writtenBy: outcome.writtenBy,
      messagesCompacted: outcome.messagesCompacted,
      ...(outcome.fallback ? { fallback: outcome.fallback } : {}),
    },
    clamps: outcome.clamps,
    fallback: outcome.fallback,
    estimate: policy.estimate,
    pinSystemMessages: policy.pinSystemMessages,
    finishedAt: now,
    ...(step ? { step } : {}),
  });
}

/** The session model's tokenizer, as the store counts parts with it. */
export function tokenizerFor(resources: WorkflowResources, attempt: Attempt): Tokenizer {
  return resources.tokenizerFor?.(attempt.model.id) ?? getTokenizer(encodingForModel(attempt.model.id));
}

/**
 * The message(s) a summary outcome writes, counted exactly: what finalize stores and what the
 * fit step measures (none for a cut that drops messages without a summary).
 */
export function summaryMessagesFor(
  attempt: Attempt,
  outcome: Pick<SummaryOutcome, 'summaryText' | 'messagesCompacted' | 'fileOps'>,
  tokenizer: Pick<Tokenizer, 'countSync'>,
  now: Date,
): Array<Omit<Message, 'seq'>> {
  if (outcome.summaryText === null) return [];
  const { compaction, policy } = attempt;
  return buildSummaryMessages({
    style: policy.summaryMessage,
    summaryText: outcome.summaryText,
    compactionId: compaction.id,
    auto: compaction.reason !== 'manual',
    messagesCompacted: outcome.messagesCompacted,
    fileOps: outcome.fileOps,
    createdAt: now.toISOString(),
    countTokens: (text) => tokenizer.countSync(text),
  });
}

function toStoredMessage(message: Omit<Message, 'seq'>): NewMessage {
  const { id, createdAt, ...content } = message;
  return { ...content, id, createdAt: new Date(createdAt), contentHash: contentHash(content) };
}
