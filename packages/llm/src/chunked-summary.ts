import type { FileOps, Message, SummaryPrompt, SummaryPromptStyle } from '@compactor/core';
import {
  countLeadingSummaryMessages,
  extractPreviousSummary,
  isTurnStart,
  stripFileOpsBlocks,
} from '@compactor/core';
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
import type { FoldLimits, FoldState, Range } from './fold-plan';
import {
  afterAnswer,
  afterCutOff,
  afterOverflow,
  assertRoomForChunks,
  countsWholeFirst,
  crowdedRequest,
  halves,
  inSeveralRequests,
  mayReplan,
  nextChunk,
  perMessageCountLimit,
  SHRINK_ATTEMPTS,
  shrinkRatio,
  startFold,
} from './fold-plan';
import { FoldPrompts } from './fold-prompts';
import {
  arraySource,
  firstWindow,
  isMessageSource,
  MessageWindow,
  type MessageSource,
} from './message-source';
import { shrinkMessage } from './shrink-message';
import type { SummarizeDeps, SummaryResult } from './summarize';
import { summarizePrompt } from './summarize';
import { ZERO_USAGE } from './usage';

export { FOLD_TARGET_SHARE, MAX_CUT_OFFS_IN_A_ROW, MIN_FOLD_TARGET_TOKENS } from './fold-plan';

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

/** One fold in flight: what it works on, its fixed figures, and what it has spent so far. */
interface Fold {
  readonly deps: SummarizeDeps;
  readonly settings: SummarizerSettings;
  readonly signal: AbortSignal | undefined;
  /** The range without the leading summary messages the previous summary stands for. */
  readonly messages: MessageWindow;
  /** How many leading summary messages of the input `messages` leaves out. */
  readonly offset: number;
  readonly prompts: FoldPrompts;
  readonly limits: FoldLimits;
  /** The transcript's bounds on tool results and arguments (the settings'). */
  readonly bounds: { toolResultMaxChars: number; toolArgsMaxChars: number };
  /** Summed over every answered request; read by `summarizeMessages` when an error escapes. */
  readonly spend: { total: LlmSpend };
}

/** What the fold has written so far. */
interface FoldProgress {
  /** The running summary as the next request carries it (see {@link carry}). */
  readonly running: string | null;
  /** The last valid answer, as returned. */
  readonly text: string;
  readonly chunks: number;
  readonly model: string;
}

/** Where the fold stands between two requests: the plan, the requests planned, the summary so far. */
interface FoldStep {
  readonly state: FoldState;
  readonly queue: readonly Range[];
  readonly progress: FoldProgress;
}

