import type { SummaryPrompt } from '@compactor/core';
import { summaryCutOffNote, validateSummaryOutput } from '@compactor/core';
import type { ChatCompleter, CompletionResult } from './client';
import { CHAT_FRAMING_TOKENS } from './chunking';
import type { CountTokensAsync } from './count-tokens';
import { InvalidSummaryError, LlmError, LlmOverflowError, withSpent } from './errors';
import type { LlmUsage } from './usage';
import { addCost, addUsage, ZERO_USAGE } from './usage';

/** One summary from one core-built prompt; invalid or cut-off answers are retried ({@link SummarizeDeps}). */
export interface SummarizeRequest {
  /** Built by core's `buildSummaryPrompt`. */
  prompt: SummaryPrompt;
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /**
   * The summarizer's window when known: a prompt that cannot fit is refused here, before it is
   * sent (it would only come back as an overflow error after a round trip, or worse, be
   * silently truncated by the server).
   */
  contextWindow?: number | null;
  /**
   * The largest output budget the retry after a cut-off answer may ask for (the clamp of
   * `resolveSummarizerSettings`). Default `maxOutputTokens`: the retry then asks for a shorter
   * summary within the same budget.
   */
  maxOutputTokensLimit?: number;
  /**
   * `false`: a cut-off answer is rejected at once (`InvalidSummaryError` `cut-off`) instead of
   * being retried with the same request and a note. For callers that answer a cut-off with a
   * smaller request themselves (`summarizeMessages`). Default `true`.
   */
  cutOffRetry?: boolean;
}

/** A validated summary and what it cost, summed over every call (retries and chunks included). */
export interface SummaryResult {
  /** The validated summary (unwrapped from fences or `<summary>` tags). */
  text: string;
  /** Summed over every call made, invalid attempts included: they were paid for. */
  usage: LlmUsage;
  costUsd: number | null;
  /** The model that answered the last call. */
  model: string;
  /** Requests sent. */
  calls: number;
  /** Chunks folded into the summary (1 when the input fit in one request). */
  chunks: number;
  /**
   * Always `false`: a summary cut off at the output limit (`finish_reason: length`) is never
   * returned; it is retried once, then rejected with `InvalidSummaryError` (`cut-off`).
   * @deprecated Kept so existing readers compile; remove with them.
   */
  truncated: boolean;
}

/** What the summarize functions call out to: the chat completer, and a token counter to fit prompts. */
export interface SummarizeDeps {
  completer: ChatCompleter;
  countTokens: CountTokensAsync;
  /** Extra attempts after an invalid output (empty, echo, tool call, cut off). Default 1. */
  invalidOutputRetries?: number;
}

/** Tokens of a prompt as a provider would see it: both messages plus the chat framing. */
export async function countPromptTokens(
  prompt: SummaryPrompt,
  countTokens: CountTokensAsync,
  signal?: AbortSignal,
): Promise<number> {
  const options = { signal };
  const [system, user] = await Promise.all([
    countTokens(prompt.system, options),
    countTokens(prompt.user, options),
  ]);
  return system + user + CHAT_FRAMING_TOKENS;
}

/**
 * A bound no count of the prompt exceeds: its UTF-8 bytes plus the chat framing. Every token of a
 * byte-level BPE (o200k, cl100k) covers at least one byte, and the character estimates count
 * fewer tokens than characters; so a prompt whose bound fits a budget fits it without being
 * tokenized. (Counting a 300-message prompt exactly is a third of a compaction's CPU.)
 */
export function promptTokenBound(prompt: SummaryPrompt): number {
  return Buffer.byteLength(prompt.system) + Buffer.byteLength(prompt.user) + CHAT_FRAMING_TOKENS;
}

/**
 * Refuses, before sending, a prompt that cannot fit `contextWindow` with `maxOutputTokens` of
 * output (what OpenAI and vLLM check). No-op when the window is unknown, and no count when the
 * prompt's {@link promptTokenBound} already fits.
 */
export async function assertPromptFits(
  prompt: SummaryPrompt,
  limits: { model: string; maxOutputTokens: number; contextWindow?: number | null | undefined },
  countTokens: CountTokensAsync,
): Promise<void> {
  if (limits.contextWindow == null) return;
  if (promptTokenBound(prompt) + limits.maxOutputTokens <= limits.contextWindow) return;
  const promptTokens = await countPromptTokens(prompt, countTokens);
  if (promptTokens + limits.maxOutputTokens > limits.contextWindow) {
    throw new LlmOverflowError(
      `prompt of ${promptTokens} tokens + ${limits.maxOutputTokens} output tokens exceeds ` +
        `the ${limits.contextWindow}-token window of ${limits.model}; not sent`,
      null,
    );
  }
}

