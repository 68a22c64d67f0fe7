import type { FileOps, Message, SummaryPrompt } from '@compactor/core';
import {
  buildSummaryPrompt,
  countLeadingSummaryMessages,
  extractFileOps,
  extractPreviousSummary,
  isTurnStart,
  mergeFileOps,
  serializeTranscript,
} from '@compactor/core';
import { MIN_CHUNK_TOKENS, planSummaryChunks, promptTokenBudget } from './chunking';
import { InvalidSummaryError, LlmAbortedError, LlmError, LlmFatalError, LlmOverflowError } from './errors';
import { shrinkMessage } from './shrink-message';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { countPromptTokens, summarizePrompt } from './summarize';
import { addCost, addUsage, ZERO_USAGE } from './usage';

/** The policy's `summarizer` section, resolved for one call (see `resolveSummarizerSettings`). */
export interface SummarizerSettings {
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  /** The summarizer model's window; `null` when unknown (then overflow errors teach us). */
  contextWindow: number | null;
  toolResultMaxChars: number;
  toolArgsMaxChars: number;
}

/** A range of any size to summarise; `settings` usually come from `resolveSummarizerSettings`. */
export interface SummarizeMessagesInput {
  /** The range to summarise, a previous compaction's summary messages first (as the planner gives it). */
  messages: Message[];
  /**
   * The previous summary to merge into (core's update prompt). Absent: read from the leading
   * summary messages (`extractPreviousSummary`). `null`: none, leading summary messages are then
   * summarised as transcript.
   */
  previousSummary?: string | null;
  instructions?: string | null;
  fileOps?: FileOps | null;
  kind?: 'history' | 'turn-prefix';
  settings: SummarizerSettings;
  signal?: AbortSignal | undefined;
}

/** How often a provider's overflow error makes us re-plan with a smaller budget before giving up. */
const MAX_OVERFLOW_REPLANS = 4;
const SHRINK_ATTEMPTS = 5;

interface Range {
  start: number;
  end: number;
}

/**
 * Summarises messages of any size within the summarizer's window. Shrink first (the transcript
 * bounds tool results and shows pruned outputs as placeholders); if the prompt still does not
 * fit, split the messages into chunks whose prompts fit and fold each into the running summary
 * with core's update prompt. No request known to be too large is ever sent: a chunk that does
 * not fit is split again, a single message that does not fit is cut in the middle. When the
 * window is unknown, a provider overflow error sets the budget and the rest is re-planned.
 *
 * A range that holds nothing but the previous summary comes back as that summary, unchanged and
 * without a call (an "update" over an empty transcript would only paraphrase it). A window too
 * small for the instructions, a summary and some transcript is an `LlmFatalError` (configuration),
 * not an overflow. When a later chunk's output is invalid, the `InvalidSummaryError` carries the
 * running summary paid for so far (`partialSummary`).
 */
export async function summarizeMessages(
  deps: SummarizeDeps,
  input: SummarizeMessagesInput,
): Promise<SummaryResult> {
  try {
    return await summarizeWithinWindow(deps, input);
  } catch (error) {
    // Token counting rejects with a DOMException on abort: report it like an aborted request.
    if (input.signal?.aborted && !(error instanceof LlmError)) {
      throw new LlmAbortedError('the summary was cancelled by the caller', { cause: error });
    }
    throw error;
  }
}

