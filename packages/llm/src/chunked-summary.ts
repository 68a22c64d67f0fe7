import type { FileOps, Message } from '@compactor/core';
import { countLeadingSummaryMessages, extractPreviousSummary } from '@compactor/core';
import type { LlmSpend } from './errors';
import { InvalidSummaryError, LlmAbortedError, LlmError, LlmFatalError, NO_SPEND, withSpent } from './errors';
import { carry, type Fold, type FoldProgress } from './fold';
import { runFold } from './fold-loop';
import { plan } from './fold-next-request';
import { startFold } from './fold-plan';
import { FoldPrompts } from './fold-prompts';
import {
  arraySource,
  firstWindow,
  isMessageSource,
  MessageWindow,
  type MessageSource,
} from './message-source';
import type { SummarizerSettings } from './settings';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { ZERO_USAGE } from './usage';

export { FOLD_TARGET_SHARE, MAX_CUT_OFFS_IN_A_ROW, MIN_FOLD_TARGET_TOKENS } from './fold-plan';
export type { SummarizerSettings } from './settings';

/** A range of any size to summarise; `settings` usually come from `resolveSummarizerSettings`. */
export interface SummarizeMessagesInput {
  /**
   * The range to summarise, a previous compaction's summary messages first (as the planner gives
   * it): an array, or a source read window by window (a long range is never held at once).
   */
  messages: Message[] | MessageSource;
  /**
   * The previous summary to merge into (core's update prompt). Absent: read from the leading
   * summary messages (`extractPreviousSummary`; of a source, those of its first window). `null`: none, leading summary messages are then
   * summarised as transcript.
   */
  previousSummary?: string | null;
  instructions?: string | null;
  fileOps?: FileOps | null;
  kind?: 'history' | 'turn-prefix';
  settings: SummarizerSettings;
  signal?: AbortSignal | undefined;
}

/**
 * Summarises messages of any size within the summarizer's window. Shrink first (the transcript
 * bounds tool results and shows pruned outputs as placeholders); if the prompt still does not
 * fit, split the messages into chunks whose prompts fit and fold each into the running summary
 * with core's update prompt. No request known to be too large is ever sent: a chunk that does
 * not fit is split again, a single message that does not fit is cut in the middle. When the
 * window is unknown, a provider overflow error sets the budget and the rest is re-planned.
 *
 * The fold converges for any history size: every request's prompt fits (instructions, bounded
 * file lists, a running summary of at most `maxOutputTokens`, a chunk planned around them), and
 * every part is asked to stay within half the output budget (`FOLD_TARGET_SHARE`), so the
 * running summary does not grow from chunk to chunk. An answer cut off at the output limit is
 * answered with a smaller request, never the same one: half the length target and, for several
 * messages, half of them; after `MAX_CUT_OFFS_IN_A_ROW`, or when nothing can be made smaller,
 * `InvalidSummaryError` `cut-off`.
 *
 * A range that holds nothing but the previous summary comes back as that summary, unchanged and
 * without a call (an "update" over an empty transcript would only paraphrase it). A window too
 * small for the instructions, a summary and some transcript is an `LlmFatalError` (configuration),
 * not an overflow. When a later chunk's output is invalid, the `InvalidSummaryError` carries the
 * running summary paid for so far (`partialSummary`). Any other error thrown after answered
 * requests carries what they cost (`spent`).
 */
export async function summarizeMessages(
  deps: SummarizeDeps,
  input: SummarizeMessagesInput,
): Promise<SummaryResult> {
  const spend: { total: LlmSpend } = { total: NO_SPEND };
  try {
    return await summarizeWithinWindow(deps, input, spend);
  } catch (error) {
    // Token counting rejects with a DOMException on abort: report it like an aborted request.
    if (input.signal?.aborted && !(error instanceof LlmError)) {
      throw withSpent(
        new LlmAbortedError('the summary was cancelled by the caller', { cause: error }),
        spend.total,
      );
    }
    // An InvalidSummaryError is built with the total already.
    if (error instanceof LlmError && !(error instanceof InvalidSummaryError)) {
      throw withSpent(error, spend.total);
    }
    throw error;
  }
}
/** Opens the range, plans the first request(s) and runs the fold. */
async function summarizeWithinWindow(
  deps: SummarizeDeps,
  input: SummarizeMessagesInput,
  spend: { total: LlmSpend },
): Promise<SummaryResult> {
  const { settings } = input;
  const { source, offset, initialSummary, messages } = await openRange(input);
  if (messages.length === 0) {
    if (initialSummary === null)
      throw new LlmFatalError('nothing to summarize: no messages and no previous summary');
    return {
      text: initialSummary,
      usage: ZERO_USAGE,
      costUsd: 0,
      model: settings.model,
      calls: 0,
      chunks: 0,
      truncated: false,
    };
  }
  const { state, limits } = startFold(settings);
  const bounds = {
    toolResultMaxChars: settings.toolResultMaxChars,
    toolArgsMaxChars: settings.toolArgsMaxChars,
  };
  const prompts = new FoldPrompts({
    messages,
    source,
    offset,
    kind: input.kind ?? 'history',
    instructions: input.instructions ?? null,
    fileOps: input.fileOps ?? null,
    style: settings.prompt,
    bounds,
    countTokens: deps.countTokens,
    signal: input.signal,
  });
  const { signal } = input;
  const fold: Fold = { deps, settings, signal, messages, offset, prompts, limits, bounds, spend };
  const running = carry(initialSummary);
  const progress: FoldProgress = { running, text: running ?? '', chunks: 0, model: settings.model };
  return runFold(fold, { ...(await plan(fold, state, 0, progress)), progress });
}

/**
 * The range to summarise as a window of messages, and the previous summary it merges into: given,
 * or read from the leading summary messages (which it then stands for, and which are left out).
 */
async function openRange(input: SummarizeMessagesInput): Promise<{
  source: MessageSource;
  offset: number;
  initialSummary: string | null;
  messages: MessageWindow;
}> {
  // An array is one window: a short range is read at once.
  const source = isMessageSource(input.messages)
    ? input.messages
    : arraySource(input.messages, Math.max(1, input.messages.length));
  // The leading summary messages are the first few: the first window holds them.
  const opening = await firstWindow(source);
  const given = input.previousSummary === undefined ? extractPreviousSummary(opening) : input.previousSummary;
  const initialSummary = (input.kind ?? 'history') === 'history' ? given?.trim() || null : null;
  // The previous summary stands for the leading summary messages (core's prompt drops them too).
  const offset = initialSummary === null ? 0 : countLeadingSummaryMessages(opening);
  return { source, offset, initialSummary, messages: new MessageWindow(source, offset) };
}