/**
 * One summary from one prompt: call, validate, retry on invalid output, then give up with
 * `InvalidSummaryError` so the workflow can fall back to truncation. A summary cut off at the
 * output limit is invalid (its last sections, Next Steps and Critical Context, are the ones
 * lost): it is retried once, asking for a complete shorter summary, with a larger budget when
 * `maxOutputTokensLimit` and the window allow; a second cut-off is rejected as `cut-off`.
 * Provider errors are not retried here: they are thrown classified, and the job queue decides.
 */
export async function summarizePrompt(
  deps: SummarizeDeps,
  request: SummarizeRequest,
): Promise<SummaryResult> {
  await assertPromptFits(request.prompt, request, deps.countTokens);
  const attempts = 1 + Math.max(0, deps.invalidOutputRetries ?? 1);
  let usage = ZERO_USAGE;
  let costUsd: number | null = 0;
  let lastReason = 'no attempt made';
  let prompt = request.prompt;
  let maxOutputTokens = request.maxOutputTokens;
  let cutOff = false;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    let answer: CompletionResult;
    try {
      answer = await deps.completer.complete({
        model: request.model,
        system: prompt.system,
        user: prompt.user,
        maxOutputTokens,
        signal: request.signal,
        timeoutMs: request.timeoutMs,
      });
    } catch (error) {
      // Earlier invalid attempts were answered, and paid for.
      throw error instanceof LlmError ? withSpent(error, { usage, costUsd, calls: attempt - 1 }) : error;
    }
    usage = addUsage(usage, answer.usage);
    costUsd = addCost(costUsd, answer.costUsd);
    // The request offers no tools, so a tool call means the model mistook its role.
    const verdict =
      answer.toolCallCount > 0 || answer.finishReason === 'tool_calls'
        ? ({ ok: false, reason: 'calls-tool' } as const)
        : answer.finishReason === 'length'
          ? ({ ok: false, reason: 'cut-off' } as const)
          : validateSummaryOutput(answer.text);
    if (verdict.ok) {
      return {
        text: verdict.text,
        usage,
        costUsd,
        model: answer.model,
        calls: attempt,
        chunks: 1,
        truncated: false,
      };
    }
    lastReason = verdict.reason;
    if (verdict.reason === 'cut-off') {
      // Once: the same request cut off twice will be cut off again.
      if (cutOff || request.cutOffRetry === false) throw invalid(lastReason, attempt, usage, costUsd);
      cutOff = true;
      const retry = await cutOffRetry(deps, request, maxOutputTokens);
      // No room for even the same budget next to the longer prompt: nothing left to try.
      if (retry === null) throw invalid(lastReason, attempt, usage, costUsd);
      ({ prompt, maxOutputTokens } = retry);
    }
  }
  throw invalid(lastReason, attempts, usage, costUsd);
}

/**
 * The retry after a cut-off answer: the prompt asks for a complete, shorter summary, with twice
 * the budget where `maxOutputTokensLimit` and a known window allow (at least the same budget).
 * `null` when the longer prompt with that budget would not fit the window.
 */
async function cutOffRetry(
  deps: SummarizeDeps,
  request: SummarizeRequest,
  budget: number,
): Promise<{ prompt: SummaryPrompt; maxOutputTokens: number } | null> {
  const limit = Math.max(request.maxOutputTokensLimit ?? budget, budget);
  const withNote = (tokens: number): SummaryPrompt => ({
    ...request.prompt,
    user: `${request.prompt.user}\n\n${summaryCutOffNote(tokens)}`,
  });
  let maxOutputTokens = Math.min(limit, 2 * budget);
  if (request.contextWindow != null) {
    const promptTokens = await countPromptTokens(withNote(maxOutputTokens), deps.countTokens, request.signal);
    maxOutputTokens = Math.min(maxOutputTokens, request.contextWindow - promptTokens);
    if (maxOutputTokens < budget) return null;
  }
  return { prompt: withNote(maxOutputTokens), maxOutputTokens };
}

function invalid(
  reason: string,
  attempts: number,
  usage: LlmUsage,
  costUsd: number | null,
): InvalidSummaryError {
  return new InvalidSummaryError(reason, attempts, { usage, costUsd });
}
