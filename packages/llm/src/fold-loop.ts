/**
 * The request loop of a fold: each planned request is fitted to the budget, sent, and its
 * outcome (a valid answer, an invalid or cut-off one, an overflow error) fed back into the plan.
 */
import type { Message, SummaryPrompt } from '@compactor/core';
import { addSpend, InvalidSummaryError, LlmOverflowError, spentOf } from './errors';
import { carry, type Fold, type FoldProgress } from './fold';
import type { FoldState, Range } from './fold-plan';
import {
  afterAnswer,
  afterCutOff,
  afterOverflow,
  halves,
  mayReplan,
  SHRINK_ATTEMPTS,
  shrinkRatio,
} from './fold-plan';
import { plan } from './fold-next-request';
import { shrinkMessage } from './shrink-message';
import type { SummaryResult } from './summarize';
import { summarizePrompt } from './summarize';

/** Where the fold stands between two requests: the plan, the requests planned, the summary so far. */
export interface FoldStep {
  readonly state: FoldState;
  readonly queue: readonly Range[];
  readonly progress: FoldProgress;
}

/** A prompt ready to send, with its count when fitting it had to count it anyway. */
interface FittedPrompt {
  prompt: SummaryPrompt;
  tokens?: number;
}

/** Sends the planned requests one by one, feeding each outcome back into the plan. */
export async function runFold(fold: Fold, first: FoldStep): Promise<SummaryResult> {
  let step = first;
  while (step.queue.length > 0) {
    const [range, ...rest] = step.queue as [Range, ...Range[]];
    step = await request(fold, { ...step, queue: rest }, range);
  }
  const { usage, costUsd, calls } = fold.spend.total;
  const { text, model, chunks } = step.progress;
  return { text, usage, costUsd, model, calls, chunks, truncated: false };
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
