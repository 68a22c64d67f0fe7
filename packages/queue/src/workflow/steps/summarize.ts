import {
  buildTruncateSummary,
  extractFileOps,
  extractPreviousFileOps,
  extractPreviousSummary,
  keepRecentTokensFor,
  mergeFileOps,
  planCompaction,
  type EmergencyPruneSelection,
  type FileOps,
  type Message,
} from '@compactor/core';
import { markPartsCompacted } from '@compactor/db';
import {
  InvalidSummaryError,
  resolveSummarizerSettings,
  type SummarizerSettings,
  type SummaryResult,
} from '@compactor/llm';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
import { CompactionFailedError, isAbort, isTransient, llmFailureCode } from '../errors';
import type { WorkflowResources } from '../resources';
import { topicOutcome } from './topic';

/** What the summarizer calls cost, for the compaction row: `input`/`output` are prompt/completion tokens. */
export interface LlmSpend {
  model: string;
  usage: { input: number; output: number };
  costUsd: number | null;
}

/** What the summarize step decided: nothing to do, or the summary and the boundary to write. */
export type SummarizeOutcome =
  | { kind: 'nothing-to-compact'; reason: string }
  | {
      kind: 'summary';
      /** `null`: drop the covered messages without a summary (topic truncate-only). */
      summaryText: string | null;
      /** First kept seq. */
      boundarySeq: number;
      messagesCompacted: number;
      fileOps: FileOps;
      /** How the summary was written: by the LLM, the truncate strategy or fallback, or carried over. */
      writtenBy: 'llm' | 'truncate' | 'detector' | 'previous-summary' | 'none';
      llm: LlmSpend | null;
      /** Set when the LLM failed for good and the policy fell back to truncation. */
      fallback: { code: string; message: string } | null;
      /** Outputs of the kept tail cleared by an emergency compaction (force) so the context fits. */
      emergencyPruned: { parts: number; tokens: number };
      /** For the step record: how the cut was made. */
      detail: Record<string, unknown>;
    };

/** The `summary` branch of {@link SummarizeOutcome}: a summary (or none) and the boundary to write. */
export type SummaryOutcome = Extract<SummarizeOutcome, { kind: 'summary' }>;

/**
 * Plans the cut (core), then writes the summary: the LLM for `summarize` (split turns as two
 * concurrent summaries), the fixed truncate text for `truncate`, topic detection first for
 * `topic`. A forced (emergency) compaction also clears outputs in the kept tail when the tail
 * alone would not fit, and fails with `context_cannot_fit` when nothing can make it fit.
 */
export async function summarizeStep(
  resources: WorkflowResources,
  attempt: Attempt,
): Promise<SummarizeOutcome> {
  const { compaction, policy, model } = attempt;
  const view = await loadCoveredView(resources.db, attempt.session.pk, attempt.coversThroughSeq, policy);
  if (compaction.strategy === 'topic') return topicOutcome(resources, attempt, view);

  const keepRecentTokens = keepRecentTokensFor(
    compaction.reason,
    model,
    policy,
    compaction.keepRecentTokens ?? undefined,
  );
  const plan = planCompaction(view, { keepRecentTokens, force: compaction.force, policy, model });
  if (!plan) return { kind: 'nothing-to-compact', reason: 'no cut point leaves anything to compact' };
  const emergencyPruned = await applyEmergencyPrune(resources, attempt, plan.emergencyPrune);

  const compacted = [...plan.history, ...(plan.turnPrefix ?? [])];
  const fileOps = fileOpsOf(compacted, policy.fileTools);
  const base = {
    kind: 'summary' as const,
    boundarySeq: plan.boundarySeq ?? attempt.coversThroughSeq + 1,
    messagesCompacted: compacted.filter((m) => !m.summary).length,
    fileOps,
    emergencyPruned,
    detail: {
      keepRecentTokens,
      force: compaction.force,
      cut: plan.cut,
      split: plan.split,
      keptTokens: plan.keptTokens,
    },
  };
  if (compaction.strategy === 'truncate') {
    const summaryText = buildTruncateSummary(compacted, { fileOps, fileTools: policy.fileTools });
    return { ...base, summaryText, writtenBy: 'truncate', llm: null, fallback: null };
  }
  const written = await writeSummary(resources, attempt, compacted, fileOps, () => {
    const settings = summarizerSettings(resources, attempt);
    const instructions = compaction.instructions ?? policy.instructions;
    const previousSummary = extractPreviousSummary(plan.history);
    return plan.turnPrefix
      ? resources.llm.summarizeSplitTurn({
          history: { messages: plan.history, previousSummary },
          turnPrefix: { messages: plan.turnPrefix },
          instructions,
          fileOps,
          settings,
          signal: attempt.signal,
        })
      : resources.llm.summarizeMessages({
          messages: plan.history,
          previousSummary,
          instructions,
          fileOps,
          settings,
          signal: attempt.signal,
        });
  });
  return { ...base, ...written, detail: { ...base.detail, ...written.detail } };
}

