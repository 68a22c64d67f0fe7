import {
  extractPreviousFileOps,
  extractPreviousSummary,
  isPinnedMessage,
  keepRecentTokensFor,
  mergeFileOps,
  planCompaction,
  storedTokens,
  usableTokens,
  type Message,
} from '@compactor/core';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { fitOutcome } from './fit';
import {
  fileOpsOf,
  summarizerSettings,
  truncateSummary,
  writeSummary,
  type SummarizeOutcome,
  type SummaryOutcome,
} from './summary-writing';
import { topicOutcome } from './topic';

/**
 * Plans the cut (core), then writes the summary: the LLM for `summarize` (split turns as two
 * concurrent summaries), the fixed truncate text for `truncate`, topic detection first for
 * `topic`. Then the result is made to fit the window (steps/fit.ts): kept parts too big for it
 * are clamped, and when no cut is possible but the view is still too big, the compaction only
 * clamps (the previous summary carried over). Fails with `context_cannot_fit` only when the
 * pinned system messages alone exceed the usable input.
 */
export async function summarizeStep(
  resources: WorkflowResources,
  attempt: Attempt,
): Promise<SummarizeOutcome> {
  const { policy } = attempt;
  // Loaded after the prune step, so it shows the outputs that step cleared (the summarizer
  // reads them as the placeholder).
  const view = await loadCoveredView(
    resources.db,
    attempt.session.pk,
    attempt.coversThroughSeq,
    policy,
    attempt.latestCompleted,
  );
  assertPinnedFit(attempt, view);
  const { compaction, model } = attempt;
  const keepRecentTokens = keepRecentTokensFor(
    compaction.reason,
    model,
    policy,
    compaction.keepRecentTokens ?? undefined,
  );
  const outcome =
    compaction.strategy === 'topic'
      ? await topicOutcome(resources, attempt, view)
      : await cutOutcome(resources, attempt, view, keepRecentTokens);
  const candidate = outcome.kind === 'summary' ? outcome : clampOnly(attempt, view, outcome);
  return fitOutcome(resources, attempt, view, candidate, keepRecentTokens);
}

/** The summarize and truncate strategies: core's plan, then the LLM's summary or the truncate text. */
async function cutOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  view: Message[],
  keepRecentTokens: number,
): Promise<SummarizeOutcome> {
  const { compaction, policy } = attempt;
  const plan = planCompaction(view, { keepRecentTokens, force: compaction.force, policy });
  if (!plan) return { kind: 'nothing-to-compact', reason: 'no cut point leaves anything to compact' };

  const compacted = [...plan.history, ...(plan.turnPrefix ?? [])];
  const fileOps = fileOpsOf(compacted, policy.fileTools);
  const base = {
    kind: 'summary' as const,
    boundarySeq: plan.boundarySeq ?? attempt.coversThroughSeq + 1,
    messagesCompacted: compacted.filter((m) => !m.summary).length,
    fileOps,
    clamps: [],
    detail: {
      keepRecentTokens,
      force: compaction.force,
      cut: plan.cut,
      split: plan.split,
      keptTokens: plan.keptTokens,
    },
  };
  if (compaction.strategy === 'truncate') {
    const { summaryText, detail } = truncateSummary(attempt, compacted, plan.kept, fileOps);
    return {
      ...base,
      summaryText,
      writtenBy: 'truncate',
      llm: null,
      fallback: null,
      detail: { ...base.detail, ...detail },
    };
  }
  const written = await writeSummary(resources, attempt, compacted, fileOps, plan.kept, () => {
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

/**
 * When no cut is possible (the view is the previous summary and a giant newest turn), the only
 * way to fit is to clamp what is kept: a compaction that keeps the boundary where it was and
 * carries the previous summary over unchanged. fitOutcome decides whether it helps.
 */
function clampOnly(
  attempt: Attempt,
  view: Message[],
  nothing: Extract<SummarizeOutcome, { kind: 'nothing-to-compact' }>,
): SummaryOutcome | typeof nothing {
  const pinOn = attempt.policy.pinSystemMessages;
  // Pinned system messages come first in the view, before the summary these read.
  const unpinned = pinOn ? view.filter((m) => !isPinnedMessage(m)) : view;
  const first = unpinned.find((m) => !m.summary);
  if (!first) return nothing;
  const previous = extractPreviousSummary(unpinned);
  return {
    kind: 'summary',
    summaryText: previous,
    boundarySeq: first.seq,
    messagesCompacted: 0,
    fileOps: mergeFileOps(extractPreviousFileOps(unpinned)),
    writtenBy: previous === null ? 'none' : 'previous-summary',
    llm: null,
    fallback: null,
    clamps: [],
    detail: { clampOnly: true, noCut: nothing.reason },
  };
}

/**
 * Pinned system messages are never compacted: when they alone take more than the model accepts,
 * no compaction can make the session fit, and it says so before paying for a summary.
 */
function assertPinnedFit(attempt: Attempt, view: Message[]): void {
  if (!attempt.policy.pinSystemMessages) return;
  const usable = usableTokens(attempt.model, attempt.policy);
  if (usable === null) return;
  const pinned = storedTokens(view.filter(isPinnedMessage));
  if (pinned > usable) {
    throw new CompactionFailedError(
      'context_cannot_fit',
      `the pinned system messages alone take ${pinned} tokens; the model accepts ${usable} ` +
        `(shorten the system prompt or use a model with a larger window)`,
    );
  }
}