async function summarizeWithinWindow(
  deps: SummarizeDeps,
  input: SummarizeMessagesInput,
): Promise<SummaryResult> {
  const { settings } = input;
  const kind = input.kind ?? 'history';
  const bounds = {
    toolResultMaxChars: settings.toolResultMaxChars,
    toolArgsMaxChars: settings.toolArgsMaxChars,
  };
  const given =
    input.previousSummary === undefined ? extractPreviousSummary(input.messages) : input.previousSummary;
  const initialSummary = kind === 'history' ? given?.trim() || null : null;
  // The previous summary stands for the leading summary messages (core's prompt drops them too).
  const offset = initialSummary === null ? 0 : countLeadingSummaryMessages(input.messages);
  const messages = input.messages.slice(offset);
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
  // Counting a huge transcript takes a while: a cancelled compaction stops counting too.
  const countText = (text: string): number | Promise<number> =>
    deps.countTokens(text, { signal: input.signal });
  const count = (prompt: SummaryPrompt): Promise<number> =>
    countPromptTokens(prompt, deps.countTokens, input.signal);

  const promptFor = (range: Range, chunk: Message[], running: string | null): SummaryPrompt => {
    const whole = range.start === 0 && range.end === messages.length && running === initialSummary;
    // A split turn's prefix that needs several chunks is folded with the history update prompt:
    // core's turn-prefix prompt has no update form, and losing the earlier chunks would be worse.
    const chunkKind = kind === 'turn-prefix' && whole ? 'turn-prefix' : 'history';
    const earlierOps = range.start > 0 ? extractFileOps(messages.slice(0, range.start)) : null;
    return buildSummaryPrompt({
      messages: chunk,
      previousSummary: running,
      instructions: input.instructions ?? null,
      fileOps: earlierOps ? mergeFileOps(input.fileOps, earlierOps) : (input.fileOps ?? null),
      kind: chunkKind,
      ...bounds,
    });
  };

  let budget =
    settings.contextWindow === null
      ? Number.POSITIVE_INFINITY
      : promptTokenBudget({
          contextWindow: settings.contextWindow,
          maxOutputTokens: settings.maxOutputTokens,
        });
  if (budget <= 0) {
    throw new LlmFatalError(
      `maxOutputTokens ${settings.maxOutputTokens} leaves no room for a prompt in the ${settings.contextWindow}-token window of ${settings.model}`,
    );
  }

  /** Ranges of `messages[from…]` whose prompts should fit `budget`, from per-message counts. */
  const plan = async (from: number, running: string | null): Promise<Range[]> => {
    const whole: Range = { start: from, end: messages.length };
    if (
      !Number.isFinite(budget) ||
      (await count(promptFor(whole, messages.slice(from), running))) <= budget
    ) {
      return [whole];
    }
    const emptyRange = { start: from, end: from };
    // The instructions (with the update section a later chunk has), and room for the running
    // summary: the current one, or a summary of up to maxOutputTokens after the next chunk.
    const instructions = Math.max(
      await count(promptFor(emptyRange, [], null)),
      await count(promptFor(emptyRange, [], 'x')),
    );
    const summaryReserve = Math.max(
      settings.maxOutputTokens,
      running === null ? 0 : await countText(running),
    );
    const chunkBudget = budget - instructions - summaryReserve;
    if (chunkBudget < MIN_CHUNK_TOKENS) {
      const message =
        `the summarizer window (prompt budget ${budget} tokens) leaves ${chunkBudget} tokens per chunk after ` +
        `instructions and the running summary`;
      // The window cannot even hold the instructions and a summary of maxOutputTokens: a
      // configuration problem no compaction can fix. Otherwise the running summary is too large.
      if (budget - instructions - settings.maxOutputTokens < MIN_CHUNK_TOKENS) {
        throw new LlmFatalError(`${message}; raise its contextWindow or lower maxOutputTokens`);
      }
      throw new LlmOverflowError(`${message}: the previous summary is too large for this window`, null);
    }
    const rest = messages.slice(from);
    // +1: the blank line between transcript blocks.
    const messageTokens = await Promise.all(
      rest.map(async (m) => (await countText(serializeTranscript([m], bounds))) + 1),
    );
    const turnStarts = new Set(rest.flatMap((m, i) => (isTurnStart(m) ? [i] : [])));
    return planSummaryChunks({ messageTokens, budgetTokens: chunkBudget, turnStarts }).map((chunk) => ({
      start: from + chunk.start,
      end: from + chunk.end,
    }));
  };

  /** The prompt for `range` if it fits; `'split'` when a multi-message range must be halved. */
  const fit = async (
    range: Range,
    running: string | null,
  ): Promise<{ prompt: SummaryPrompt; tokens: number } | 'split'> => {
    const chunk = messages.slice(range.start, range.end);
    let prompt = promptFor(range, chunk, running);
    let tokens = await count(prompt);
    if (tokens <= budget) return { prompt, tokens };
    if (chunk.length > 1) return 'split';
    const [message] = chunk as [Message];
    const fixed = await count(promptFor(range, [], running));
    let ratio = 1;
    for (let attempt = 0; attempt < SHRINK_ATTEMPTS; attempt += 1) {
      ratio *= Math.max(0, (budget - fixed) / Math.max(1, tokens - fixed)) * 0.9;
      prompt = promptFor(range, [shrinkMessage(message, ratio, bounds)], running);
      tokens = await count(prompt);
      if (tokens <= budget) return { prompt, tokens };
    }
    throw new LlmOverflowError(
      `message ${message.id} cannot be shrunk into the summarizer's prompt budget of ${budget} tokens; not sent`,
      null,
    );
  };

  let running = initialSummary;
  let usage = ZERO_USAGE;
  let costUsd: number | null = 0;
  let calls = 0;
  let chunks = 0;
  let model = settings.model;
  let replans = 0;
  let queue = await plan(0, running);

  while (queue.length > 0) {
    const range = queue.shift() as Range;
    const fitted = await fit(range, running);
    if (fitted === 'split') {
      const middle = range.start + Math.ceil((range.end - range.start) / 2);
      queue.unshift({ start: range.start, end: middle }, { start: middle, end: range.end });
      continue;
    }
    let result: SummaryResult;
    try {
      result = await summarizePrompt(deps, {
        prompt: fitted.prompt,
        model: settings.model,
        maxOutputTokens: settings.maxOutputTokens,
        maxOutputTokensLimit: settings.maxOutputTokens,
        timeoutMs: settings.timeoutMs,
        signal: input.signal,
      });
    } catch (error) {
      if (error instanceof InvalidSummaryError) {
        // Earlier chunks were paid for: hand their running summary to the truncate fallback.
        throw new InvalidSummaryError(error.reason, error.attempts, {
          usage: addUsage(usage, error.usage),
          costUsd: addCost(costUsd, error.costUsd),
          partialSummary: chunks > 0 ? running : null,
          partialSummaryCovers: offset + range.start,
        });
      }
      // The provider says it does not fit although we thought it did (unknown window, or its
      // tokenizer counts more than ours): halve the whole request (prompt + output) and plan the
      // rest again. Halving finds an unknown window in a few steps without guessing its size.
      const smaller = Math.floor((fitted.tokens + settings.maxOutputTokens) / 2) - settings.maxOutputTokens;
      if (
        !(error instanceof LlmOverflowError) ||
        replans >= MAX_OVERFLOW_REPLANS ||
        smaller < MIN_CHUNK_TOKENS
      ) {
        throw error;
      }
      replans += 1;
      budget = smaller;
      queue = await plan(range.start, running);
      continue;
    }
    running = result.text;
    usage = addUsage(usage, result.usage);
    costUsd = addCost(costUsd, result.costUsd);
    calls += result.calls;
    chunks += 1;
    model = result.model;
  }
  return { text: running ?? '', usage, costUsd, model, calls, chunks, truncated: false };
}
