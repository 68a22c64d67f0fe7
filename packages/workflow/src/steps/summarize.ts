import {
  countLeadingSummaryMessages,
  extractPreviousFileOps,
  extractPreviousSummary,
  isPinnedMessage,
  isTurnStart,
  keepRecentTokensFor,
  mergeFileOps,
  planCompaction,
  storedTokens,
  usableTokens,
  type CompactionPlan,
  type Message,
} from '@compactor/core';
import type { Attempt } from '../attempt';
import { heldRange, streamedRange, type CompactedRange } from '../compacted-range';
import { loadCoveredView } from '../compaction-view';
import { loadCoveredHistory, type CoveredHistory } from '../covered-history';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { fitOutcome, ledgerInForce } from './fit';
import { preparedOutcome } from './prepared-draft';
import {
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
  const { policy, compaction, model } = attempt;
  const keepRecentTokens = keepRecentTokensFor(
    compaction.reason,
    model,
    policy,
    compaction.keepRecentTokens ?? undefined,
  );
  if (compaction.strategy === 'topic') {
    // The detector's request is drawn from the whole view (core buildTopicDetectionRequest).
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
    const outcome = await topicOutcome(resources, attempt, view);
    const candidate = outcome.kind === 'summary' ? outcome : clampOnly(attempt, view, outcome);
    return fitOutcome(
      resources,
      attempt,
      view,
      candidate,
      keepRecentTokens,
      await ledgerInForce(resources, attempt),
    );
  }
  if (policy.prepare !== null) {
    // A summary written ahead of the trigger that still covers a prefix: no LLM call.
    const prepared = await preparedOutcome(resources, attempt, keepRecentTokens);
    if (prepared) return prepared;
  }
  const { covered, outcome, unheldRequests } = await plannedOutcome(resources, attempt, keepRecentTokens);
  const { view } = covered;
  const candidate = outcome.kind === 'summary' ? outcome : clampOnly(attempt, view, outcome);
  return fitOutcome(
    resources,
    attempt,
    withUnheld(view, covered, unheldRequests),
    candidate,
    keepRecentTokens,
    await ledgerInForce(resources, attempt),
  );
}

/**
 * The summarize and truncate strategies before the fit step: the covered history read after the
 * prune step, from the newest message back only as far as the plan looks (the older messages it
 * compacts are read window by window as the summary is written), core's plan, and its summary.
 * A prepared summary (prepare-summary.ts) is this alone: the compaction that finalizes it fits
 * it to the view as it is then.
 */
export async function plannedOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  keepRecentTokens: number,
): Promise<{ covered: CoveredHistory; outcome: SummarizeOutcome; unheldRequests: Message[] }> {
  const { policy, compaction } = attempt;
  const planOf = (view: readonly Message[]) =>
    planCompaction(view, { keepRecentTokens, force: compaction.force, policy });
  const covered = await loadCoveredHistory(
    resources.db,
    attempt,
    policy,
    (view) => planSettled(planOf(view), view),
    {
      ...(resources.historyWindow?.messages ? { windowMessages: resources.historyWindow.messages } : {}),
      ...(resources.historyWindow?.onRead ? { onWindow: resources.historyWindow.onRead } : {}),
    },
  );
  assertPinnedFit(attempt, covered.view);
  const cut = await cutOutcome(resources, attempt, planOf(covered.view), covered, keepRecentTokens);
  return { covered, ...cut };
}

/**
 * Whether a plan made on the held part of the view is the plan of the whole view: it found a
 * cut (not the forced one, which counts from the oldest message), and when the cut is inside a
 * turn whose prefix goes into the history, that turn starts after the held part's first message
 * (core moves a cut back to its turn's start only when that start is not the first message
 * after the previous summary, which the held part's first message is in the held view alone).
 * Every other rule core applies looks no further back than the held part's opening turn start.
 */
