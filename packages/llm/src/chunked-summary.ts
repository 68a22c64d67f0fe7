import type { FileOps, Message, SummaryPrompt, SummaryPromptStyle } from '@compactor/core';
import {
  buildSummaryPrompt,
  countLeadingSummaryMessages,
  extractFileOps,
  extractPreviousSummary,
  isTurnStart,
  mergeFileOps,
  serializeTranscript,
  storedTokens,
  stripFileOpsBlocks,
  summaryLengthNote,
} from '@compactor/core';
import { boundFileOps, MIN_CHUNK_TOKENS, planSummaryChunks, promptTokenBudget } from './chunking';
import type { LlmSpend } from './errors';
import {
  addSpend,
  InvalidSummaryError,
  LlmAbortedError,
  LlmError,
  LlmFatalError,
  LlmOverflowError,
  NO_SPEND,
  spentOf,
  withSpent,
} from './errors';
import {
  arraySource,
  firstWindow,
  isMessageSource,
  MessageWindow,
  pacer,
  type MessageSource,
} from './message-source';
import { shrinkMessage } from './shrink-message';
import { TranscriptCounts } from './transcript-counts';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { countPromptTokens, promptTokenBound, summarizePrompt } from './summarize';
import { ZERO_USAGE } from './usage';

/** The policy's `summarizer` section, resolved for one call (see `resolveSummarizerSettings`). */
export interface SummarizerSettings {
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  /** The summarizer model's window; `null` when unknown (then overflow errors teach us). */
  contextWindow: number | null;
  toolResultMaxChars: number;
  toolArgsMaxChars: number;
  /** The policy's `summarizer.prompt` (core `SummaryPromptStyle`); absent: `structured`. */
  prompt?: SummaryPromptStyle;
}

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

/** How often a provider's overflow error makes us re-plan with a smaller budget before giving up. */
const MAX_OVERFLOW_REPLANS = 4;
const SHRINK_ATTEMPTS = 5;

/**
 * Share of `maxOutputTokens` each part of a summary written in several requests is asked to stay
 * within (core's `summaryLengthNote`). The running summary is merged into the next request, and a
 * model asked to keep everything tends to write a bit more each time: without a target below the
 * output limit it grows from chunk to chunk until an answer is cut off at `max_tokens`. The rest
 * of the budget is slack for a model that overshoots the target.
 */
export const FOLD_TARGET_SHARE = 0.5;
/** The smallest length target a cut-off answer can bring the fold down to (or `maxOutputTokens / 2`). */
export const MIN_FOLD_TARGET_TOKENS = 128;
/** Cut-off answers in a row after which the fold gives up; each one made the next request smaller. */
export const MAX_CUT_OFFS_IN_A_ROW = 4;
/** Share of the prompt budget the "files touched so far" lists may take in one request. */
const FILE_LIST_SHARE = 1 / 8;
/**
 * Stored tokens of a range above which the first plan does not count the whole prompt to learn
 * whether it fits: it counts message by message only as far as one request can reach.
 */
const WHOLE_COUNT_MAX_BUDGETS = 2;

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

