import {
  emergencyRoomTokens,
  storedTokens,
  usableTokens,
  buildTruncateSummary,
  keepRecentTokensFor,
  planCompaction,
  extractPreviousSummary,
  type EmergencyPruneSelection,
} from '@compactor/core';
import { markPartsCompacted } from '@compactor/db';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { fileOpsOf, summarizerSettings, writeSummary, type SummarizeOutcome } from './summary-writing';
import { topicOutcome } from './topic';

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
  // Loaded after the prune step, so it shows the outputs that step cleared (the summarizer
  // reads them as the placeholder).
  const view = await loadCoveredView(
    resources.db,
    attempt.session.pk,
    attempt.coversThroughSeq,
    policy,
    attempt.latestCompleted,
  );
  if (compaction.strategy === 'topic') return topicOutcome(resources, attempt, view);

  const keepRecentTokens = keepRecentTokensFor(
    compaction.reason,
    model,
    policy,
    compaction.keepRecentTokens ?? undefined,
  );
  const plan = planCompaction(view, { keepRecentTokens, force: compaction.force, policy, model });
  if (!plan) return { kind: 'nothing-to-compact', reason: 'no cut point leaves anything to compact' };
  const emergencyPruned = await applyEmergencyPrune(
    resources,
    attempt,
    plan.emergencyPrune,
    storedTokens(plan.pinned),
  );

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

/** An emergency plan's extra pruning of the kept tail, or the verdict that nothing can fit. */
async function applyEmergencyPrune(
  resources: WorkflowResources,
  attempt: Attempt,
  selection: EmergencyPruneSelection | null,
  pinnedTokens: number,
): Promise<{ parts: number; tokens: number }> {
  if (!selection) return { parts: 0, tokens: 0 };
  if (!selection.fits) {
    // Say what took the room: often the pinned system messages, not the recent turn.
    const { model, policy } = attempt;
    const room = emergencyRoomTokens(model, policy, pinnedTokens) ?? 0;
    throw new CompactionFailedError(
      'context_cannot_fit',
      `even with every tool output cleared the recent messages take ${selection.tokensAfter} tokens; ` +
        `the model has room for ${room} (usable input ${usableTokens(model, policy) ?? 0}, minus ` +
        `${pinnedTokens} of pinned system messages and ${policy.summarizer.maxOutputTokens} for the summary)`,
    );
  }
  return markPartsCompacted(
    resources.db,
    attempt.session.pk,
    selection.parts.map((p) => ({ seq: p.seq, callId: p.callId })),
    { at: resources.clock(), by: attempt.compaction.id },
  );
}