/** The attempt's summarizer settings; throws `LlmFatalError` when its window cannot fit any summary. */
export function summarizerSettings(resources: WorkflowResources, attempt: Attempt): SummarizerSettings {
  return resolveSummarizerSettings({
    policy: attempt.policy.summarizer,
    session: attempt.model,
    defaultModel: resources.summarizerModel ?? null,
  });
}

/** Cumulative file ops of a compacted range: the previous summary's lists merged with the new messages'. */
export function fileOpsOf(compacted: Message[], fileTools: Attempt['policy']['fileTools']): FileOps {
  return mergeFileOps(
    extractPreviousFileOps(compacted),
    extractFileOps(
      compacted.filter((m) => !m.summary),
      fileTools,
    ),
  );
}

/**
 * Runs the summarizer. A failure that retrying cannot fix (or any failure on the queue's last
 * attempt) falls back to the truncate text when the policy allows it — starting from the part
 * of the summary already written, if chunked summarization got that far; a transient failure on
 * an earlier attempt is rethrown for the queue to retry.
 */
export async function writeSummary(
  resources: WorkflowResources,
  attempt: Attempt,
  compacted: Message[],
  fileOps: FileOps,
  summarize: () => Promise<SummaryResult>,
): Promise<Pick<SummaryOutcome, 'summaryText' | 'writtenBy' | 'llm' | 'fallback' | 'detail'>> {
  try {
    const result = await summarize();
    return {
      summaryText: result.text,
      writtenBy: 'llm',
      llm: {
        model: result.model,
        usage: { input: result.usage.promptTokens, output: result.usage.completionTokens },
        costUsd: result.costUsd,
      },
      fallback: null,
      detail: { calls: result.calls, chunks: result.chunks },
    };
  } catch (error) {
    if (isAbort(error) || (isTransient(error) && !attempt.lastAttempt)) throw error;
    const code = llmFailureCode(error);
    const message = (error as Error).message;
    if (attempt.policy.fallback !== 'truncate')
      throw new CompactionFailedError(code, message, { cause: error });
    resources.log.warn(
      { compactionId: attempt.compaction.id, code, err: message },
      'summarizer failed; falling back to truncation',
    );
    const partial = error instanceof InvalidSummaryError ? error.partialSummary : null;
    const summaryText = buildTruncateSummary(compacted, {
      fileOps,
      fileTools: attempt.policy.fileTools,
      ...(partial ? { previousSummary: partial } : {}),
    });
    return { summaryText, writtenBy: 'truncate', llm: null, fallback: { code, message }, detail: {} };
  }
}

/** An emergency plan's extra pruning of the kept tail, or the verdict that nothing can fit. */
async function applyEmergencyPrune(
  resources: WorkflowResources,
  attempt: Attempt,
  selection: EmergencyPruneSelection | null,
): Promise<{ parts: number; tokens: number }> {
  if (!selection) return { parts: 0, tokens: 0 };
  if (!selection.fits) {
    throw new CompactionFailedError(
      'context_cannot_fit',
      `even with every tool output cleared the recent messages take ${selection.tokensAfter} tokens, more than the model can take`,
    );
  }
  return markPartsCompacted(
    resources.db,
    attempt.session.pk,
    selection.parts.map((p) => ({ seq: p.seq, callId: p.callId })),
    { at: resources.clock(), by: attempt.compaction.id },
  );
}
