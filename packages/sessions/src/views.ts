import { cacheEffectOf, type CompactionRow, type listCompactionSteps } from '@compactor/db';
import type { Compaction as CompactionView, CompactionStep as CompactionStepView } from '@compactor/contract';

/** A compaction row in the API's shape. */
export function compactionView(row: CompactionRow, sessionId: string): CompactionView {
  return {
    id: row.id,
    sessionId,
    reason: row.reason,
    strategy: row.strategy,
    status: row.status,
    step: row.step,
    attempts: row.attempts,
    keepRecentTokens: row.keepRecentTokens,
    force: row.force,
    tokensBefore: row.tokensBefore,
    tokensAfter: row.tokensAfter,
    prunedParts: row.prunedParts,
    prunedTokens: row.prunedTokens,
    messagesBefore: row.messagesBefore,
    messagesAfter: row.messagesAfter,
    boundarySeq: row.boundarySeq,
    summaryMessageId: row.summaryMessageIds.at(-1) ?? null,
    summaryMessageIds: row.summaryMessageIds,
    model: row.model,
    usage: row.usageInput === null ? null : { input: row.usageInput, output: row.usageOutput ?? 0 },
    costUsd: row.costUsd,
    error: row.errorCode === null ? null : { code: row.errorCode, message: row.errorMessage ?? '' },
    fallback:
      row.fallbackCode === null ? null : { code: row.fallbackCode, message: row.fallbackMessage ?? '' },
    requestedAt: row.requestedAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    finishedAt: row.finishedAt?.toISOString() ?? null,
    cache: cacheEffectOf(row),
    revertedAt: row.revertedAt?.toISOString() ?? null,
  };
}

type CompactionStepRow = Awaited<ReturnType<typeof listCompactionSteps>>[number];

/** A step record in the API's shape: its numbers and labels, never its error text. */
export function compactionStepView(row: CompactionStepRow): CompactionStepView {
  return {
    step: row.step,
    attempt: row.attempt,
    status: row.status,
    startedAt: row.startedAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
    detail: (row.detail ?? {}) as Record<string, unknown>,
  };
}