function planSettled(plan: CompactionPlan | null, view: readonly Message[]): boolean {
  if (plan === null || plan.cut === 'forced') return false;
  if (plan.split !== 'prefix-in-history') return true;
  const first = view.find((m) => !m.summary && !isPinnedMessage(m));
  return first !== undefined && plan.history.some((m) => isTurnStart(m) && m.seq > first.seq);
}

/** The summarize and truncate strategies: core's plan, then the LLM's summary or the truncate text. */
async function cutOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  plan: CompactionPlan | null,
  covered: CoveredHistory,
  keepRecentTokens: number,
): Promise<{ outcome: SummarizeOutcome; unheldRequests: Message[] }> {
  const { compaction, policy } = attempt;
  if (!plan) {
    const reason = 'no cut point leaves anything to compact';
    return { outcome: { kind: 'nothing-to-compact', reason }, unheldRequests: [] };
  }
  const range = await compactedRange(plan, covered, policy.fileTools, attempt.signal);
  const { fileOps } = range;
  const base = {
    kind: 'summary' as const,
    boundarySeq: plan.boundarySeq ?? attempt.coversThroughSeq + 1,
    messagesCompacted: range.messagesCompacted,
    fileOps,
    ledger: range.ledger,
    clamps: [],
    detail: {
      keepRecentTokens,
      force: compaction.force,
      cut: plan.cut,
      split: plan.split,
      keptTokens: plan.keptTokens,
    },
  };
  const unheldRequests = range.unheldRequests;
  if (compaction.strategy === 'truncate') {
    const { summaryText, detail, unlistedConstraints } = await truncateSummary(
      attempt,
      range,
      plan.kept,
      fileOps,
    );
    const outcome = {
      ...base,
      summaryText,
      unlistedConstraints,
      writtenBy: 'truncate' as const,
      llm: null,
      fallback: null,
    };
    return { outcome: { ...outcome, detail: { ...base.detail, ...detail } }, unheldRequests };
  }
  const { turnPrefix } = plan;
  const written = await writeSummary(resources, attempt, range, fileOps, plan.kept, () => {
    const settings = summarizerSettings(resources, attempt);
    const instructions = compaction.instructions ?? policy.instructions;
    const previousSummary = extractPreviousSummary(range.leading);
    return turnPrefix
      ? resources.llm.summarizeSplitTurn({
          history: { messages: range.historySource, previousSummary },
          turnPrefix: { messages: turnPrefix },
          instructions,
          fileOps,
          settings,
          signal: attempt.signal,
        })
      : resources.llm.summarizeMessages({
          messages: range.historySource,
          previousSummary,
          instructions,
          fileOps,
          settings,
          signal: attempt.signal,
        });
  });
  const outcome = { ...base, ...written, detail: { ...base.detail, ...written.detail } };
  return { outcome, unheldRequests };
}

/** What the plan compacts: held, or with the view's unread body between the summaries and the held tail. */
async function compactedRange(
  plan: CompactionPlan,
  covered: CoveredHistory,
  fileTools: Attempt['policy']['fileTools'],
  signal: AbortSignal | undefined,
): Promise<CompactedRange> {
  const prefix = plan.turnPrefix ?? [];
  if (covered.body === null) return heldRange(plan.history, prefix, fileTools);
  const leading = countLeadingSummaryMessages(plan.history);
  return streamedRange(
    plan.history.slice(0, leading),
    covered.body,
    { history: plan.history.slice(leading), prefix },
    { fileTools, signal },
  );
}

/**
 * The view fit.ts measures, with the user requests of the messages not held put back where they
 * were: a boundary moved forward reads the summary's facts again from all it covers.
 */
function withUnheld(view: Message[], covered: CoveredHistory, requests: Message[]): Message[] {
  if (covered.body === null || requests.length === 0) return view;
  const { beforeSeq } = covered.body;
  const at = view.findIndex((m) => !m.summary && !isPinnedMessage(m) && m.seq >= beforeSeq);
  return [...view.slice(0, at), ...requests, ...view.slice(at)];
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