/** A prompt ready to send, with its count when fitting it had to count it anyway. */
interface FittedPrompt {
  prompt: SummaryPrompt;
  tokens?: number;
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

/** The running summary as the next request carries it: without file-op blocks (core appends those). */
function carry(summary: string | null): string | null {
  return summary === null ? null : stripFileOpsBlocks(summary) || null;
}

/** Sends the planned requests one by one, feeding each outcome back into the plan. */
async function runFold(fold: Fold, first: FoldStep): Promise<SummaryResult> {
  let step = first;
  while (step.queue.length > 0) {
    const [range, ...rest] = step.queue as [Range, ...Range[]];
    step = await request(fold, { ...step, queue: rest }, range);
  }
  const { usage, costUsd, calls } = fold.spend.total;
  const { text, model, chunks } = step.progress;
  return { text, usage, costUsd, model, calls, chunks, truncated: false };
}

/**
 * The next request(s) for `messages[from…]`: all of it when its prompt fits the budget, else the
 * next chunk, sized around the running summary it will carry (after it succeeds, the rest is
 * planned again around the new one).
 */
async function plan(
  fold: Fold,
  state: FoldState,
  from: number,
  progress: FoldProgress,
): Promise<{ state: FoldState; queue: Range[] }> {
  const whole: Range = { start: from, end: fold.messages.length };
  if (!Number.isFinite(state.budget)) return { state, queue: [whole] };
  if (await wholeFits(fold, state, from, progress.running)) return { state, queue: [whole] };
  const several = inSeveralRequests(state, fold.limits);
  return { state: several, queue: [await planChunk(fold, several, from, progress)] };
}

/**
 * Whether `messages[from…]` fit in one request. The first plan counts the whole prompt (one
 * count in the usual case, where it fits) unless the range's stored tokens say it is far too
 * long; other plans count it only when the per-message counts say it may fit.
 */
async function wholeFits(
  fold: Fold,
  state: FoldState,
  from: number,
  running: string | null,
): Promise<boolean> {
  const { messages, prompts } = fold;
  const fitsWhole = async (): Promise<boolean> => {
    const whole = { start: from, end: messages.length };
    const prompt = await prompts.promptFor(
      whole,
      await messages.slice(from, messages.length),
      running,
      state,
    );
    return prompts.fits(prompt, state.budget);
  };
  if (from === 0 && countsWholeFirst(await prompts.storedTotal(), state.budget)) return fitsWhole();
  const fixed = await prompts.fixedTokens({ start: from, end: from }, running, state);
  const rest = await prompts.transcriptCounts.until(from, perMessageCountLimit(state.budget, fixed));
  return rest.complete && (await fitsWhole());
}

/** The next chunk from `from`, planned around what its prompt holds besides its messages. */
async function planChunk(fold: Fold, state: FoldState, from: number, progress: FoldProgress): Promise<Range> {
  const { messages, prompts } = fold;
  const empty: Range = { start: from, end: from };
  // The instructions with and without the update section a later chunk has.
  const instructions = Math.max(
    await prompts.fixedTokens(empty, null, state),
    await prompts.fixedTokens(empty, 'x', state),
  );
  assertRoomForChunks(state.budget, instructions, fold.limits.maxOutputTokens);
  // What the next chunk's prompt holds besides its messages: instructions, file lists and the
  // running summary as it is now.
  const chunkBudget = state.budget - (await prompts.fixedTokens(empty, progress.running, state));
  const crowded = crowdedRequest(from, state.budget, chunkBudget, progress.chunks);
  if (crowded !== null) return crowded;
  // The first chunk needs the counts only up to the message that does not fit any more.
  const { tokens } = await prompts.transcriptCounts.until(from, chunkBudget);
  const counted = await messages.slice(from, from + tokens.length);
  const turnStarts = new Set(counted.flatMap((m, i) => (isTurnStart(m) ? [i] : [])));
  return nextChunk(from, tokens, chunkBudget, turnStarts);
}

/** Fits, sends and answers the request for `range`; the step after it. */
async function request(fold: Fold, step: FoldStep, range: Range): Promise<FoldStep> {
  const fitted = await fit(fold, step.state, range, step.progress.running);
  if (fitted === 'split') return { ...step, queue: [...halves(range), ...step.queue] };
  const { settings } = fold;
  let result: SummaryResult;
  try {
    result = await summarizePrompt(fold.deps, {
      prompt: fitted.prompt,
      model: settings.model,
      maxOutputTokens: settings.maxOutputTokens,
      maxOutputTokensLimit: settings.maxOutputTokens,
      timeoutMs: settings.timeoutMs,
      signal: fold.signal,
      // A cut-off answer is answered here, with a smaller request.
      cutOffRetry: false,
    });
  } catch (error) {
    if (error instanceof InvalidSummaryError) return afterInvalid(fold, step, range, error);
    return afterError(fold, step, range, fitted, error);
  }
  return afterSummary(fold, step, range, result);
}

/** The prompt for `range` if it fits; `'split'` when a multi-message range must be halved. */
async function fit(
  fold: Fold,
  state: FoldState,
  range: Range,
  running: string | null,
): Promise<FittedPrompt | 'split'> {
  const chunk = await fold.messages.slice(range.start, range.end);
  const prompt = await fold.prompts.promptFor(range, chunk, running, state);
  if (await fold.prompts.fits(prompt, state.budget)) return { prompt };
  if (chunk.length > 1) return 'split';
  return shrunk(fold, state, range, chunk[0] as Message, prompt, running);
}

/** The prompt for a single message that does not fit, with the message cut in the middle to fit. */
async function shrunk(
  fold: Fold,
  state: FoldState,
  range: Range,
  message: Message,
  prompt: SummaryPrompt,
  running: string | null,
): Promise<FittedPrompt> {
  const { prompts, bounds } = fold;
  let tokens = await prompts.count(prompt);
  const fixed = await prompts.fixedTokens(range, running, state);
  let ratio = 1;
  for (let attempt = 0; attempt < SHRINK_ATTEMPTS; attempt += 1) {
    ratio = shrinkRatio(ratio, state.budget, fixed, tokens);
    const cut = await prompts.promptFor(range, [shrinkMessage(message, ratio, bounds)], running, state);
    tokens = await prompts.count(cut);
    if (tokens <= state.budget) return { prompt: cut, tokens };
  }
  throw new LlmOverflowError(
    `message ${message.id} cannot be shrunk into the summarizer's prompt budget of ${state.budget} tokens; not sent`,
    null,
  );
}

/** After a valid answer to `range`: it becomes the running summary, and the rest is planned around it. */
async function afterSummary(
  fold: Fold,
  step: FoldStep,
  range: Range,
  result: SummaryResult,
): Promise<FoldStep> {
  fold.spend.total = addSpend(fold.spend.total, {
    usage: result.usage,
    costUsd: result.costUsd,
    calls: result.calls,
  });
  const progress: FoldProgress = {
    running: carry(result.text),
    text: result.text,
    chunks: step.progress.chunks + 1,
    model: result.model,
  };
  const state = afterAnswer(step.state);
  // The next prompt lists this chunk's files: taken now, then its messages are let go.
  await fold.prompts.done(range);
  // The next chunk is sized around the running summary it will carry.
  if (step.queue.length === 0 && range.end < fold.messages.length) {
    return { ...(await plan(fold, state, range.end, progress)), progress };
  }
  return { state, queue: step.queue, progress };
}

/**
 * After an invalid answer to `range` (paid for): a cut-off one is answered with a smaller
 * request while the plan can make one; anything else ends the fold with the running summary
 * paid for so far, for the truncate fallback.
 */
function afterInvalid(fold: Fold, step: FoldStep, range: Range, error: InvalidSummaryError): FoldStep {
  fold.spend.total = addSpend(fold.spend.total, {
    usage: error.usage,
    costUsd: error.costUsd,
    calls: error.spent?.calls ?? error.attempts,
  });
  if (error.reason === 'cut-off') {
    const smaller = afterCutOff(step.state, fold.limits, range);
    if (smaller !== null)
      return { ...step, state: smaller.state, queue: [...smaller.requests, ...step.queue] };
  }
  const { total } = fold.spend;
  throw new InvalidSummaryError(error.reason, step.state.cutOffsInARow + error.attempts, {
    usage: total.usage,
    costUsd: total.costUsd,
    calls: total.calls,
    partialSummary: step.progress.chunks > 0 ? step.progress.running : null,
    partialSummaryCovers: fold.offset + range.start,
  });
}

/**
 * After a request for `range` failed: an overflow error (the provider says it does not fit
 * although we thought it did) re-plans the rest with a smaller budget while the plan allows;
 * any other error ends the fold.
 */
async function afterError(
  fold: Fold,
  step: FoldStep,
  range: Range,
  fitted: FittedPrompt,
  error: unknown,
): Promise<FoldStep> {
  // Invalid attempts before this error were answered (summarizePrompt says what they cost).
  fold.spend.total = addSpend(fold.spend.total, spentOf(error));
  if (!(error instanceof LlmOverflowError) || !mayReplan(step.state)) throw error;
  const promptTokens = fitted.tokens ?? (await fold.prompts.count(fitted.prompt));
  const state = afterOverflow(step.state, promptTokens, fold.limits.maxOutputTokens);
  if (state === null) throw error;
  return { ...(await plan(fold, state, range.start, step.progress)), progress: step.progress };
}
