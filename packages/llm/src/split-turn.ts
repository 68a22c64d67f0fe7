import type { FileOps, Message } from '@compactor/core';
import { joinSplitTurnSummaries } from '@compactor/core';
import type { SummarizerSettings } from './chunked-summary';
import { summarizeMessages } from './chunked-summary';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { addCost, addUsage } from './usage';

export interface SplitTurnInput {
  /** Everything before the split turn, with the previous compaction's summary if any. */
  history: { messages: Message[]; previousSummary?: string | null };
  /** The compacted start of the turn whose end is kept verbatim (≥ 5 messages, Opal). */
  turnPrefix: { messages: Message[] };
  instructions?: string | null;
  fileOps?: FileOps | null;
  settings: SummarizerSettings;
  signal?: AbortSignal | undefined;
}

export interface SplitTurnSummaryResult extends SummaryResult {
  /** `null` when there was no history before the turn. */
  historySummary: string | null;
  turnPrefixSummary: string;
}

/**
 * Opal's dual summary for a cut inside a turn: the history summary and the turn-prefix summary
 * are requested concurrently (they do not depend on each other), then joined with core's
 * `joinSplitTurnSummaries`. If either fails the other is cancelled: its result would be wasted.
 */
export async function summarizeSplitTurn(
  deps: SummarizeDeps,
  input: SplitTurnInput,
): Promise<SplitTurnSummaryResult> {
  const sibling = new AbortController();
  const onAbort = (): void => sibling.abort(input.signal?.reason);
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) sibling.abort(input.signal.reason);
  const cancelSiblingOnFailure = <T>(promise: Promise<T>): Promise<T> =>
    promise.catch((error: unknown) => {
      sibling.abort(error);
      throw error;
    });

  const common = {
    instructions: input.instructions ?? null,
    fileOps: input.fileOps ?? null,
    settings: input.settings,
    signal: sibling.signal,
  };
  const previousSummary = input.history.previousSummary?.trim() || null;
  const historyCall: Promise<SummaryResult | null> =
    input.history.messages.length > 0
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
  });

  try {
    const [history, prefix] = await Promise.all([
      cancelSiblingOnFailure(historyCall),
      cancelSiblingOnFailure(prefixCall),
    ]);
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
      truncated: (history?.truncated ?? false) || prefix.truncated,
    };
  } finally {
    input.signal?.removeEventListener('abort', onAbort);
  }
}
