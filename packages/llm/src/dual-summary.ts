/**
 * Opal's dual summary for a split turn (core's `planCompaction` decides when a turn is split; this
 * file only writes the two summaries): the history before the turn and the turn's compacted
 * prefix, requested concurrently and joined.
 */
import type { FileOps, Message } from '@compactor/core';
import { countLeadingSummaryMessages, extractPreviousSummary, joinSplitTurnSummaries } from '@compactor/core';
import type { SummarizerSettings } from './chunked-summary';
import { summarizeMessages } from './chunked-summary';
import { firstWindow, isMessageSource, type MessageSource } from './message-source';
import type { LlmSpend } from './errors';
import { addSpend, InvalidSummaryError, LlmError, NO_SPEND, spentOf, withSpent } from './errors';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { addCost, addUsage } from './usage';

/** Input of {@link summarizeSplitTurn}: core's plan `history` and `turnPrefix`, summarised concurrently. */
export interface SplitTurnInput {
  /**
   * Everything before the split turn (core's `plan.history`: the previous compaction's summary
   * messages first, possibly nothing else). `previousSummary` absent: read from those messages.
   */
  history: { messages: Message[] | MessageSource; previousSummary?: string | null };
  /** The compacted start of the turn whose end is kept verbatim (≥ 5 messages, Opal). */
  turnPrefix: { messages: Message[] };
  instructions?: string | null;
  fileOps?: FileOps | null;
  settings: SummarizerSettings;
  signal?: AbortSignal | undefined;
}

/** The joined summary (`text`) and its two halves; usage, cost and calls cover both halves. */
export interface SplitTurnSummaryResult extends SummaryResult {
  /** `null` when there was no history before the turn. */
  historySummary: string | null;
  turnPrefixSummary: string;
}

/**
 * Opal's dual summary for a cut inside a turn: the history summary and the turn-prefix summary
 * are requested concurrently (they do not depend on each other), then joined with core's
 * `joinSplitTurnSummaries`. If either fails the other is cancelled: its result would be wasted.
 * A history that is only the previous summary is not sent again: that summary is the history
 * half as it is (no call); with no previous summary either, there is no history half.
 * An `InvalidSummaryError` keeps its `partialSummary` only when the history half failed (it then
 * covers `history.messages`); one from the turn-prefix half is rethrown without it, since its
 * count would refer to other messages. The error thrown (the first half's failure) carries what
 * both halves had paid for: its `spent`, and an `InvalidSummaryError`'s `usage` and `costUsd`,
 * include the other half's answered requests, finished or cancelled.
 */
export async function summarizeSplitTurn(
  deps: SummarizeDeps,
  input: SplitTurnInput,
): Promise<SplitTurnSummaryResult> {
  const sibling = new AbortController();
  const onAbort = (): void => sibling.abort(input.signal?.reason);
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) sibling.abort(input.signal.reason);
  // The first failure is the one reported; the other half's is usually our own cancellation.
  const failures: unknown[] = [];
  const cancelSiblingOnFailure = <T>(promise: Promise<T>): Promise<T> =>
    promise.catch((error: unknown) => {
      failures.push(error);
      sibling.abort(error);
      throw error;
    });

  const common = {
    instructions: input.instructions ?? null,
    fileOps: input.fileOps ?? null,
    settings: input.settings,
    signal: sibling.signal,
  };
  const historyMessages = input.history.messages;
  // The leading summary messages are the first few: a source's first window holds them.
  const opening = isMessageSource(historyMessages) ? await firstWindow(historyMessages) : historyMessages;
  const given = input.history.previousSummary;
  const previousSummary = (given === undefined ? extractPreviousSummary(opening) : given)?.trim() || null;
  // Only the previous summary's messages (or nothing) before the turn: nothing new to merge,
  // unless the caller said explicitly (`null`) to read those messages as transcript.
  const newHistory = historyMessages.length > countLeadingSummaryMessages(opening);
  const historyCall: Promise<SummaryResult | null> =
    newHistory || (given === null && historyMessages.length > 0)
      ? summarizeMessages(deps, {
          ...common,
          messages: input.history.messages,
          previousSummary,
          kind: 'history',
        })
      : Promise.resolve(null);
  const prefixCall = summarizeMessages(deps, {
    ...common,
    messages: input.turnPrefix.messages,
    kind: 'turn-prefix',
  }).catch((error: unknown) => {
    throw error instanceof InvalidSummaryError
      ? new InvalidSummaryError(error.reason, error.attempts, {
          usage: error.usage,
          costUsd: error.costUsd,
          ...(error.spent ? { calls: error.spent.calls } : {}),
        })
      : error;
  });

  try {
    // Both halves settle before this returns or throws: a failure cancels the other half, and
    // what that half had already paid for is reported with the failure (`spent`).
    const [historyOutcome, prefixOutcome] = await Promise.allSettled([
      cancelSiblingOnFailure(historyCall),
      cancelSiblingOnFailure(prefixCall),
    ]);
    if (historyOutcome.status === 'rejected' || prefixOutcome.status === 'rejected') {
      const [failure] = failures;
      if (!(failure instanceof LlmError)) throw failure;
      throw withSpent(failure, addSpend(spentOfHalf(historyOutcome), spentOfHalf(prefixOutcome)));
    }
    const history = historyOutcome.value;
    const prefix = prefixOutcome.value;
    // No history messages but a previous summary: that summary is still the history.
    const historySummary = history?.text ?? previousSummary;
    return {
      text: joinSplitTurnSummaries(historySummary, prefix.text),
      historySummary,
      turnPrefixSummary: prefix.text,
      usage: history ? addUsage(history.usage, prefix.usage) : prefix.usage,
      costUsd: history ? addCost(history.costUsd, prefix.costUsd) : prefix.costUsd,
      model: prefix.model,
      calls: (history?.calls ?? 0) + prefix.calls,
      chunks: (history?.chunks ?? 0) + prefix.chunks,
      truncated: false,
    };
  } finally {
    input.signal?.removeEventListener('abort', onAbort);
  }
}

/** What one half paid for: its result, or what its error says it had spent. */
function spentOfHalf(outcome: PromiseSettledResult<SummaryResult | null>): LlmSpend {
  if (outcome.status === 'rejected') return spentOf(outcome.reason);
  const result = outcome.value;
  return result === null ? NO_SPEND : { usage: result.usage, costUsd: result.costUsd, calls: result.calls };
}