async function summarizeWithinWindow(
  deps: SummarizeDeps,
  input: SummarizeMessagesInput,
  spend: { total: LlmSpend },
): Promise<SummaryResult> {
  const { settings } = input;
  const kind = input.kind ?? 'history';
  const bounds = {
    toolResultMaxChars: settings.toolResultMaxChars,
    toolArgsMaxChars: settings.toolArgsMaxChars,
  };
  // An array is one window: a short range is read at once.
  const source = isMessageSource(input.messages)
    ? input.messages
    : arraySource(input.messages, Math.max(1, input.messages.length));
  // The leading summary messages are the first few: the first window holds them.
  const opening = await firstWindow(source);
  const given = input.previousSummary === undefined ? extractPreviousSummary(opening) : input.previousSummary;
  const initialSummary = kind === 'history' ? given?.trim() || null : null;
  // The previous summary stands for the leading summary messages (core's prompt drops them too).
  const offset = initialSummary === null ? 0 : countLeadingSummaryMessages(opening);
  const messages = new MessageWindow(source, offset);
  const pace = pacer();
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
  // The prompt that decided the plan is usually the one sent (`plan` counts it, then `fit`
  // builds the same strings again): the last count is reused, not repeated on a huge prompt.
  let lastCounted: { prompt: SummaryPrompt; tokens: number } | null = null;
  const count = async (prompt: SummaryPrompt): Promise<number> => {
    if (lastCounted && lastCounted.prompt.system === prompt.system && lastCounted.prompt.user === prompt.user)
      return lastCounted.tokens;
    const tokens = await countPromptTokens(prompt, deps.countTokens, input.signal);
    lastCounted = { prompt, tokens };
    return tokens;
  };
  /** Whether `prompt` fits the budget: counted only when its byte bound does not already say so. */
  const fits = async (prompt: SummaryPrompt): Promise<boolean> =>
    promptTokenBound(prompt) <= budget || (await count(prompt)) <= budget;

  /** The running summary as the next request carries it: without file-op blocks (core appends those). */
  const carry = (summary: string | null): string | null =>
    summary === null ? null : stripFileOpsBlocks(summary) || null;

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
  /**
   * The length every answer is asked to stay within (core's `summaryLengthNote`); `null` (no
   * note) while the input goes in one request that has not been cut off. Only ever lowered.
   */
  let target: number | null = null;
  const firstTarget = Math.floor(settings.maxOutputTokens * FOLD_TARGET_SHARE);
  const minTarget = Math.min(MIN_FOLD_TARGET_TOKENS, firstTarget);

  // The file ops of the messages before a chunk, extended as the chunks move forward (each
  // message's once): rebuilt from the first message for every chunk's prompt they made a long
  // compaction quadratic, and they could not be with the earlier messages let go.
  let opsUpTo = 0;
  let opsBefore: FileOps | null = null;
  const earlierFileOps = async (start: number): Promise<FileOps | null> => {
    if (start === 0) return null;
    if (start < opsUpTo) return extractFileOps(await messages.slice(0, start));
    if (start > opsUpTo) {
      opsBefore = mergeFileOps(opsBefore, extractFileOps(await messages.slice(opsUpTo, start)));
      opsUpTo = start;
    }
    return opsBefore;
  };

  const promptFor = async (
    range: Range,
    chunk: Message[],
    running: string | null,
  ): Promise<SummaryPrompt> => {
    const whole = range.start === 0 && range.end === messages.length && running === null;
    // A split turn's prefix that needs several chunks is folded with the history update prompt:
    // core's turn-prefix prompt has no update form, and losing the earlier chunks would be worse.
    const chunkKind = kind === 'turn-prefix' && whole ? 'turn-prefix' : 'history';
    const earlierOps = await earlierFileOps(range.start);
    const fileOps = earlierOps ? mergeFileOps(input.fileOps, earlierOps) : (input.fileOps ?? null);
    const prompt = buildSummaryPrompt({
      messages: chunk,
      previousSummary: running,
      instructions: input.instructions ?? null,
      // About 4 characters a token: the exact count of the whole prompt is checked before sending.
      fileOps: boundFileOps(
        fileOps,
        Number.isFinite(budget) ? Math.floor(budget * FILE_LIST_SHARE * 4) : Infinity,
      ),
      kind: chunkKind,
      ...(settings.prompt === undefined ? {} : { style: settings.prompt }),
      ...bounds,
    });
    return target === null ? prompt : { ...prompt, user: `${prompt.user}\n\n${summaryLengthNote(target)}` };
  };

  const transcriptCounts = new TranscriptCounts(
    messages,
    (message) => countText(serializeTranscript([message], bounds)),
    pace,
  );
  /** Stored tokens of the range (the source's own figure when it has one), for the first plan. */
  const storedTotal = async (): Promise<number> => {
    if (source.storedTokens !== undefined) return source.storedTokens;
    let total = 0;
    for await (const window of source.windows(offset)) {
      total += storedTokens(window);
      await pace();
    }
    return total;
  };

  /**
   * The next request(s) for `messages[from…]`: all of it when its prompt fits `budget`, else the
   * next chunk, sized around the running summary it will carry (after it succeeds, the rest is
   * planned again around the new one).
   */
  const plan = async (from: number, running: string | null): Promise<Range[]> => {
    const whole: Range = { start: from, end: messages.length };
    if (!Number.isFinite(budget)) return [whole];
    const emptyRange = { start: from, end: from };
    const fitsWhole = async (): Promise<boolean> =>
      fits(await promptFor(whole, await messages.slice(from, messages.length), running));
    // The first plan counts the whole prompt (one count in the usual case, where it fits) unless
    // the range's stored tokens say it is far too long; other plans count it only when the
    // per-message counts say it may fit.
    const small = from === 0 && (await storedTotal()) <= budget * WHOLE_COUNT_MAX_BUDGETS;
    if (small && (await fitsWhole())) return [whole];
    if (!small) {
      const fixed = await count(await promptFor(emptyRange, [], running));
      const rest = await transcriptCounts.until(from, budget * 1.1 - fixed);
      if (rest.complete && (await fitsWhole())) return [whole];
    }
    // Several requests: from now on each answer is asked to stay well below the output limit.
    target ??= firstTarget;
    // The instructions (with the update section a later chunk has) and a running summary of up
    // to maxOutputTokens must leave room for some transcript, or no chunking can converge.
    const instructions = Math.max(
      await count(await promptFor(emptyRange, [], null)),
      await count(await promptFor(emptyRange, [], 'x')),
    );
    if (budget - instructions - settings.maxOutputTokens < MIN_CHUNK_TOKENS) {
      throw new LlmFatalError(
        `the summarizer window (prompt budget ${budget} tokens) leaves ${budget - instructions - settings.maxOutputTokens} ` +
          `tokens per chunk after instructions and a summary of ${settings.maxOutputTokens} tokens; ` +
          'raise its contextWindow or lower maxOutputTokens',
      );
    }
    // What the next chunk's prompt holds besides its messages: instructions, file lists and
    // the running summary as it is now.
    const chunkBudget = budget - (await count(await promptFor(emptyRange, [], running)));
    if (chunkBudget < MIN_CHUNK_TOKENS) {
      if (chunks === 0) {
        throw new LlmOverflowError(
          `the summarizer window (prompt budget ${budget} tokens) leaves ${chunkBudget} tokens per chunk after ` +
            'instructions and the running summary: the previous summary is too large for this window',
          null,
        );
      }
      // Our own running summary came back longer than we count maxOutputTokens: send one
      // message (cut to fit if need be) with it; the answer is asked to be shorter.
      return [{ start: from, end: from + 1 }];
    }
    // The first chunk needs the counts only up to the message that does not fit any more.
    const { tokens: rest } = await transcriptCounts.until(from, chunkBudget);
    const counted = await messages.slice(from, from + rest.length);
    const turnStarts = new Set(counted.flatMap((m, i) => (isTurnStart(m) ? [i] : [])));
    const [next] = planSummaryChunks({ messageTokens: rest, budgetTokens: chunkBudget, turnStarts });
    return [{ start: from + (next?.start ?? 0), end: from + (next?.end ?? rest.length) }];
  };

  /** The prompt for `range` if it fits; `'split'` when a multi-message range must be halved. */
  const fit = async (
    range: Range,
    running: string | null,
  ): Promise<{ prompt: SummaryPrompt; tokens?: number } | 'split'> => {
    const chunk = await messages.slice(range.start, range.end);
    let prompt = await promptFor(range, chunk, running);
    if (await fits(prompt)) return { prompt };
    if (chunk.length > 1) return 'split';
    let tokens = await count(prompt);
    const [message] = chunk as [Message];
    const fixed = await count(await promptFor(range, [], running));
    let ratio = 1;
    for (let attempt = 0; attempt < SHRINK_ATTEMPTS; attempt += 1) {
      ratio *= Math.max(0, (budget - fixed) / Math.max(1, tokens - fixed)) * 0.9;
      prompt = await promptFor(range, [shrinkMessage(message, ratio, bounds)], running);
      tokens = await count(prompt);
      if (tokens <= budget) return { prompt, tokens };
    }
    throw new LlmOverflowError(
      `message ${message.id} cannot be shrunk into the summarizer's prompt budget of ${budget} tokens; not sent`,
      null,
    );
  };

  /**
   * After an answer to `range` was cut off: a smaller request (half the length target and, for
   * several messages, half of them), or `null` when nothing can be made smaller.
   */
  const smallerAfterCutOff = (range: Range, cutOffsInARow: number): Range[] | null => {
    if (cutOffsInARow >= MAX_CUT_OFFS_IN_A_ROW) return null;
    const lowered = target === null ? firstTarget : Math.max(minTarget, Math.floor(target / 2));
    const several = range.end - range.start > 1;
    if (!several && target !== null && lowered >= target) return null;
    target = lowered;
    if (!several) return [range];
    const middle = range.start + Math.ceil((range.end - range.start) / 2);
    return [
      { start: range.start, end: middle },
      { start: middle, end: range.end },
    ];
  };

  let running = carry(initialSummary);
  let text = running ?? '';
  let chunks = 0;
  let model = settings.model;
  let replans = 0;
  let cutOffsInARow = 0;
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
        // A cut-off answer is answered here, with a smaller request.
        cutOffRetry: false,
      });
    } catch (error) {
      if (error instanceof InvalidSummaryError) {
        spend.total = addSpend(spend.total, {
          usage: error.usage,
          costUsd: error.costUsd,
          calls: error.spent?.calls ?? error.attempts,
        });
        if (error.reason === 'cut-off') {
          const smaller = smallerAfterCutOff(range, cutOffsInARow);
          if (smaller !== null) {
            cutOffsInARow += 1;
            queue.unshift(...smaller);
            continue;
          }
        }
        // Earlier chunks were paid for: hand their running summary to the truncate fallback.
        throw new InvalidSummaryError(error.reason, cutOffsInARow + error.attempts, {
          usage: spend.total.usage,
          costUsd: spend.total.costUsd,
          calls: spend.total.calls,
          partialSummary: chunks > 0 ? running : null,
          partialSummaryCovers: offset + range.start,
        });
      }
      // Invalid attempts before this error were answered (summarizePrompt says what they cost).
      spend.total = addSpend(spend.total, spentOf(error));
      // The provider says it does not fit although we thought it did (unknown window, or its
      // tokenizer counts more than ours): halve the whole request (prompt + output) and plan the
      // rest again. Halving finds an unknown window in a few steps without guessing its size.
      if (!(error instanceof LlmOverflowError) || replans >= MAX_OVERFLOW_REPLANS) throw error;
      const promptTokens = fitted.tokens ?? (await count(fitted.prompt));
      const smaller = Math.floor((promptTokens + settings.maxOutputTokens) / 2) - settings.maxOutputTokens;
      if (smaller < MIN_CHUNK_TOKENS) throw error;
      replans += 1;
      budget = smaller;
      queue = await plan(range.start, running);
      continue;
    }
    spend.total = addSpend(spend.total, {
      usage: result.usage,
      costUsd: result.costUsd,
      calls: result.calls,
    });
    text = result.text;
    running = carry(result.text);
    chunks += 1;
    cutOffsInARow = 0;
    model = result.model;
    // The next prompt lists this chunk's files: taken now, then its messages are let go.
    await earlierFileOps(range.end);
    messages.release(range.end);
    transcriptCounts.forget(range.start, range.end);
    // The next chunk is sized around the running summary it will carry.
    if (queue.length === 0 && range.end < messages.length) queue = await plan(range.end, running);
  }
  const { usage, costUsd, calls } = spend.total;
  return { text, usage, costUsd, model, calls, chunks, truncated: false };
}
